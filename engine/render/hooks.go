package render

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// HookAnnotations mark an object as a hook of Argo CD or Helm: a Job or Pod
// that engine runs around a sync (PreSync, pre-install, test, ...). kdrift
// runs no hooks, so a hook is never compared, applied, healed, pruned or
// counted as drift.
var HookAnnotations = []string{"argocd.argoproj.io/hook", "helm.sh/hook"}

// IsHook reports whether obj carries one of HookAnnotations.
func IsHook(obj *unstructured.Unstructured) bool {
	ann := obj.GetAnnotations()
	for _, a := range HookAnnotations {
		if _, ok := ann[a]; ok {
			return true
		}
	}
	return false
}

// WithoutHooks returns objs without the hooks, and how many it left out.
func WithoutHooks(objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, int) {
	out := objs[:0:0]
	for _, o := range objs {
		if !IsHook(o) {
			out = append(out, o)
		}
	}
	return out, len(objs) - len(out)
}
