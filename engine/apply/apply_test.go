package apply_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/internal/enginetest"
)

func TestMain(m *testing.M) { enginetest.Main(m, enginetest.Options{}) }

// newApplier returns an Applier on the test cluster with a resettable,
// discovery-backed RESTMapper.
func newApplier(t *testing.T) *apply.Applier {
	t.Helper()
	return apply.New(enginetest.Dynamic(t), newApplierMapper(t), apply.Options{})
}

// newApplierMapper is a resettable, discovery-backed RESTMapper on the
// test cluster.
func newApplierMapper(t *testing.T) meta.ResettableRESTMapper {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(enginetest.Config())
	if err != nil {
		t.Fatal(err)
	}
	return restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
}

func obj(t *testing.T, js string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(js), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func deployment(name string, replicas int) string {
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec": map[string]any{
			"replicas": replicas,
			"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": name}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "main", "image": "registry.example/" + name + ":1.0"}}},
			},
		},
	})
	return string(b)
}

func owners(u *unstructured.Unstructured, field string) []string {
	var out []string
	for _, e := range u.GetManagedFields() {
		if e.FieldsV1 != nil && strings.Contains(e.FieldsV1.GetRawString(), field) {
			out = append(out, e.Manager+"/"+string(e.Operation)+"/"+e.Subresource)
		}
	}
	return out
}

func cleanup(t *testing.T, resource, name string) {
	t.Cleanup(func() {
		err := enginetest.Dynamic(t).Resource(gvr(resource)).Namespace("default").Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !strings.Contains(err.Error(), "not found") {
			t.Logf("cleanup %s/%s: %v", resource, name, err)
		}
	})
}

// TestApplyTracksAndTakesBackScale: an applied object carries the tracking
// metadata, is owned by kdrift, and a forced apply takes spec.replicas back
// from a `kubectl scale` (fact 1).
func TestApplyTracksAndTakesBackScale(t *testing.T) {
	ctx := context.Background()
	a := newApplier(t)
	d := apply.Track(obj(t, deployment("apply-scale", 6)), "render-prod", "repo-1")
	cleanup(t, "deployments", "apply-scale")

	live, err := a.Apply(ctx, d, false)
	if err != nil {
		t.Fatal(err)
	}
	if !apply.IsTracked(live, "render-prod", "repo-1") || apply.IsTracked(live, "other", "repo-1") || apply.IsTracked(live, "render-prod", "repo-2") {
		t.Fatalf("tracking metadata: labels %v annotations %v", live.GetLabels(), live.GetAnnotations())
	}
	if got := owners(live, "f:replicas"); len(got) != 1 || got[0] != "kdrift/Apply/" {
		t.Fatalf("replicas owners = %v, want kdrift/Apply/", got)
	}

	cs := enginetest.Clientset(t)
	scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "apply-scale", Namespace: "default"}, Spec: autoscalingv1.ScaleSpec{Replicas: 12}}
	if _, err := cs.AppsV1().Deployments("default").UpdateScale(ctx, "apply-scale", scale, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	live, err = a.Apply(ctx, d, false)
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(live.Object, "spec", "replicas"); r != 6 {
		t.Fatalf("replicas after forced apply = %d, want 6", r)
	}
	if got := owners(live, "f:replicas"); len(got) != 1 || got[0] != "kdrift/Apply/" {
		t.Fatalf("replicas owners after heal = %v, want kdrift/Apply/ only", got)
	}
}

