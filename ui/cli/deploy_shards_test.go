package cli

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/internal/enginetest"
)

// TestDeployShardsComponent: components/shards renders 3 replicas that
// run --shards=6, and grants delete on Leases (presence Leases) only
// through its own Role; the base grants no delete on Leases.
func TestDeployShardsComponent(t *testing.T) {
	root, err := enginetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	objs := kustomizeBuild(t, kustomization(t, filepath.Join(root, "deploy"), "components/shards"), true)
	var dep *unstructured.Unstructured
	deletes := 0
	for _, o := range objs {
		switch {
		case o.GetKind() == "Deployment" && o.GetName() == "kdrift":
			dep = o
		case o.GetKind() == "Role":
			rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
			for _, r := range rules {
				rule, _ := r.(map[string]any)
				res, _, _ := unstructured.NestedStringSlice(rule, "resources")
				verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
				if slices.Contains(res, "leases") && slices.Contains(verbs, "delete") {
					deletes++
					if o.GetName() != "kdrift-shards" {
						t.Errorf("Role %s may delete Leases; only kdrift-shards (components/shards) may", o.GetName())
					}
				}
			}
		}
	}
	if dep == nil {
		t.Fatal("no Deployment kdrift")
	}
	if n, _, _ := unstructured.NestedFieldNoCopy(dep.Object, "spec", "replicas"); fmt.Sprint(n) != "3" {
		t.Errorf("replicas = %v, want 3", n)
	}
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	if !slices.Contains(args, "--shards=6") {
		t.Errorf("args %v: no --shards=6", args)
	}
	if deletes != 1 {
		t.Errorf("%d Roles may delete Leases, want 1 (kdrift-shards)", deletes)
	}
}
