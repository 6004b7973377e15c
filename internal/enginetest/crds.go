package enginetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// InstallCRDs creates the CustomResourceDefinitions of files under the
// repository's testdata/crds (keeping one that exists), waits until each
// is established and its kind is served, and deletes them when the test
// ends.
func InstallCRDs(t testing.TB, files ...string) {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatalf("enginetest: %v", err)
	}
	ctx := context.Background()
	crds := Dynamic(t).Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(root, "testdata", "crds", f))
		if err != nil {
			t.Fatalf("enginetest: CRD: %v", err)
		}
		crd := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &crd.Object); err != nil {
			t.Fatalf("enginetest: CRD %s: %v", f, err)
		}
		name := crd.GetName()
		// A CRD an earlier test of the package deleted may still be
		// terminating: creating it again fails as "already exists", and
		// its resource then vanishes under this test. Wait it out.
		deadline := time.Now().Add(60 * time.Second)
		for {
			old, err := crds.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) || (err == nil && old.GetDeletionTimestamp() == nil) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("enginetest: CRD %s still terminating after 60s (%v)", name, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("enginetest: CRD %s: %v", f, err)
		}
		t.Cleanup(func() {
			if err := crds.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Logf("enginetest: delete CRD %s: %v", name, err)
			}
		})
		deadline = time.Now().Add(30 * time.Second)
		for !established(ctx, crds, name) {
			if time.Now().After(deadline) {
				t.Fatalf("enginetest: CRD %s not established within 30s", name)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// established says whether the CRD name has condition Established=True.
func established(ctx context.Context, crds interface {
	Get(context.Context, string, metav1.GetOptions, ...string) (*unstructured.Unstructured, error)
}, name string) bool {
	got, err := crds.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
