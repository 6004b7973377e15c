package ui

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/ui/backend"
)

func TestSyncShowsPlanThenSyncs(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.keys("G", "s") // api-prod, not frozen
	h.wantScreen("Sync api-prod? (2 objects)", "apply    Deployment/prod/render  /spec/replicas", "prune    ConfigMap/prod/render-old")
	h.wantCalls()
	h.keys("enter")
	h.wantCalls("sync api-prod")
	if h.m.Status() != "synced api-prod" {
		t.Errorf("status = %q", h.m.Status())
	}
}

func TestSyncCancelled(t *testing.T) {
	for _, k := range []string{"esc", "n"} {
		h := newHarness(t, newFake(), testConfig())
		h.keys("G", "s", k)
		h.wantCalls()
		if h.m.dialog != nil {
			t.Errorf("%s left the dialog open", k)
		}
	}
}

func TestSyncFrozenAsksTwice(t *testing.T) {
	tests := []struct {
		name  string
		keys  []string
		calls []string
	}{
		{"confirmed twice", []string{"enter", "y"}, []string{"sync render-prod"}},
		{"second answer no", []string{"enter", "esc"}, nil},
		{"first answer no", []string{"esc"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, newFake(), testConfig())
			h.keys("j", "s", "enter")
			h.wantScreen("Sync FROZEN app render-prod anyway?", "render-prod is FROZEN by Lao Li <lao.li@example.com> (until 2026-12-02 19:00):", "INC-1234 render workers 6->12")
			h.keys(tt.keys[1:]...)
			h.wantCalls(tt.calls...)
			if tt.calls != nil {
				f := h.be.lastSync.Freeze
				if f == nil || f.Reason != "INC-1234 render workers 6->12" || f.By != "Lao Li <lao.li@example.com>" {
					t.Fatalf("the sync must carry the freeze the person confirmed, got %+v", f)
				}
			}
		})
	}
}

// TestSyncLargePruneAsksAgain: a plan whose prune needs confirming asks a
// second question; only yes sends the confirmation.
func TestSyncLargePruneAsksAgain(t *testing.T) {
	for _, answer := range []string{"y", "esc"} {
		be := newFake()
		be.plan.PruneRefused = &engine.PruneRefusedError{App: "api-prod", Count: 2, Total: 2}
		h := newHarness(t, be, testConfig())
		h.keys("G", "s", "enter")
		h.wantScreen("Prune most of api-prod?", "it would delete 2 of the 2 objects")
		h.keys(answer)
		if answer == "esc" {
			h.wantCalls()
			continue
		}
		h.wantCalls("sync api-prod")
		if !be.lastSync.ConfirmPrune || be.lastSync.Freeze != nil {
			t.Fatalf("sync request = %+v, want ConfirmPrune and no freeze", be.lastSync)
		}
	}
}

func TestSyncFromResourceViews(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.keys("j", "enter", "j", "enter", "s", "enter", "enter")
	h.wantCalls("sync render-prod")
}

func TestSyncError(t *testing.T) {
	be := newFake()
	be.fail = errBoom
	h := newHarness(t, be, testConfig())
	h.keys("G", "s")
	h.wantScreen("! sync api-prod: planning failed: git push: remote rejected")
	if h.m.dialog != nil {
		t.Error("a failed plan opened a dialog")
	}
}

func TestFreeze(t *testing.T) {
	tests := []struct {
		name    string
		keys    []string // after f
		text    []string // typed into reason, then duration
		calls   []string
		problem string
	}{
		{"reason and duration", nil, []string{"INC-9 hot fix", "4h"}, []string{`freeze api-prod reason="INC-9 hot fix" for=4h0m0s`}, ""},
		{"no duration", nil, []string{"INC-9", ""}, []string{`freeze api-prod reason="INC-9" for=0s`}, ""},
		{"reason required", nil, []string{"", ""}, nil, "reason is required"},
		{"bad duration", nil, []string{"INC-9", "soon"}, nil, `duration "soon": use a Go duration`},
		{"marked apps", []string{"space", "space"}, []string{"INC-9", ""}, []string{`freeze batch-staging,render-prod reason="INC-9" for=0s`}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, newFake(), testConfig())
			if tt.keys != nil {
				h.keys("g").keys(tt.keys...)
			} else {
				h.keys("G")
			}
			h.keys("f")
			h.wantScreen("Freeze", "reason (required):", "for:")
			h.typeText(tt.text[0]).keys("tab").typeText(tt.text[1]).keys("enter")
			h.wantCalls(tt.calls...)
			if tt.problem != "" {
				h.wantScreen(tt.problem)
				if h.m.dialog == nil {
					t.Error("the dialog closed on a problem")
				}
				return
			}
			if h.m.dialog != nil {
				t.Error("dialog still open")
			}
			h.wantScreen("committed f00dfee and pushed")
		})
	}
}

