package apply_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
)

func gvr(resource string) schema.GroupVersionResource {
	if resource == "deployments" || resource == "statefulsets" {
		return schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: resource}
	}
	return schema.GroupVersionResource{Version: "v1", Resource: resource}
}

func cmObj(t *testing.T, name string) *unstructured.Unstructured {
	return obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`","namespace":"default"},"data":{"a":"1"}}`)
}

func TestExtraneous(t *testing.T) {
	keep := apply.Track(cmObj(t, "keep"), "a", "repo-1")
	gone := apply.Track(cmObj(t, "gone"), "a", "repo-1")
	otherApp := apply.Track(cmObj(t, "other"), "b", "repo-1")
	otherRepo := apply.Track(cmObj(t, "other-repo"), "a", "repo-2")
	legacy := apply.Track(cmObj(t, "legacy"), "a", "")
	untracked := cmObj(t, "untracked")
	desired := []status.ObjectRef{apply.RefOf(keep)}
	got := apply.Extraneous("a", "repo-1", []*unstructured.Unstructured{keep, gone, otherApp, otherRepo, legacy, untracked}, desired)
	var names []string
	for _, o := range got {
		names = append(names, o.GetName())
	}
	if strings.Join(names, ",") != "gone,legacy" {
		t.Fatalf("Extraneous = %v, want gone and legacy (another repository's object is never a candidate)", names)
	}
	if apply.IsTracked(legacy, "a", "repo-1") || !apply.IsTracked(gone, "a", "repo-1") || apply.IsTracked(otherRepo, "a", "repo-1") {
		t.Fatal("IsTracked must need the repository annotation")
	}
}

func TestPruneNeedsConfirm(t *testing.T) {
	for _, c := range []struct {
		count, total int
		want         bool
	}{
		{0, 0, false}, {0, 5, false}, {1, 1, true}, {3, 3, true}, {1, 2, false},
		{1, 10, false}, {2, 4, false}, {3, 5, true}, {2, 3, true}, {5, 100, false},
	} {
		if got := apply.PruneNeedsConfirm(c.count, c.total); got != c.want {
			t.Errorf("PruneNeedsConfirm(%d, %d) = %v, want %v", c.count, c.total, got, c.want)
		}
	}
}

func TestPrune(t *testing.T) {
	ctx := context.Background()
	a := newApplier(t)
	cms := enginetest.Dynamic(t).Resource(gvr("configmaps")).Namespace("default")

	untracked, err := cms.Create(ctx, cmObj(t, "prune-untracked"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, "configmaps", "prune-untracked")
	if err := a.Prune(ctx, "a", "repo-1", untracked, false); err == nil || !strings.HasPrefix(err.Error(), "ConfigMap/default/prune-untracked prune failed") {
		t.Fatalf("pruning an untracked object: err = %v, want a refusal naming it", err)
	}
	if _, err := cms.Get(ctx, "prune-untracked", metav1.GetOptions{}); err != nil {
		t.Fatalf("untracked object must survive: %v", err)
	}

	tracked, err := a.Apply(ctx, apply.Track(cmObj(t, "prune-tracked"), "a", "repo-1"), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Prune(ctx, "b", "repo-1", tracked, false); err == nil {
		t.Fatal("another app's object must not be pruned")
	}
	if err := a.Prune(ctx, "a", "repo-2", tracked, false); err == nil || !strings.Contains(err.Error(), "tracked by repository repo-1") {
		t.Fatalf("another repository's object must not be pruned: %v", err)
	}
	legacy, err := a.Apply(ctx, apply.Track(cmObj(t, "prune-legacy"), "a", ""), false)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, "configmaps", "prune-legacy")
	if err := a.Prune(ctx, "a", "repo-1", legacy, false); err == nil || !strings.Contains(err.Error(), apply.AnnotationRepo) {
		t.Fatalf("an object tracked before repository identity must not be pruned: %v", err)
	}
	if _, err := cms.Get(ctx, "prune-legacy", metav1.GetOptions{}); err != nil {
		t.Fatalf("the unannotated object must survive: %v", err)
	}
	if err := a.Prune(ctx, "a", "repo-1", tracked, true); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "prune-tracked", metav1.GetOptions{}); err != nil {
		t.Fatalf("a dry-run prune must not delete: %v", err)
	}
	if err := a.Prune(ctx, "a", "repo-1", tracked, false); err != nil {
		t.Fatal(err)
	}
	// Foreground deletion: the object is marked and the garbage collector
	// (not running in this control plane) deletes it after its dependents.
	got, err := cms.Get(ctx, "prune-tracked", metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		t.Fatal(err)
	case got.GetDeletionTimestamp() == nil || !slices.Contains(got.GetFinalizers(), "foregroundDeletion"):
		t.Fatalf("tracked object not being deleted in the foreground: finalizers %v", got.GetFinalizers())
	default:
		t.Cleanup(func() {
			got.SetFinalizers(nil)
			if _, err := cms.Update(context.Background(), got, metav1.UpdateOptions{}); err != nil {
				t.Logf("cleanup finalizer: %v", err)
			}
		})
	}
	if err := a.Prune(ctx, "a", "repo-1", tracked, false); err != nil && !errors.As(err, new(*apply.ChangedError)) {
		t.Fatalf("pruning a gone (or going) object is not an error: %v", err)
	}
}

// TestPrunePreconditions: an object changed, or deleted and re-created,
// between the read and the delete is not deleted.
func TestPrunePreconditions(t *testing.T) {
	ctx := context.Background()
	a := newApplier(t)
	cms := enginetest.Dynamic(t).Resource(gvr("configmaps")).Namespace("default")
	read, err := a.Apply(ctx, apply.Track(cmObj(t, "prune-changed"), "a", "repo-1"), false)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, "configmaps", "prune-changed")
	changed := read.DeepCopy()
	if err := unstructured.SetNestedField(changed.Object, "2", "data", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Update(ctx, changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = a.Prune(ctx, "a", "repo-1", read, false)
	var ce *apply.ChangedError
	if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), "ConfigMap/default/prune-changed") {
		t.Fatalf("prune of an object changed since it was read: err = %v, want a *ChangedError naming it", err)
	}
	if got, err := cms.Get(ctx, "prune-changed", metav1.GetOptions{}); err != nil || got.GetDeletionTimestamp() != nil {
		t.Fatalf("the changed object must not be deleted: %v", err)
	}
}

func TestOptInField(t *testing.T) {
	ns := status.ObjectRef{Version: "v1", Kind: "Namespace", Name: "x"}
	pvc := status.ObjectRef{Version: "v1", Kind: "PersistentVolumeClaim", Namespace: "x", Name: "data"}
	cm := status.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "x", Name: "c"}
	if f, ok := apply.OptInField(ns, app.SyncPolicy{Prune: true}); ok || f != "spec.syncPolicy.pruneNamespaces" {
		t.Fatalf("Namespace without opt-in: %q %v", f, ok)
	}
	if _, ok := apply.OptInField(ns, app.SyncPolicy{PruneNamespaces: true}); !ok {
		t.Fatal("Namespace with opt-in refused")
	}
	if f, ok := apply.OptInField(pvc, app.SyncPolicy{Prune: true, PruneNamespaces: true}); ok || f != "spec.syncPolicy.prunePersistentVolumeClaims" {
		t.Fatalf("PVC without opt-in: %q %v", f, ok)
	}
	if _, ok := apply.OptInField(cm, app.SyncPolicy{}); !ok {
		t.Fatal("a ConfigMap needs no opt-in")
	}
}
