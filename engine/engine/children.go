package engine

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/status"
)

// Kinds whose controllers make a Secret of the same namespace from them.
var (
	sealedSecretKind   = schema.GroupKind{Group: "bitnami.com", Kind: "SealedSecret"}
	externalSecretKind = schema.GroupKind{Group: "external-secrets.io", Kind: "ExternalSecret"}
)

// parentOf finds the object of the app that o was made from: the one its
// controller ownerReference points at (by UID), or, for a Secret, the
// SealedSecret of the same name or the ExternalSecret that targets it
// (those controllers' naming contract, which holds when they set no
// ownerReference). Such an object is its parent's child, not an object
// of its own: never drift, never pruned.
func (p *pass) parentOf(o *unstructured.Unstructured) (status.ObjectRef, bool) {
	for _, or := range o.GetOwnerReferences() {
		if or.Controller == nil || !*or.Controller {
			continue
		}
		for _, d := range p.desired {
			lv := p.live[refKey(live.RefOf(d))]
			if lv != nil && lv.GetUID() == or.UID {
				return live.RefOf(d), true
			}
		}
	}
	if o.GroupVersionKind().GroupKind() != (schema.GroupKind{Kind: "Secret"}) {
		return status.ObjectRef{}, false
	}
	for _, d := range p.desired {
		if d.GetNamespace() != o.GetNamespace() {
			continue
		}
		switch d.GroupVersionKind().GroupKind() {
		case sealedSecretKind:
			if d.GetName() == o.GetName() {
				return live.RefOf(d), true
			}
		case externalSecretKind:
			target, _, _ := unstructured.NestedString(d.Object, "spec", "target", "name")
			if target == "" {
				target = d.GetName()
			}
			if target == o.GetName() {
				return live.RefOf(d), true
			}
		}
	}
	return status.ObjectRef{}, false
}
