package engine_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// TestIgnoreByManager: a field a controller named in
// managedFieldsManagers writes is not drift, self-heal leaves it, and
// kdrift does not own it afterwards.
func TestIgnoreByManager(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "ignore-mgr")
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/app.yaml": appYAML("ignore-mgr", "deploy/app", ns, true, false, `  ignoreDifferences:
  - managedFieldsManagers: [image-updater]
`),
		"deploy/app/dep.yaml": deploymentYAML("web", 2),
	})
	e := newEngine(t, repo, nil)
	if _, err := e.Sync(ctx, "ignore-mgr", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	deps := enginetest.Clientset(t).AppsV1().Deployments(ns)
	if _, err := deps.Patch(ctx, "web", types.StrategicMergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"registry.example/web:1.1"}]}}}}`),
		metav1.PatchOptions{FieldManager: "image-updater"}); err != nil {
		t.Fatal(err)
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a := appStatus(t, e, "ignore-mgr")
	if a.Sync != status.SyncSynced || a.DriftedObjects() != 0 {
		t.Fatalf("a field owned by an ignored manager is not drift:\n%s", describe(a))
	}
	d, err := deps.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry.example/web:1.1" {
		t.Fatalf("image = %s: self-heal must leave the ignored manager's value", img)
	}
	for _, mf := range d.ManagedFields {
		if mf.Manager == "kdrift" && mf.FieldsV1 != nil && strings.Contains(mf.FieldsV1.GetRawString(), "f:image") {
			t.Fatalf("kdrift still owns the image: %s", mf.FieldsV1.GetRawString())
		}
	}
}
