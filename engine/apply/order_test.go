package apply_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/internal/enginetest"
)

const crd = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"widgets.order.kdrift.dev"},
 "spec":{"group":"order.kdrift.dev","scope":"Namespaced",
  "names":{"plural":"widgets","singular":"widget","kind":"Widget"},
  "versions":[{"name":"v1","served":true,"storage":true,
   "schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"size":{"type":"integer"}}}}}}}]}}`

func TestOrder(t *testing.T) {
	in := []*unstructured.Unstructured{
		obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`),
		obj(t, crd),
		obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"}}`),
		obj(t, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"}}`),
	}
	got := apply.Order(in)
	want := []string{"Namespace", "CustomResourceDefinition", "ConfigMap", "Deployment"}
	for i, w := range want {
		if got[i].GetKind() != w {
			t.Fatalf("order[%d] = %s, want %s", i, got[i].GetKind(), w)
		}
	}
	if apply.PhaseOf(got[1]) != apply.PhaseFoundation || apply.PhaseOf(got[2]) != apply.PhaseRest {
		t.Fatal("PhaseOf")
	}
}

// TestOrderSyncWaves: waves first (lowest first, 0 when absent or not a
// number), then kinds as without waves, then the given order.
func TestOrderSyncWaves(t *testing.T) {
	mk := func(kind, name, wave string) *unstructured.Unstructured {
		o := obj(t, `{"apiVersion":"v1","kind":"`+kind+`","metadata":{"name":"`+name+`"}}`)
		if wave != "" {
			o.SetAnnotations(map[string]string{apply.SyncWaveAnnotation: wave})
		}
		return o
	}
	in := []*unstructured.Unstructured{
		mk("ConfigMap", "late", "10"),
		mk("ConfigMap", "zero", ""),
		mk("Namespace", "ns-late", "10"),
		mk("ConfigMap", "bad-wave", "soon"),
		mk("ConfigMap", "first", "-2"),
		mk("Namespace", "ns", ""),
	}
	var got []string
	for _, o := range apply.Order(in) {
		got = append(got, o.GetName())
	}
	want := "first ns zero bad-wave ns-late late"
	if g := strings.Join(got, " "); g != want {
		t.Fatalf("order %s, want %s", g, want)
	}
}

// TestCRDThenCustomResource applies a CRD, waits for it, and applies a
// custom resource of its kind with the same Applier, whose RESTMapper knew
// nothing of the kind at first.
func TestCRDThenCustomResource(t *testing.T) {
	ctx := context.Background()
	a := newApplier(t)
	// Warm the mapper before the kind exists, so a stale cache is real.
	if _, err := a.Apply(ctx, apply.Track(cmObj(t, "order-warm"), "a", "repo-1"), false); err != nil {
		t.Fatal(err)
	}
	cleanup(t, "configmaps", "order-warm")
	objs := apply.Order([]*unstructured.Unstructured{
		apply.Track(obj(t, `{"apiVersion":"order.kdrift.dev/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"},"spec":{"size":3}}`), "a", "repo-1"),
		apply.Track(obj(t, crd), "a", "repo-1"),
	})
	crdRes := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	t.Cleanup(func() {
		if err := enginetest.Dynamic(t).Resource(crdRes).Delete(context.Background(), "widgets.order.kdrift.dev", metav1.DeleteOptions{}); err != nil {
			t.Logf("cleanup crd: %v", err)
		}
	})
	for _, o := range objs {
		if apply.PhaseOf(o) != apply.PhaseFoundation {
			if err := a.WaitEstablished(ctx, objs); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := a.Apply(ctx, o, false); err != nil {
			t.Fatal(err)
		}
	}
	w, err := enginetest.Dynamic(t).Resource(schema.GroupVersionResource{Group: "order.kdrift.dev", Version: "v1", Resource: "widgets"}).Namespace("default").Get(ctx, "w", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s, _, _ := unstructured.NestedInt64(w.Object, "spec", "size"); s != 3 {
		t.Fatalf("size = %d", s)
	}
}
