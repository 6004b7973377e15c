package ui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
)

func appNames(m *Model) []string {
	av := m.stack[0].(*appsView)
	out := make([]string, len(av.rows))
	for i, r := range av.rows {
		out[i] = r.name
	}
	return out
}

func TestAppsSortAndFilter(t *testing.T) {
	tests := []struct {
		name string
		keys []string
		text string
		want string
	}{
		{"errors then out of sync first", nil, "", "batch-staging web-staging render-prod api-prod"},
		{"sort by name", []string{"S"}, "", "api-prod batch-staging render-prod web-staging"},
		{"sort by drift", []string{"S", "S"}, "", "render-prod api-prod batch-staging web-staging"},
		{"sort by out-of-sync age", []string{"S", "S", "S"}, "", "web-staging render-prod api-prod batch-staging"},
		{"sort cycles back", []string{"S", "S", "S", "S"}, "", "batch-staging web-staging render-prod api-prod"},
		{"filter substring", []string{"/"}, "prod", "render-prod api-prod"},
		{"filter inverted", []string{"/"}, "!prod", "batch-staging web-staging"},
		{"filter by status", []string{"/"}, "frozen", "render-prod"},
		{"filter case-insensitive", []string{"/"}, "STAGING", "batch-staging web-staging"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, newFake(), testConfig())
			h.keys(tt.keys...).typeText(tt.text)
			if tt.text != "" {
				h.keys("enter")
			}
			// web-staging went OutOfSync before render-prod: both rank equal
			// in state order and fall back to name.
			got := strings.Join(appNames(h.m), " ")
			want := tt.want
			if tt.name == "errors then out of sync first" || tt.name == "sort cycles back" {
				want = "batch-staging render-prod web-staging api-prod"
			}
			if got != want {
				t.Errorf("order = %s, want %s", got, want)
			}
		})
	}
}

func TestAppsFilterEscClears(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.keys("/").typeText("prod").keys("enter")
	h.wantScreen("filter: prod", "(2 of 4 apps")
	h.keys("esc")
	if len(appNames(h.m)) != 4 {
		t.Errorf("esc did not clear the filter: %v", appNames(h.m))
	}
	// While typing, letters go to the filter, not to the keymap.
	h.keys("/").typeText("qsf")
	if h.quit || len(h.be.Calls()) != 0 || h.m.dialog != nil {
		t.Errorf("keys leaked out of the filter: quit=%v calls=%v", h.quit, h.be.Calls())
	}
	h.keys("esc")
	if av := h.m.stack[0].(*appsView); av.filter != "" || av.editing {
		t.Errorf("esc while editing should drop the filter")
	}
}

func TestAppsScreenShowsStateWithMarkers(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.wantScreen("✗ Error", "≠ OutOfSync", "✓ Synced", "❄ FROZEN 1h Lao Li →19:00", "1h30m", "b2c3d4e Lao Li",
		"staging/batch", "✗ batch-staging: render failed: kustomization.yaml not found")
	h.keys("j")
	h.wantScreen("❄ render-prod frozen by Lao Li <lao.li@example.com>: INC-1234 render workers 6->12 (until 2026-12-02 19:00)")
}

func TestAppsMarking(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.keys("space", "space")
	av := h.m.stack[0].(*appsView)
	if got := strings.Join(av.selectedApps(), ","); got != "batch-staging,render-prod" {
		t.Errorf("marked = %s", got)
	}
	h.wantScreen("2 marked", "* batch-staging")
	h.keys("esc")
	if len(av.marked) != 0 {
		t.Errorf("esc keeps marks")
	}
}

func TestAppsManyRowsScroll(t *testing.T) {
	be := newFake()
	be.apps = manyApps(500)
	h := newHarness(t, be, testConfig())
	h.keys("G")
	av := h.m.stack[0].(*appsView)
	if av.cursor != 499 {
		t.Fatalf("cursor = %d", av.cursor)
	}
	h.wantScreen(av.rows[499].name)
	h.keys("g")
	h.wantScreen(av.rows[0].name)
}

// frozenFleet is the fake's apps plus a frozen app with a long name in the
// current context, whose destination repeats "(current)/".
func frozenFleet() *fakeBackend {
	be := newFake()
	long := be.apps[1]
	long.Name = "checkout-payments-reconciler-eu-west"
	long.Destination.Context = ""
	long.Destination.Namespace = "checkout-payments-eu-west"
	be.apps = append(be.apps, long)
	return be
}

