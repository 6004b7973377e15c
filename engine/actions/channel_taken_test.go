package actions

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// TestChannelUnfreezeAfterARefusedCommitIsTaken: main protected, a freeze
// on the incident channel, then someone pushes a channel commit that
// edits a manifest; the unfreeze after it is in force (readers skip the
// refused commit and take the record), and the summary names the commit
// the readers skip.
func TestChannelUnfreezeAfterARefusedCommitIsTaken(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	protectMain(t, remote)
	dir := cloneOf(t, remote)
	r := openRepo(t, dir, newClock())
	if res := freezeOne(t, r, "render-prod", "INC-77 keep manual scale"); res.Channel != "kdrift/freezes" {
		t.Fatalf("freeze %+v", res)
	}
	other := cloneOf(t, remote)
	gitRun(t, other, "checkout", "-q", "-b", "sneak", "origin/kdrift/freezes")
	writeFile(t, other, "deploy/prod/deployment.yaml", "kind: Deployment\nmetadata:\n  name: render\nspec:\n  replicas: 1\n")
	gitRun(t, other, "commit", "-q", "-am", "scale render down")
	bad := gitRun(t, other, "rev-parse", "HEAD")
	gitRun(t, other, "push", "-q", "origin", "sneak:kdrift/freezes")

	res, err := r.Unfreeze(t.Context(), UnfreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: "INC-77 over"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Channel != "kdrift/freezes" || res.NotTaken != "" || len(res.ChannelSkipped) != 1 || !strings.Contains(res.ChannelSkipped[0], bad[:7]) {
		t.Fatalf("result %+v", res)
	}
	if s := res.Summary(); !strings.Contains(s, "where it is in force") || !strings.Contains(s, bad[:7]) {
		t.Fatalf("summary %q", s)
	}
	// The audit (the same reader) lists the refused commit and no freeze
	// of render-prod left in force on the channel.
	entries, err := r.Audit(t.Context(), AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, e := range entries {
		if e.Action == ActionChannelRefused && e.Commit == bad {
			refused++
		}
	}
	if refused != 1 {
		t.Fatalf("the audit lists the refused commit %d times: %+v", refused, entries)
	}
}

// TestChannelRecordNobodyReadsIsInForceNowhere: a record pushed to a
// channel longer than readers read is not "in force": the result says
// why and the summary says in force nowhere.
func TestChannelRecordNobodyReadsIsInForceNowhere(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	protectMain(t, remote)
	// A channel of 500 empty commits, made by one fast-import stream.
	head := gitRun(t, remote, "rev-parse", "main")
	var b strings.Builder
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&b, "commit refs/heads/kdrift/freezes\ncommitter Eve <eve@example.com> %d +0000\ndata 5\nnote\n", 1700000000+i)
		if i == 0 {
			fmt.Fprintf(&b, "from %s\n", head)
		}
		b.WriteString("\n")
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir, cmd.Stdin = remote, strings.NewReader(b.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fast-import: %v\n%s", err, out)
	}
	r := openRepo(t, cloneOf(t, remote), newClock())
	res := freezeOne(t, r, "render-prod", "INC-77 keep manual scale")
	if res.Channel != "kdrift/freezes" || !strings.Contains(res.NotTaken, "more than 500 commits") {
		t.Fatalf("result %+v", res)
	}
	if s := res.Summary(); strings.Contains(s, "where it is in force") || !strings.Contains(s, "in force nowhere") {
		t.Fatalf("summary %q", s)
	}
}