func TestFreezeFailureKeepsTheWordsInTheStatus(t *testing.T) {
	be := newFake()
	be.fail = errBoom
	h := newHarness(t, be, testConfig())
	h.keys("G", "f").typeText("INC-9").keys("enter")
	h.wantScreen("! freeze api-prod failed: git push: remote rejected")
}

func TestUnfreeze(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.keys("G", "F")
	h.wantScreen("unfreeze: the selected app is not frozen")
	h.keys("g", "j", "F")
	h.wantScreen("Unfreeze 1 app?", "render-prod: frozen by Lao Li <lao.li@example.com>: INC-1234", "Self-heal will put back:", "Deployment/prod/render /spec/replicas: 12 → 6")
	h.keys("enter")
	h.wantScreen("reason is required")
	h.typeText("incident over").keys("enter")
	h.wantCalls(`unfreeze render-prod reason="incident over"`)
	if f := h.be.lastSeen["render-prod"]; f == nil || f.Reason != "INC-1234 render workers 6->12" {
		t.Fatalf("the unfreeze must carry the freeze the dialog showed, got %+v", h.be.lastSeen)
	}
}

func TestIgnoreFromOwnership(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.keys("j", "enter", "j", "o", "i")
	h.wantScreen("Ignore /spec/replicas?", "App render-prod will stop applying /spec/replicas on Deployment/prod/render.")
	h.typeText("HPA owns replicas").keys("enter")
	h.wantCalls(`ignore render-prod Deployment/render [/spec/replicas] reason="HPA owns replicas"`)
	h.wantScreen("! ignore /spec/replicas in render-prod: committed 1bad1de (not pushed yet: remote unreachable; retried on next fetch)")
}

func TestIgnoreOnStructuralLine(t *testing.T) {
	be := newFake()
	d := be.details[deployRef]
	d.Live = append(d.Live, deployDetail().Live[0])
	d.Live[len(d.Live)-1].Path = ""
	be.details[deployRef] = d
	h := newHarness(t, be, testConfig())
	h.keys("j", "enter", "j", "o", "G", "i")
	h.wantScreen("this line is not a field")
	if h.m.dialog != nil {
		t.Error("dialog opened on a structural line")
	}
}

func TestIgnoreFromDiff(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.keys("j", "enter", "j", "enter", "N", "n", "n", "i")
	h.wantScreen("Ignore /spec/replicas?")
	h.typeText("HPA").keys("enter")
	h.wantCalls(`ignore render-prod Deployment/render [/spec/replicas] reason="HPA"`)
}

func TestRevert(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.keys("j", "h", "j", "r")
	h.wantScreen("Revert aaaaaaa render: bump image to 2.4?", "-  image: render:2.4", "+  image: render:2.3")
	h.keys("enter")
	h.wantScreen("reason is required")
	h.typeText("2.4 leaks memory").keys("enter")
	h.wantCalls(`revert aaaaaaa111 reason="2.4 leaks memory"`)
	h.wantScreen("revert aaaaaaa: committed 5eed and pushed")
	n := 0
	for _, c := range h.be.Calls() {
		if c == "history render-prod" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("history loaded %d times, want 2 (again after the revert)", n)
	}
}

func TestRevertPreviewError(t *testing.T) {
	be := newFake()
	h := newHarness(t, be, testConfig())
	h.keys("j", "h")
	be.fail = errBoom
	h.keys("r")
	h.wantScreen("! revert bbbbbbb: git push: remote rejected")
	if h.m.dialog != nil {
		t.Error("dialog opened after a failed preview")
	}
}

