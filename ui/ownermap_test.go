package ui

import (
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/status"
)

func ownerMapFixture() diff.OwnerMap {
	return diff.OwnerMap{Objects: 16, Kinds: []diff.OwnerKind{
		{Kind: "ConfigMap", Objects: 4, GitOnly: 3, Rows: []diff.OwnerRow{{
			Field: "data.mode", Objects: 4,
			Writers: []diff.FieldWriter{{Manager: "kdrift", Class: status.OwnerKdrift, Count: 4, Objects: []string{"a:ConfigMap/prod/x"}}},
		}}},
		{Group: "apps", Kind: "Deployment", Objects: 16, GitOnly: 20, Rows: []diff.OwnerRow{{
			Field: "spec.replicas", Objects: 16, Contested: true, Why: []string{"2 writers"},
			Writers: []diff.FieldWriter{
				{Manager: "horizontal-pod-autoscaler", Class: status.OwnerController, Count: 14, Newest: at(14, 48), Objects: []string{"render-prod:Deployment/prod/render"}, Refs: []diff.OwnedRef{{App: "render-prod", Ref: deployRef}}},
				{Manager: "kubectl", Class: status.OwnerPerson, Count: 2, Objects: []string{"web-staging:Deployment/staging/gone"}, Refs: []diff.OwnedRef{{App: "web-staging", Ref: status.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "staging", Name: "gone"}}}},
			},
		}}},
	}}
}

// TestOwnerMapView: `:owners` opens the table with contested rows first,
// enter lists the objects behind a row, and a kind argument reaches the
// backend as a filter.
func TestOwnerMapView(t *testing.T) {
	be := newFake()
	be.owners = ownerMapFixture()
	h := newHarness(t, be, testConfig())
	h.keys(":").typeText("owners").keys("enter")
	if got := h.m.Breadcrumb(); !strings.HasSuffix(got, "owners") {
		t.Fatalf("breadcrumb = %q", got)
	}
	if h.m.busy != 0 {
		t.Errorf("busy = %d after the owner map loaded: the spinner keeps running", h.m.busy)
	}
	h.wantScreen("field ownership of 16 objects", "23 fields only Git writes", "! Deployment.apps", "horizontal-pod-autoscaler 14/16 ", "kubectl 2/16", "contested: 2 writers")
	s := h.screen()
	if strings.Index(s, "spec.replicas") > strings.Index(s, "data.mode") {
		t.Errorf("contested row not first:\n%s", s)
	}
	// enter: the objects behind the row; enter again: an object's diff.
	h.keys("enter")
	h.wantScreen("Deployment.apps spec.replicas: 2 objects", "horizontal-pod-autoscaler (controller)", "render-prod", "Deployment/prod/render", "Deployment/staging/gone", "contested: 2 writers")
	h.keys("enter")
	if got := h.m.Breadcrumb(); !strings.HasSuffix(got, "diff Deployment/prod/render") {
		t.Fatalf("enter on an object opens %q", got)
	}
	h.keys("esc", "j", "enter")
	h.wantScreen("Deployment/staging/gone is not among the resources of app web-staging")
	h.keys("esc", "esc")
	if got := h.m.Breadcrumb(); got != "apps" {
		t.Fatalf("esc back leaves %q", got)
	}
	h.keys(":").typeText("owners deployment.apps").keys("enter")
	if c := be.Calls(); len(c) == 0 || c[len(c)-1] != "owners 1 kinds" {
		t.Errorf("calls = %v", c)
	}
	h.keys("esc")
	h.keys(":").typeText("owners apps/Deployment").keys("enter")
	h.wantScreen("is not KIND or KIND.GROUP")
}

// TestOwnerMapIgnoreAndFreeze: on an :owners row whose objects belong to
// one app, `i` commits one ignore rule covering the field for the whole
// kind and `f` freezes the field on those objects; a row spanning apps
// says to pick an object, and on an object both act on its app.
func TestOwnerMapIgnoreAndFreeze(t *testing.T) {
	gone := status.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "staging", Name: "gone"}
	fixture := func(spanApps bool) diff.OwnerMap {
		m := ownerMapFixture()
		row := &m.Kinds[1].Rows[0]
		row.Pointers = []diff.FieldPointer{{Ref: diff.OwnedRef{App: "render-prod", Ref: deployRef}, Pointer: "/spec/replicas"}}
		if spanApps {
			row.Pointers = append(row.Pointers, diff.FieldPointer{Ref: diff.OwnedRef{App: "web-staging", Ref: gone}, Pointer: "/spec/replicas"})
		}
		return m
	}
	be := newFake()
	be.owners = fixture(false)
	h := newHarness(t, be, testConfig())
	h.keys(":").typeText("owners").keys("enter", "i")
	h.wantScreen("Ignore spec.replicas for every Deployment.apps?", "App render-prod will stop applying /spec/replicas on every Deployment.apps")
	h.typeText("HPA owns replicas").keys("enter")
	h.keys("f")
	h.wantScreen("Freeze Deployment.apps/prod/render [/spec/replicas]?")
	h.typeText("INC-1 hold it").keys("enter")
	h.wantCalls("owners 0 kinds",
		`ignore render-prod Deployment/ [/spec/replicas] reason="HPA owns replicas"`,
		`freeze render-prod Deployment.apps/prod/render [/spec/replicas] reason="INC-1 hold it" for=0s`)

	be = newFake()
	be.owners = fixture(true)
	h = newHarness(t, be, testConfig())
	h.keys(":").typeText("owners").keys("enter", "i")
	h.wantScreen("belong to 2 apps (render-prod, web-staging): enter lists them")
	h.keys("enter", "j", "f")
	h.wantScreen("Freeze Deployment.apps/staging/gone [/spec/replicas]?")
	h.typeText("INC-2").keys("enter")
	h.wantCalls("owners 0 kinds", `freeze web-staging Deployment.apps/staging/gone [/spec/replicas] reason="INC-2" for=0s`)
}
