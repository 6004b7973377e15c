package actions

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestAuditAndHistoryReadPastAHugeCommit: a commit whose message is 128
// MiB (with a freeze's trailers after it) is an "unread" audit entry
// giving both sizes, not read whole; the freeze before it is still read,
// by Audit and by History.
func TestAuditAndHistoryReadPastAHugeCommit(t *testing.T) {
	const big = 128 << 20
	isolate(t)
	remote := newRemote(t)
	dir := cloneOf(t, remote)
	clock := newClock()
	r := openRepo(t, dir, clock)
	ctx := context.Background()
	freezeOne(t, r, "render-prod", "INC-1 before the huge commit")
	msg := filepath.Join(t.TempDir(), "msg")
	body := "freeze(render-prod): huge\n\n" + strings.Repeat("x", big) + "\n\nKdrift-Action: freeze\nKdrift-App: render-prod\n"
	if err := os.WriteFile(msg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	body = ""
	huge := gitRun(t, dir, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-F", msg)
	gitRun(t, dir, "update-ref", "HEAD", huge)

	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	entries, err := r.Audit(ctx, AuditOptions{})
	runtime.ReadMemStats(&b)
	if err != nil {
		t.Fatal(err)
	}
	if n := b.TotalAlloc - a.TotalAlloc; n > 32<<20 {
		t.Errorf("audit allocated %d bytes past a commit of %d", n, big)
	}
	if len(entries) < 2 || entries[0].Action != ActionUnread || entries[0].Commit != huge ||
		!strings.Contains(entries[0].Reason, "bytes, more than the 1048576 kdrift reads") {
		t.Fatalf("entries = %+v, want %s unread with both sizes first", entries, huge)
	}
	if entries[1].Action != "freeze" || entries[1].Reason != "INC-1 before the huge commit" {
		t.Errorf("the freeze before the huge commit = %+v", entries[1])
	}
	hist, err := History(ctx, r, "render-prod", 0)
	if err != nil {
		t.Fatal(err)
	}
	// The huge commit changes no file and its trailers are not read: it
	// is not the app's; the freeze before it is.
	if len(hist) < 1 || hist[0].Action != "freeze" || hist[0].Reason != "INC-1 before the huge commit" {
		t.Errorf("history = %+v, want the freeze first", hist)
	}
}