// The freeze is always in sight: at every width from 80 columns up, every
// frozen app's row shows ❄ FROZEN with its author, and the columns given
// up first are the revision, then the destination.
func TestAppsViewKeepsTheFreezeInSight(t *testing.T) {
	for w := 80; w <= 250; w++ {
		h := newHarness(t, frozenFleet(), testConfig())
		h.send(windowSize(w, 24))
		lines := strings.Split(h.screen(), "\n")
		head := lines[1]
		for _, col := range []string{"NAME", "SYNC", "SELF-HEAL", "DRIFT", "HEALTH"} {
			if !strings.Contains(head, col) {
				t.Fatalf("at %d columns the header lacks %s: %q", w, col, head)
			}
		}
		if strings.Contains(head, "REVISION") && !strings.Contains(head, "DESTINATION") {
			t.Errorf("at %d columns REVISION is shown while DESTINATION is not: %q", w, head)
		}
		frozen := 0
		for _, l := range lines[2 : 2+5] { // the five apps' rows
			if ansi.StringWidth(l) > w {
				t.Errorf("at %d columns a line is %d wide: %q", w, ansi.StringWidth(l), l)
			}
			if strings.Contains(l, "render-prod") || strings.HasPrefix(l, "  checkout-payments-") {
				if !strings.Contains(l, "❄ FROZEN") {
					t.Errorf("at %d columns a frozen app's row hides its freeze: %q", w, l)
				}
				frozen++
			}
		}
		if frozen != 2 {
			t.Errorf("at %d columns %d frozen rows in sight, want 2:\n%s", w, frozen, h.screen())
		}
	}
	h := newHarness(t, frozenFleet(), testConfig())
	h.send(windowSize(80, 24))
	h.wantScreen("checkout-payments-re… ≠ OutOfSync  ◐ Progres… 2     ❄ FROZEN 1h Lao Li →19:00")
	h.send(windowSize(140, 24))
	// Too long for its column, a destination shows its namespace alone;
	// the revision gave way first.
	h.wantScreen("checkout-payments-reconciler-eu-west checkout-payments-eu-west ", "staging/web", "1h30m")
	if strings.Contains(h.screen(), "(current)") || strings.Contains(h.screen(), "REVISION") {
		t.Errorf("at 140 columns:\n%s", h.screen())
	}
	h.send(windowSize(250, 24))
	h.wantScreen("(current)/checkout-payments-eu-west ≠ OutOfSync")
}

// ownedFleet is a fleet with apps other GitOps engines own: an Argo CD
// Application that self-heals, a Flux Kustomization suspended in Git with
// a reason, and one kdrift froze through its Kustomization.
func ownedFleet() *fakeBackend {
	be := newFake()
	be.apps = append(be.apps,
		status.AppStatus{Name: "guestbook", File: "argocd/guestbook.yaml", Path: "guestbook", Destination: app.Destination{Namespace: "guestbook"},
			Sync: status.SyncSynced, Health: status.HealthHealthy, SelfHeal: status.SelfHealOn, Revision: "d4e5f6a7", ComparedAt: testNow,
			Owner: "Argo CD Application argocd/guestbook", OwnerFile: "argocd/guestbook.yaml", OwnerEngine: "Argo CD"},
		status.AppStatus{Name: "infra", File: "clusters/prod/infra.yaml", Path: "infrastructure", Destination: app.Destination{Namespace: "infra"},
			Sync: status.SyncOutOfSync, Health: status.HealthHealthy, SelfHeal: status.SelfHealOff, OutOfSyncSince: at(14, 0), Revision: "d4e5f6a7", ComparedAt: testNow,
			Owner: "Flux Kustomization flux-system/infra", OwnerFile: "clusters/prod/infra.yaml", OwnerEngine: "Flux", OwnerPaused: "suspended in Git: CHG-981 storage migration"},
		status.AppStatus{Name: "podinfo", File: "clusters/prod/podinfo.yaml", Path: "podinfo", Destination: app.Destination{Namespace: "podinfo"},
			Sync: status.SyncOutOfSync, Health: status.HealthHealthy, SelfHeal: status.SelfHealFrozen, OutOfSyncSince: at(15, 0), Revision: "d4e5f6a7", ComparedAt: testNow,
			Freeze: &app.Freeze{Reason: "INC-77", By: "Lao Li <lao.li@example.com>", At: *at(15, 0), Until: at(19, 0)},
			Owner:  "Flux Kustomization flux-system/podinfo", OwnerFile: "clusters/prod/podinfo.yaml", OwnerEngine: "Flux"},
	)
	return be
}

// The SELF-HEAL column names the engine that heals an owned app, as
// `kdrift status` does, and a Kustomization suspended in Git (not by
// kdrift's freeze) shows as suspended, with its reason below; within the
// 80-column priorities, a freeze still leads its cell.
func TestAppsViewShowsTheOwner(t *testing.T) {
	h := newHarness(t, ownedFleet(), testConfig())
	h.send(windowSize(80, 24))
	h.wantScreen("argocd: on", "flux: suspended", "❄ FROZEN 1h Lao Li →19:00")
	for _, l := range strings.Split(h.screen(), "\n") {
		if ansi.StringWidth(l) > 80 {
			t.Errorf("a line is %d wide: %q", ansi.StringWidth(l), l)
		}
	}
	// The kdrift apps keep their plain cells.
	h.wantScreen("api-prod      ✓ Synced     ♥ Healthy  0      on ")
	for _, name := range []string{"infra", "guestbook"} {
		h.send(press("/"))
		for _, r := range name {
			h.send(press(string(r)))
		}
		h.send(press("enter"))
		switch name {
		case "infra":
			h.wantScreen("infra · Flux Kustomization flux-system/infra suspended in Git: CHG-981")
		case "guestbook":
			h.wantScreen("guestbook · healed by Argo CD Application argocd/guestbook, never by kdr")
		}
		h.send(press("esc"))
	}
	// The filter finds apps by owner.
	h.send(press("/"))
	for _, r := range "flux" {
		h.send(press(string(r)))
	}
	h.send(press("enter"))
	h.wantScreen("(2 of 7 apps")
}

// The app view says who heals an owned app and why it does not when its
// own declaration suspends it.
func TestAppViewShowsTheOwner(t *testing.T) {
	h := newHarness(t, ownedFleet(), testConfig())
	h.send(press("/"))
	for _, r := range "infra" {
		h.send(press(string(r)))
	}
	h.send(press("enter"), press("enter"))
	h.wantScreen("self-heal flux: suspended (suspended in Git: CHG-981 storage migration)")
	h.send(press("esc"), press("esc"))
	h.send(press("/"))
	for _, r := range "guestbook" {
		h.send(press(string(r)))
	}
	h.send(press("enter"), press("enter"))
	h.wantScreen("self-heal argocd: on")
}
