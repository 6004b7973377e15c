package ui

import (
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
	h.wantScreen("❄ frozen by Lao Li <lao.li@example.com>: INC-1002 scaled to 12 by hand (until 19:00, in 3h0m0s)")
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
