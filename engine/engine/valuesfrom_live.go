package engine

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/app"
)

// liveValuesFrom returns the valuesFrom of App a's HelmRelease that kdrift
// may read, on cluster cl, in namespace ns: only those the live
// HelmRelease of that name and namespace names itself. kdrift reads with
// the person's (or the controller's) credentials, so a commit must not
// choose which cluster Secret it reads and where the value goes: what
// helm-controller reads is what the object it reconciles names, and a
// HelmRelease that exists only in Git names nothing yet. A reference Git
// adds before Flux applied it is an error naming it.
func liveValuesFrom(ctx context.Context, a app.App, cl *cluster, ns string) ([]app.ValuesFrom, error) {
	name := a.Metadata.Name
	if a.Origin != nil && a.Origin.Name != "" {
		name = a.Origin.Name
	}
	gvr := schema.GroupVersionResource{Group: fluxHelmReleaseGVK.Group, Version: fluxHelmReleaseGVK.Version, Resource: "helmreleases"}
	obj, err := cl.cs.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("spec.valuesFrom: HelmRelease %s/%s is not in the cluster; kdrift reads a release's valuesFrom only for a HelmRelease that exists live, and only what that live object names, as helm-controller does (let Flux apply it, then compare)", ns, name)
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("spec.valuesFrom: HelmRelease %s/%s cannot be read, and kdrift reads valuesFrom only for a live HelmRelease (grant get on helmreleases in %s)", ns, name, ns)
	case err != nil:
		return nil, fmt.Errorf("spec.valuesFrom: HelmRelease %s/%s cannot be read: %w", ns, name, err)
	}
	liveRefs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "valuesFrom")
	named := func(ref app.ValuesFrom) bool {
		for _, l := range liveRefs {
			m, _ := l.(map[string]any)
			kind, _ := m["kind"].(string)
			n, _ := m["name"].(string)
			key, _ := m["valuesKey"].(string)
			target, _ := m["targetPath"].(string)
			if kind == ref.Kind && n == ref.Name && key == ref.ValuesKey && target == ref.TargetPath {
				return true
			}
		}
		return false
	}
	for i, ref := range a.Spec.Helm.ValuesFrom {
		if !named(ref) {
			return nil, fmt.Errorf("spec.valuesFrom[%d]: %s %s/%s is not named by the live HelmRelease %s/%s; kdrift reads only what the live object names, as helm-controller does (let Flux apply this change, then compare)", i, ref.Kind, ns, ref.Name, ns, name)
		}
	}
	return a.Spec.Helm.ValuesFrom, nil
}
