package engine_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

const gadgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.engine.kdrift.dev
spec:
  group: engine.kdrift.dev
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
`

// TestCRDInstalledAfterStart: the engine has already talked to the cluster
// when a commit adds a CRD and a custom resource of it in one app; the
// sync applies the CRD first, waits for it, and the resource compares
// Synced.
func TestCRDInstalledAfterStart(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "crd")
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/app.yaml":   appYAML("crd", "deploy/app", ns, true, false, ""),
		"deploy/app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
	})
	e := newEngine(t, repo, nil)
	if _, err := e.Sync(ctx, "crd", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
		if err := enginetest.Dynamic(t).Resource(crds).Delete(context.Background(), "gadgets.engine.kdrift.dev", metav1.DeleteOptions{}); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	repo.Commit("gadget", map[string]string{
		"deploy/app/crd.yaml":    gadgetCRD,
		"deploy/app/gadget.yaml": "apiVersion: engine.kdrift.dev/v1\nkind: Gadget\nmetadata:\n  name: g\nspec:\n  size: 3\n",
	})
	res, err := e.Sync(ctx, "crd", engine.SyncOptions{})
	if err != nil {
		t.Fatalf("sync: %v\n%s", err, describe(res.Status))
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a := appStatus(t, e, "crd")
	g, ok := resource(a, "Gadget", "g")
	if !ok || g.Status != status.ResourceSynced || g.Ref.Namespace != ns || a.Sync != status.SyncSynced {
		t.Fatalf("want the Gadget Synced in %s:\n%s", ns, describe(a))
	}
}
