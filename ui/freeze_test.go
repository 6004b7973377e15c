package ui

import (
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
)

// fieldFrozenFake is the fake with render-prod's /spec/replicas under a
// field freeze (and no app freeze).
func fieldFrozenFake() *fakeBackend {
	be := newFake()
	fr := app.ResourceFreeze{Resource: app.ResourceRef{Group: "apps", Kind: "Deployment", Namespace: "prod", Name: "render"}, Fields: []string{"/spec/replicas"},
		Reason: "INC-1002 scaled to 12 by hand", By: "Lao Li <lao.li@example.com>", At: *at(15, 30), Until: at(19, 0)}
	a := &be.apps[1]
	a.Freeze, a.SelfHeal = nil, status.SelfHealOn
	a.Freezes = []app.ResourceFreeze{fr}
	a.Resources[0].Fields[0].Frozen = fr.Mark()
	d := be.details[deployRef]
	d.Resource = a.Resources[0]
	be.details[deployRef] = d
	return be
}

func TestFreezeResourceFromAppView(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.keys("j", "enter", "j", "f") // render-prod, Deployment/prod/render
	h.wantScreen("Freeze Deployment.apps/prod/render?", "Self-heal and prune leave the whole object as it is live")
	h.keys("enter")
	h.wantScreen("reason is required")
	h.typeText("INC-9 keep the hotfix").keys("tab").typeText("2h").keys("enter")
	h.wantCalls(`freeze render-prod Deployment.apps/prod/render [] reason="INC-9 keep the hotfix" for=2h0m0s`)
}

func TestFreezeFieldFromDiffView(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.keys("j", "enter", "j", "enter", "n") // the diff opens on the annotation; n: /spec/replicas
	h.keys("f")
	h.wantScreen("Freeze Deployment.apps/prod/render [/spec/replicas]?", "Self-heal leaves these fields as they are live")
	h.typeText("INC-1002 scaled by hand").keys("enter")
	h.wantCalls(`freeze render-prod Deployment.apps/prod/render [/spec/replicas] reason="INC-1002 scaled by hand" for=0s`)
}

// TestFrozenFieldShownAndUnfrozen: a field freeze shows in the apps view
// (❄1 next to self-heal), on the resource row, in the diff's footer with
// who, why and until when; F on the frozen field shows what self-heal will
// put back before it asks the reason, and lifts that field only.
func TestFrozenFieldShownAndUnfrozen(t *testing.T) {
	h := newHarness(t, fieldFrozenFake(), testConfig())
	h.keys("j")
	h.wantScreen("on ❄1", "❄ render-prod: Deployment.apps/prod/render /spec/replicas frozen by Lao Li <lao.li@example.com>: INC-1002")
	h.keys("enter", "j")
	h.wantScreen("❄1 frozen", "❄ /spec/replicas frozen by Lao Li")
	h.keys("enter", "n")
	h.wantScreen("❄ frozen by Lao Li <lao.li@example.com>: INC-1002 scaled to 12 by hand (until 19:00, in 3h)")
	h.keys("F")
	h.wantScreen("Unfreeze Deployment.apps/prod/render [/spec/replicas]?", "Self-heal will put back:", "Deployment/prod/render /spec/replicas: 12 → 6")
	h.typeText("INC-1002 fixed").keys("enter")
	h.wantCalls(`unfreeze render-prod Deployment.apps/prod/render [/spec/replicas] reason="INC-1002 fixed" seen=true`)
}

// TestSyncUnderFieldFreezeAsksToOverwrite: a plan that leaves frozen parts
// says so, and a second question decides: empty syncs the rest,
// "overwrite" puts Git back over them too.
func TestSyncUnderFieldFreezeAsksToOverwrite(t *testing.T) {
	for _, answer := range []string{"", "overwrite"} {
		be := newFake()
		be.plan.LeftFrozen = []engine.FrozenPart{{Ref: deployRef, Fields: []string{"/spec/replicas"}, Freeze: &app.Freeze{Reason: "INC-1002", By: "Lao Li <lao.li@example.com>", At: *at(15, 0)}}}
		h := newHarness(t, be, testConfig())
		h.keys("G", "s")
		h.wantScreen("❄ left  Deployment/prod/render  /spec/replicas (frozen by Lao Li <lao.li@example.com>: INC-1002")
		h.keys("enter")
		h.wantScreen("Sync api-prod: leave the frozen parts?")
		h.typeText(answer).keys("enter")
		h.wantCalls("sync api-prod")
		if be.lastSync.OverwriteFrozen != (answer == "overwrite") {
			t.Fatalf("answer %q: request %+v", answer, be.lastSync)
		}
	}
}

