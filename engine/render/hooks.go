package render

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// HelmHookAnnotation marks a chart's template as a Helm hook (pre-install,
// test, ...). A helmCharts entry of a kustomization with skipHooks or
// skipTests leaves the hooks out of its chart's output, as `helm template
// --no-hooks` does. The GitOps tools' own hooks (Argo CD's, and Helm's
// for a HelmRelease) are left out of every App's objects by the engine
// (app.WithoutHooks), whatever renders them.
const HelmHookAnnotation = "helm.sh/hook"

// withoutHelmHooks returns objs without Helm's hooks.
func withoutHelmHooks(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := objs[:0:0]
	for _, o := range objs {
		if _, hook := o.GetAnnotations()[HelmHookAnnotation]; !hook {
			out = append(out, o)
		}
	}
	return out
}
