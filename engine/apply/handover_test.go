package apply_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/apply"
)

// TestHandoverKeepsReplicas is fact 4: kdrift alone owns spec.replicas=12;
// a new ignore rule covers it. Handing it over before omitting it keeps 12
// replicas; the Deployment never falls back to 1.
func TestHandoverKeepsReplicas(t *testing.T) {
	ctx := context.Background()
	a := newApplier(t)
	cleanup(t, "deployments", "handover")
	d := apply.Track(obj(t, deployment("handover", 12)), "render-prod", "repo-1")
	live, err := a.Apply(ctx, d, false)
	if err != nil {
		t.Fatal(err)
	}
	rules := []app.IgnoreRule{{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}}

	fields, err := apply.HandoverFields(live, rules)
	if err != nil {
		t.Fatal(err)
	}
	if len(fields) != 1 || fields[0] != "/spec/replicas" {
		t.Fatalf("HandoverFields = %v, want [/spec/replicas]", fields)
	}
	if err := a.Handover(ctx, live, fields); err != nil {
		t.Fatal(err)
	}
	trimmed, err := apply.Omit(d, live, rules)
	if err != nil {
		t.Fatal(err)
	}
	live, err = a.Apply(ctx, trimmed, false)
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(live.Object, "spec", "replicas"); r != 12 {
		t.Fatalf("replicas after hand-over and omit = %d, want 12", r)
	}
	if got := owners(live, "f:replicas"); len(got) != 1 || got[0] != "kdrift-handover/Apply/" {
		t.Fatalf("replicas owners = %v, want kdrift-handover/Apply/ only", got)
	}
	// Nothing left to hand over once kdrift released the field.
	if again, err := apply.HandoverFields(live, rules); err != nil || len(again) != 0 {
		t.Fatalf("HandoverFields after hand-over = %v, %v; want none", again, err)
	}
}

// TestHandoverListElement hands over a field inside a keyed list element.
func TestHandoverListElement(t *testing.T) {
	ctx := context.Background()
	a := newApplier(t)
	cleanup(t, "deployments", "handover-image")
	d := apply.Track(obj(t, deployment("handover-image", 1)), "a", "repo-1")
	live, err := a.Apply(ctx, d, false)
	if err != nil {
		t.Fatal(err)
	}
	rules := []app.IgnoreRule{{Kind: "Deployment", JSONPointers: []string{"/spec/template/spec/containers/0/image"}}}
	fields, err := apply.HandoverFields(live, rules)
	if err != nil || len(fields) != 1 {
		t.Fatalf("HandoverFields = %v, %v", fields, err)
	}
	if err := a.Handover(ctx, live, fields); err != nil {
		t.Fatal(err)
	}
	trimmed, err := apply.Omit(d, live, rules)
	if err != nil {
		t.Fatal(err)
	}
	// Without the hand-over this apply fails: a container needs an image.
	live, err = a.Apply(ctx, trimmed, false)
	if err != nil {
		t.Fatal(err)
	}
	cs, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	if img := cs[0].(map[string]any)["image"]; img != "registry.example/handover-image:1.0" {
		t.Fatalf("image = %v", img)
	}
}