// TestFreezeExpiringShown: the engine's FreezeExpiring reaches the status
// line with the end and what resuming puts back; the apps view marks a
// freeze ending within fifteen minutes.
func TestFreezeExpiringShown(t *testing.T) {
	be := fieldFrozenFake()
	be.apps[1].Freezes[0].Until = at(16, 10)
	h := newHarness(t, be, testConfig())
	h.wantScreen("on ❄1 ⏳")
	fr := be.apps[1].Freezes[0]
	h.send(FreezeExpiringMsg{Event: status.FreezeExpiring{Base: status.Base{App: "render-prod", Time: testNow}, Resource: &deployRef, Fields: fr.Fields, Freeze: *fr.Mark(),
		Changes: []string{"Deployment/prod/render /spec/replicas: 12 → 6"}}})
	if got := h.m.Status(); got != "❄ the freeze of Deployment/prod/render /spec/replicas in render-prod ends at 16:10 (in 10m); resuming puts back Deployment/prod/render /spec/replicas: 12 → 6 (to keep it, freeze it again with a new end)" {
		t.Fatalf("status = %q", got)
	}
}

// TestActivityLog: heals, fights and freezes land in the apps view's
// activity log with their times and apps, newest last; `a` hides and
// shows it, and it never takes the keys of the table.
func TestActivityLog(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.send(HealedMsg{Event: status.Healed{Base: status.Base{App: "web-staging", Time: *at(15, 58)}, Ref: deployRef, Fields: []string{"/spec/replicas"}}})
	h.send(FightMsg{Event: status.Fight{Base: status.Base{App: "api-prod", Time: *at(15, 59)}, Ref: svcRef, Field: "/metadata/annotations/lb", Manager: "cloud-controller", Rewrites: 3}})
	h.wantScreen("ACTIVITY (a hides)", "15:58:00 web-staging  healed Deployment/prod/render /spec/replicas", "15:59:00 api-prod  fight: cloud-controller rewrote /metadata/annotations/lb on Service/prod/render 3×")
	h.keys("j", "f").typeText("INC-5").keys("enter")
	h.wantScreen("16:00:00 freeze render-prod (committed f00dfee")
	h.keys("a")
	if s := h.screen(); strings.Contains(s, "ACTIVITY") {
		t.Fatalf("a did not hide the log:\n%s", s)
	}
	h.keys("a", "j")
	h.wantScreen("ACTIVITY (a hides)")
	if v := h.m.top().(*appsView); v.cursor != 2 {
		t.Fatalf("the cursor moved to %d: the log must not take the table's keys", v.cursor)
	}
}

// TestActivityLogAt80x24: at the smallest supported size the log takes
// at most four rows and every app of the table stays in sight.
func TestActivityLogAt80x24(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.send(windowSize(80, 24))
	for i := range 5 {
		h.send(PrunedMsg{Event: status.Pruned{Base: status.Base{App: "api-prod", Time: *at(15, 50+i)}, Ref: cmRef}})
	}
	s := h.screen()
	if n := strings.Count(s, "api-prod  pruned ConfigMap/prod/render-old"); n != 3 {
		t.Fatalf("%d log lines, want the newest 3:\n%s", n, s)
	}
	for _, a := range []string{"api-prod", "render-prod", "batch-staging", "web-staging", "15:54:00"} {
		if !strings.Contains(s, a) {
			t.Fatalf("%q not in sight at 80×24:\n%s", a, s)
		}
	}
	if lines := strings.Count(s, "\n") + 1; lines > 24 {
		t.Fatalf("%d lines at 80×24:\n%s", lines, s)
	}
}