func TestReadonlyRefusesEveryMutatingKey(t *testing.T) {
	tests := []struct {
		name string
		keys []string
		want string
	}{
		{"sync", []string{"s"}, "read-only: sync is disabled"},
		{"freeze", []string{"f"}, "read-only: freeze is disabled"},
		{"unfreeze", []string{"j", "F"}, "read-only: unfreeze is disabled"},
		{"ignore in diff", []string{"j", "enter", "j", "enter", "i"}, "read-only: ignore is disabled"},
		{"ignore in owners", []string{"j", "enter", "j", "o", "i"}, "read-only: ignore is disabled"},
		{"revert", []string{"j", "h", "r"}, "read-only: revert is disabled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Readonly = true
			h := newHarness(t, newFake(), cfg)
			h.keys(tt.keys...)
			h.wantScreen(tt.want, "READ-ONLY")
			if h.m.dialog != nil {
				t.Error("a dialog opened in read-only mode")
			}
			h.wantCalls()
		})
	}
}

func TestRefresh(t *testing.T) {
	be := newFake()
	h := newHarness(t, be, testConfig())
	be.apps = be.apps[:1]
	h.keys("ctrl+r")
	if be.refreshed != 1 || len(appNames(h.m)) != 1 {
		t.Errorf("refreshed=%d apps=%v", be.refreshed, appNames(h.m))
	}
	if h.m.busy != 0 {
		t.Errorf("busy = %d after the refresh finished", h.m.busy)
	}
}

func TestHistoryEnterShowsTheCommit(t *testing.T) {
	be := newFake()
	be.history[1].Body = "INC-1234 render workers 6->12\n\nKdrift-Action: freeze\nKdrift-App: render-prod"
	h := newHarness(t, be, testConfig())
	h.keys("j", "h", "enter")
	h.wantScreen("bbbbbbb freeze(render-prod): INC-1234", "Date:   2026-12-02 15:00:00 UTC", "Kdrift-Action: freeze")
	h.keys("esc")
	if h.m.dialog != nil {
		t.Error("esc did not close the commit")
	}
}

func TestPasteIntoTheReason(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.keys("G", "f")
	h.send(tea.PasteMsg{Content: "INC-4242 pasted"})
	h.keys("enter")
	h.wantCalls(`freeze api-prod reason="INC-4242 pasted" for=0s`)
}

// TestPasteIntoTheFilter: a paste reaches the focused view through its
// update, and only while it takes text.
func TestPasteIntoTheFilter(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.send(tea.PasteMsg{Content: "render"})
	if av := h.m.stack[0].(*appsView); av.filter != "" {
		t.Fatalf("a paste outside the filter prompt set the filter to %q", av.filter)
	}
	h.keys("/")
	h.send(tea.PasteMsg{Content: "render"})
	if av := h.m.stack[0].(*appsView); av.filter != "render" || len(av.rows) != 1 {
		t.Fatalf("filter = %q with %d rows, want the pasted text and one row", av.filter, len(av.rows))
	}
}

// TestFreezeSpendsTheMarks: the apps view clears its own marks once the
// freeze they chose is committed, and keeps them when it failed.
func TestFreezeSpendsTheMarks(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.keys("g", "space", "space")
	av := h.m.stack[0].(*appsView)
	h.send(FreezeCommittedMsg{Apps: []string{"x"}, Err: errors.New("push refused")})
	if len(av.marked) != 2 {
		t.Fatalf("a failed freeze cleared the marks: %v", av.marked)
	}
	h.send(FreezeCommittedMsg{Apps: []string{"x"}, Result: backend.CommitResult{Hash: "f00dfee", Pushed: true}})
	if len(av.marked) != 0 {
		t.Fatalf("marks kept after the freeze: %v", av.marked)
	}
}

