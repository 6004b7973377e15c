package apply

import (
	"context"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/app"
)

// Phase is a step of an ordered apply: everything in one phase is applied
// before the next starts.
type Phase int

// Phases, in the order they run.
const (
	// PhaseFoundation holds Namespaces and CRDs: other objects need them.
	PhaseFoundation Phase = iota
	// PhaseRest holds everything else.
	PhaseRest
)

// crdGK is the CustomResourceDefinition kind.
var crdGK = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// PhaseOf says in which phase obj is applied.
func PhaseOf(obj *unstructured.Unstructured) Phase {
	gk := obj.GroupVersionKind().GroupKind()
	if gk == crdGK || (gk.Group == "" && gk.Kind == "Namespace") {
		return PhaseFoundation
	}
	return PhaseRest
}

// SyncWaveAnnotation is the first registered tool's wave annotation
// (app.WaveAnnotations: Argo CD's argocd.argoproj.io/sync-wave, which
// kdrift's own Apps use too): lower waves first, 0 when absent or not an
// integer.
var SyncWaveAnnotation = app.WaveAnnotations()[0]

// Wave returns obj's wave (app.Wave).
func Wave(obj *unstructured.Unstructured) int { return app.Wave(obj) }

// Order sorts objs stably: by sync wave (ascending), then Namespaces, then
// CRDs, then the rest in their given order. Pure.
func Order(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	rank := func(o *unstructured.Unstructured) int {
		gk := o.GroupVersionKind().GroupKind()
		switch {
		case gk.Group == "" && gk.Kind == "Namespace":
			return 0
		case gk == crdGK:
			return 1
		}
		return 2
	}
	out := append([]*unstructured.Unstructured(nil), objs...)
	sort.SliceStable(out, func(i, j int) bool {
		if wi, wj := Wave(out[i]), Wave(out[j]); wi != wj {
			return wi < wj
		}
		return rank(out[i]) < rank(out[j])
	})
	return out
}

// WaitEstablished waits until every CRD among objs reports the condition
// Established, then resets the RESTMapper so their kinds resolve. It is a
// no-op when objs hold no CRD.
func (a *Applier) WaitEstablished(ctx context.Context, objs []*unstructured.Unstructured) error {
	var crds []*unstructured.Unstructured
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() == crdGK {
			crds = append(crds, o)
		}
	}
	if len(crds) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, a.opts.CRDTimeout)
	defer cancel()
	for _, crd := range crds {
		ref := RefOf(crd)
		ri, err := a.resource(crd.GroupVersionKind(), "")
		if err != nil {
			return newObjectError(ref, "wait for Established", err)
		}
		for {
			live, err := ri.Get(ctx, crd.GetName(), getOpts)
			if err == nil && established(live) {
				break
			}
			select {
			case <-ctx.Done():
				if err == nil {
					err = fmt.Errorf("not Established after %s", a.opts.CRDTimeout)
				}
				return newObjectError(ref, "wait for Established", err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	if r, ok := a.mapper.(meta.ResettableRESTMapper); ok {
		r.Reset()
	}
	return nil
}

// established reads the Established condition of a live CRD.
func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

var getOpts = metav1.GetOptions{}
