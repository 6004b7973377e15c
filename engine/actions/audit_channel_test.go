package actions

import (
	"strings"
	"testing"
)

// TestAuditListsChannelRecords: audit lists the incident channel's freeze
// records with their commit and state, and a channel commit that is not a
// freeze record as refused, naming it and what it changed.
func TestAuditListsChannelRecords(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	protectMain(t, remote)
	dir := cloneOf(t, remote)
	clock := newClock()
	r := openRepo(t, dir, clock)
	res := freezeOne(t, r, "render-prod", "INC-77 keep manual scale")
	if res.Channel != "kdrift/freezes" {
		t.Fatalf("result %+v", res)
	}
	entries, err := r.Audit(t.Context(), AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 || entries[0].Channel != "kdrift/freezes" || entries[0].Action != ActionFreeze ||
		entries[0].Commit != res.ChannelCommit || entries[0].FreezeState["render-prod"] != FreezeActive {
		t.Fatalf("want the channel's freeze first, active, with its commit %s; got %+v", res.ChannelCommit, entries)
	}
	for _, e := range entries[1:] {
		if e.Channel != "" {
			t.Fatalf("a branch entry marked as the channel's: %+v", e)
		}
	}

	// Someone pushes a manifest change to the channel.
	other := cloneOf(t, remote)
	gitRun(t, other, "checkout", "-q", "-b", "sneak", "origin/kdrift/freezes")
	writeFile(t, other, "deploy/prod/deployment.yaml", "kind: Deployment\nmetadata:\n  name: render\nspec:\n  replicas: 60\n")
	gitRun(t, other, "commit", "-qam", "more replicas")
	bad := gitRun(t, other, "rev-parse", "HEAD")
	gitRun(t, other, "push", "-q", "origin", "sneak:kdrift/freezes")
	entries, err = r.Audit(t.Context(), AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var refused *AuditEntry
	for i := range entries {
		if entries[i].Action == ActionChannelRefused {
			refused = &entries[i]
		}
	}
	if refused == nil || refused.Commit != bad || !strings.Contains(refused.Reason, "changes deploy/prod/deployment.yaml") || refused.Channel != "kdrift/freezes" {
		t.Fatalf("want the refused commit %s with what it changed; got %+v", bad, entries)
	}
	held := false
	for _, e := range entries {
		if e.Channel != "" && e.Action == ActionFreeze && e.Commit == res.ChannelCommit {
			held = e.FreezeState["render-prod"] == FreezeActive
		}
	}
	if !held {
		t.Fatalf("the valid record before the refused commit still holds: %+v", entries)
	}
}
