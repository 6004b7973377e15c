package apply_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
)

func gvr(resource string) schema.GroupVersionResource {
	if resource == "deployments" {
		return schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: resource}
	}
	return schema.GroupVersionResource{Version: "v1", Resource: resource}
}

func cmObj(t *testing.T, name string) *unstructured.Unstructured {
	return obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`","namespace":"default"},"data":{"a":"1"}}`)
}

func TestExtraneous(t *testing.T) {
	keep := apply.Track(cmObj(t, "keep"), "a")
	gone := apply.Track(cmObj(t, "gone"), "a")
	otherApp := apply.Track(cmObj(t, "other"), "b")
	untracked := cmObj(t, "untracked")
	desired := []status.ObjectRef{apply.RefOf(keep)}
	got := apply.Extraneous("a", []*unstructured.Unstructured{keep, gone, otherApp, untracked}, desired)
	if len(got) != 1 || got[0].GetName() != "gone" {
		t.Fatalf("Extraneous = %v, want only gone", got)
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
	if err := a.Prune(ctx, "a", untracked, false); err == nil || !strings.HasPrefix(err.Error(), "ConfigMap/default/prune-untracked prune failed") {
		t.Fatalf("pruning an untracked object: err = %v, want a refusal naming it", err)
	}
	if _, err := cms.Get(ctx, "prune-untracked", metav1.GetOptions{}); err != nil {
		t.Fatalf("untracked object must survive: %v", err)
	}

	tracked, err := a.Apply(ctx, apply.Track(cmObj(t, "prune-tracked"), "a"), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Prune(ctx, "b", tracked, false); err == nil {
		t.Fatal("another app's object must not be pruned")
	}
	if err := a.Prune(ctx, "a", tracked, true); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "prune-tracked", metav1.GetOptions{}); err != nil {
		t.Fatalf("a dry-run prune must not delete: %v", err)
	}
	if err := a.Prune(ctx, "a", tracked, false); err != nil {
		t.Fatal(err)
	}
	// Foreground deletion: the object is marked and the garbage collector
	// (not running in this control plane) deletes it after its dependents.
	got, err := cms.Get(ctx, "prune-tracked", metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		t.Fatal(err)
	case got.GetDeletionTimestamp() == nil || !contains(got.GetFinalizers(), "foregroundDeletion"):
		t.Fatalf("tracked object not being deleted in the foreground: finalizers %v", got.GetFinalizers())
	default:
		t.Cleanup(func() {
			got.SetFinalizers(nil)
			if _, err := cms.Update(context.Background(), got, metav1.UpdateOptions{}); err != nil {
				t.Logf("cleanup finalizer: %v", err)
			}
		})
	}
	if err := a.Prune(ctx, "a", tracked, false); err != nil {
		t.Fatalf("pruning a gone object is not an error: %v", err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
