package engine

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/status"
)

// Kinds whose controllers make a Secret of the same namespace from them.
var (
	sealedSecretKind   = schema.GroupKind{Group: "bitnami.com", Kind: "SealedSecret"}
	externalSecretKind = schema.GroupKind{Group: "external-secrets.io", Kind: "ExternalSecret"}
	secretKind         = schema.GroupKind{Kind: "Secret"}
)

// secretControllers are, by the kind they read, the field managers their
// controllers write Secrets as: sealed-secrets' own name, or client-go's
// default (the program's name, "controller" in its image); external-secrets'
// server-side apply owner.
var secretControllers = map[schema.GroupKind][]string{
	sealedSecretKind:   {"sealed-secrets-controller", "controller"},
	externalSecretKind: {"external-secrets"},
}

// parentOf finds the object of the app that o was made from: the one its
// controller ownerReference points at (by UID), or, for a Secret written
// by the sealed-secrets or external-secrets controller (by its field
// manager), the SealedSecret of the same name or the ExternalSecret that
// targets it (those controllers' naming contract). Such an object is its
// parent's child, not an object of its own: never drift, never pruned.
func (p *pass) parentOf(o *unstructured.Unstructured) (status.ObjectRef, bool) {
	for _, or := range o.GetOwnerReferences() {
		if or.Controller == nil || !*or.Controller || or.UID == "" {
			continue
		}
		for _, d := range p.desired {
			lv := p.live[refKey(live.RefOf(d))]
			if lv != nil && lv.GetUID() == or.UID {
				return live.RefOf(d), true
			}
		}
	}
	if o.GroupVersionKind().GroupKind() != secretKind {
		return status.ObjectRef{}, false
	}
	for _, d := range p.desired {
		gk := d.GroupVersionKind().GroupKind()
		if d.GetNamespace() != o.GetNamespace() || secretControllers[gk] == nil {
			continue
		}
		if secretTarget(d) == o.GetName() && managedBy(o, secretControllers[gk]) {
			return live.RefOf(d), true
		}
	}
	return status.ObjectRef{}, false
}

// secretTarget is the name of the Secret a SealedSecret or ExternalSecret
// makes: the SealedSecret's own name, the ExternalSecret's
// spec.target.name (its own name when unset); "" for any other kind.
func secretTarget(d *unstructured.Unstructured) string {
	switch d.GroupVersionKind().GroupKind() {
	case sealedSecretKind:
		return d.GetName()
	case externalSecretKind:
		if target, _, _ := unstructured.NestedString(d.Object, "spec", "target", "name"); target != "" {
			return target
		}
		return d.GetName()
	}
	return ""
}

// managedBy says whether one of managers wrote fields of o.
func managedBy(o *unstructured.Unstructured, managers []string) bool {
	for _, mf := range o.GetManagedFields() {
		for _, m := range managers {
			if mf.Manager == m {
				return true
			}
		}
	}
	return false
}

// generatedSecrets finds the Secrets the app's SealedSecrets and
// ExternalSecrets made that kdrift does not track (an ExternalSecret's
// Secret carries none of its labels), so they are shown under their
// parent too. seen holds the objects already in the results. A Secret
// that cannot be read (no permission to read Secrets) is simply not shown:
// it is no object of the app either way.
func (p *pass) generatedSecrets(ctx context.Context, seen map[string]bool) []status.ResourceStatus {
	var out []status.ResourceStatus
	for _, d := range p.desired {
		name := secretTarget(d)
		if name == "" {
			continue
		}
		ref := status.ObjectRef{Version: "v1", Kind: "Secret", Namespace: d.GetNamespace(), Name: name}
		key := refKey(ref)
		if seen[key] {
			continue
		}
		// One GET by name: it needs no list or watch permission on
		// Secrets, and no informer over every Secret of the namespace.
		lv, err := p.cl.cs.Get(ctx, ref)
		if err != nil || lv == nil {
			continue
		}
		parent, ok := p.parentOf(lv)
		if !ok || parent != live.RefOf(d) {
			continue
		}
		seen[key] = true
		r := p.judged(ref, status.ResourceGenerated, lv)
		r.Parent = &parent
		out = append(out, r)
	}
	return out
}