// TestApplyRequiresReplace: changing an immutable field is reported as
// RequiresReplace with the object named first, and nothing is forced.
func TestApplyRequiresReplace(t *testing.T) {
	ctx := context.Background()
	a := newApplier(t)
	cleanup(t, "deployments", "apply-immutable")
	d := apply.Track(obj(t, deployment("apply-immutable", 1)), "a", "repo-1")
	if _, err := a.Apply(ctx, d, false); err != nil {
		t.Fatal(err)
	}
	changed := d.DeepCopy()
	if err := unstructured.SetNestedStringMap(changed.Object, map[string]string{"app": "other"}, "spec", "selector", "matchLabels"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedStringMap(changed.Object, map[string]string{"app": "other"}, "spec", "template", "metadata", "labels"); err != nil {
		t.Fatal(err)
	}
	_, err := a.Apply(ctx, changed, false)
	if err == nil || !apply.IsRequiresReplace(err) {
		t.Fatalf("err = %v, want RequiresReplace", err)
	}
	if !strings.HasPrefix(err.Error(), "Deployment/default/apply-immutable apply failed: ") {
		t.Fatalf("error must name the object first: %v", err)
	}
}

// TestApplyRequiresReplaceStatefulSet: the real apiserver's refusal of a
// change to a StatefulSet's volumeClaimTemplates is recognised by the one
// replace check (diff.IsRequiresReplace) on the dry-run and on the apply
// alike, and nothing is forced. (Older apiservers word this refusal
// differently; engine/diff's TestIsRequiresReplace holds that wording.)
func TestApplyRequiresReplaceStatefulSet(t *testing.T) {
	ctx := context.Background()
	a := newApplier(t)
	cleanup(t, "statefulsets", "apply-sts")
	sts := func(storage string) *unstructured.Unstructured {
		return obj(t, `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"apply-sts","namespace":"default"},
			"spec":{"serviceName":"db","replicas":1,"selector":{"matchLabels":{"app":"apply-sts"}},
			"template":{"metadata":{"labels":{"app":"apply-sts"}},"spec":{"containers":[{"name":"main","image":"registry.example/db:1.0"}]}},
			"volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"`+storage+`"}}}}]}}`)
	}
	if _, err := a.Apply(ctx, apply.Track(sts("1Gi"), "a", "repo-1"), false); err != nil {
		t.Fatal(err)
	}
	changed := apply.Track(sts("5Gi"), "a", "repo-1")
	for _, dryRun := range []bool{true, false} {
		_, err := a.Apply(ctx, changed, dryRun)
		var oe *apply.ObjectError
		if !errors.As(err, &oe) {
			t.Fatalf("dry-run %v: err = %v, want an ObjectError", dryRun, err)
		}
		if !diff.IsRequiresReplace(oe.Err) || !apply.IsRequiresReplace(err) || !oe.RequiresReplace {
			t.Fatalf("dry-run %v: the apiserver's refusal %q is not recognised as RequiresReplace", dryRun, oe.Err)
		}
		if !strings.HasPrefix(err.Error(), "StatefulSet/default/apply-sts ") || !strings.Contains(err.Error(), "delete and re-create") {
			t.Fatalf("dry-run %v: error must name the object first and say what to do: %v", dryRun, err)
		}
	}
	live, err := enginetest.Dynamic(t).Resource(gvr("statefulsets")).Namespace("default").Get(ctx, "apply-sts", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tpls, _, _ := unstructured.NestedSlice(live.Object, "spec", "volumeClaimTemplates")
	if len(tpls) != 1 {
		t.Fatalf("volumeClaimTemplates after the refusal: %v", tpls)
	}
	if s, _, _ := unstructured.NestedString(tpls[0].(map[string]any), "spec", "resources", "requests", "storage"); s != "1Gi" {
		t.Fatalf("storage = %q after the refusal, want 1Gi (nothing forced)", s)
	}
}

// TestOmitIgnored: pointer rules and manager rules take fields out of
// what kdrift applies.
func TestOmitIgnored(t *testing.T) {
	d := obj(t, deployment("omit", 3))
	live := d.DeepCopy()
	live.SetManagedFields([]metav1.ManagedFieldsEntry{{
		Manager: "cloud-controller", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1",
		FieldsType: "FieldsV1",
		FieldsV1:   metav1.NewFieldsV1(`{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{"f:image":{}}}}}}}`),
	}})
	rules := []app.IgnoreRule{
		{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}},
		{Kind: "Service", JSONPointers: []string{"/spec/selector"}},
		{ManagedFieldsManagers: []string{"cloud-controller"}},
	}
	out, err := apply.Omit(d, live, rules)
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(out.Object, "spec", "replicas"); found {
		t.Fatal("spec.replicas must be omitted (pointer rule)")
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(out.Object, "spec", "selector"); !found {
		t.Fatal("spec.selector must stay: the Service rule does not match a Deployment")
	}
	cs, _, _ := unstructured.NestedSlice(out.Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 || cs[0].(map[string]any)["name"] != "main" || cs[0].(map[string]any)["image"] != nil {
		t.Fatalf("containers = %v, want the main container without image (manager rule)", cs)
	}
	if r, _, _ := unstructured.NestedFieldNoCopy(d.Object, "spec", "replicas"); r != float64(3) {
		t.Fatal("Omit must not change its input")
	}
}
