package actions

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestDivergedPushPastHugeCommitIsBounded: the local branch holds a
// commit with a 64 MiB message (its trailers say kdrift made it) under a
// freeze, and upstream moved on. Push finds where they diverged and
// walks back to it reading that commit's header only: the commit is not
// taken for kdrift's, so the branch stays local. Measured is integrate,
// which settles it; go-git's fetch before it decodes local commits whole
// when it lists what it has, which this does not cover.
func TestDivergedPushPastHugeCommitIsBounded(t *testing.T) {
	const big = 64 << 20
	isolate(t)
	remote := newRemote(t)
	dir := cloneOf(t, remote)
	msg := filepath.Join(t.TempDir(), "msg")
	body := "freeze(web): big\n\n" + strings.Repeat("x", big) + "\n\nKdrift-Action: freeze\nKdrift-App: web\n"
	if err := os.WriteFile(msg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	body = ""
	huge := gitRun(t, dir, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-F", msg)
	gitRun(t, dir, "update-ref", "HEAD", huge)
	gitRun(t, dir, "remote", "set-url", "origin", filepath.Join(t.TempDir(), "missing.git"))
	r := openRepo(t, dir, newClock())
	if res := freezeOne(t, r, "render-prod", "INC-7 on top"); res.Pushed {
		t.Fatalf("pushed to a missing remote: %+v", res)
	}
	other := openRepo(t, cloneOf(t, remote), newClock())
	freezeOne(t, other, "web-staging", "INC-7 upstream")
	gitRun(t, dir, "remote", "set-url", "origin", remote)

	pr, err := r.Push(context.Background())
	if err != nil || pr.Pushed || !strings.Contains(pr.PushError, "diverged") || !strings.Contains(pr.PushError, huge[:12]) {
		t.Fatalf("push = %+v, %v; want it refused at the huge commit %s", pr, err, huge[:12])
	}
	keep := plumbing.NewHash(gitRun(t, dir, "rev-parse", "HEAD"))
	upstream := plumbing.NewHash(gitRun(t, remote, "rev-parse", "main"))
	var blocked error
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	_, blocked, err = r.integrate(keep, upstream)
	runtime.ReadMemStats(&b)
	if err != nil || blocked == nil || !strings.Contains(blocked.Error(), huge[:12]) {
		t.Fatalf("integrate = %v, %v; want it blocked at the huge commit %s", blocked, err, huge[:12])
	}
	if n := b.TotalAlloc - a.TotalAlloc; n > 8<<20 {
		t.Errorf("settling a branch diverged past a %d-byte commit allocated %d bytes", big, n)
	}
}