// TestNamedByType: an error that names its object (by type, not by its
// text) is shown as is; any other error gets the object in front.
func TestNamedByType(t *testing.T) {
	typed := &fakeObjectError{ref: deployRef, msg: "Deployment/prod/render: get failed: timeout"}
	tests := []struct {
		err  error
		want string
	}{
		{typed, "Deployment/prod/render: get failed: timeout"},
		{fmt.Errorf("reading: %w", errors.New("cluster prod unreachable")), "Deployment/prod/render: reading: cluster prod unreachable"},
		{&fakeObjectError{ref: cmRef, msg: "ConfigMap/prod/render-old: gone"}, "Deployment/prod/render: ConfigMap/prod/render-old: gone"},
	}
	for _, tt := range tests {
		if got := named(deployRef, tt.err); got != tt.want {
			t.Errorf("named(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// TestSyncOwnedAsksNamingTheOwner: an app Argo CD owns is synced only
// after a second answer that names the owner.
func TestSyncOwnedAsksNamingTheOwner(t *testing.T) {
	for _, answer := range []string{"y", "esc"} {
		be := newFake()
		for i := range be.apps {
			if be.apps[i].Name == "api-prod" {
				be.apps[i].Owner, be.apps[i].OwnerFile = "Argo CD Application argocd/api-prod", "argocd/api.yaml"
			}
		}
		h := newHarness(t, be, testConfig())
		h.keys("G", "s", "enter")
		h.wantScreen("owned by Argo CD Application argocd/api-prod?", "api-prod is owned by Argo CD Application argocd/api-prod (argocd/api.yaml), which heals it.")
		h.wantCalls()
		h.keys(answer)
		if answer == "esc" {
			h.wantCalls()
			continue
		}
		h.wantCalls("sync api-prod")
		if !be.lastSync.Owned {
			t.Fatalf("sync request = %+v, want Owned", be.lastSync)
		}
	}
}

// TestChannelFreezeTheOwnerStillHeals: a freeze on the incident channel
// whose owner's live declaration could not be paused opens a dialog with
// why and the command that does it; one that paused it says so on the
// status line.
func TestChannelFreezeTheOwnerStillHeals(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.send(FreezeCommittedMsg{Apps: []string{"shop"}, Result: backend.CommitResult{Hash: "f00dfee", Pushed: true, Channel: "kdrift/freezes",
		OwnerProblems: []string{"shop: Argo CD was not told to stop healing shop: forbidden", "  by hand: kubectl patch application shop -n argocd --type merge -p '{}'"}}})
	if h.m.dialog == nil {
		t.Fatal("no dialog for a freeze the owner does not honour")
	}
	if s := h.screen(); !strings.Contains(s, "Still healing") || !strings.Contains(s, "kubectl patch application shop") {
		t.Fatalf("the dialog does not say the owner still heals, with the command:\n%s", s)
	}
	h2 := newHarness(t, newFake(), testConfig())
	h2.send(FreezeCommittedMsg{Apps: []string{"shop"}, Result: backend.CommitResult{Hash: "f00dfee", Pushed: true, Channel: "kdrift/freezes",
		Owners: []string{"shop: wrote kdrift's freeze on the live Application argocd/shop"}}})
	if h2.m.dialog != nil || !strings.Contains(h2.m.Status(), "wrote kdrift's freeze on the live Application argocd/shop") {
		t.Fatalf("dialog %v, status %q", h2.m.dialog != nil, h2.m.Status())
	}
}

// TestFreezeOfALiveOnlyAppIsRefusedBeforeTheReason: an app whose
// declaration lives only in the cluster (no file to commit to) is refused
// at the key, saying why, before any reason is asked.
func TestFreezeOfALiveOnlyAppIsRefusedBeforeTheReason(t *testing.T) {
	be := newFake()
	for i := range be.apps {
		if be.apps[i].Name == "api-prod" {
			be.apps[i].Owner = "Flux Kustomization flux-system/api-prod"
			be.apps[i].OwnerFile = "live in the cluster of context prod (not in Git)"
		}
	}
	h := newHarness(t, be, testConfig())
	h.keys("G", "f")
	if h.m.dialog != nil {
		t.Fatal("a dialog asks a reason for a freeze that cannot be committed")
	}
	h.wantScreen("freeze: api-prod cannot take it from here: its declaration is live in the cluster of context prod (not in Git)")
	h.wantCalls()
}
