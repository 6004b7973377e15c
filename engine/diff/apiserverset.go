package diff

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"kdrift.dev/kdrift/engine/status"
)

// namespaceNameLabel is the label the apiserver puts on every Namespace,
// holding its name.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// apiserverSet reports whether an extra live field (not declared in Git)
// holds a value the apiserver sets itself, whoever's managedFields entry
// it falls under: a default of the desired object as a dry-run create
// gives it (defaulted, nil when unknown), or the Namespace name label.
// An object written by Update (client-side apply, Helm, kubectl create)
// leaves its writer owning all of these (ARCHITECTURE.md, "Facts checked
// on a real kube-apiserver", facts 7 and 10); none is anyone's drift.
func apiserverSet(live, defaulted *unstructured.Unstructured, p fieldpath.Path, ptr string, v any) bool {
	if gvk := live.GroupVersionKind(); gvk.Group == "" && gvk.Kind == "Namespace" && ptr == join("/metadata/labels", namespaceNameLabel) {
		return v == live.GetName()
	}
	if defaulted == nil {
		return false
	}
	dv, ok := valueAtPath(defaulted.Object, p)
	return ok && equalValues(dv, v)
}

// removedOwners names who took away a field Git sets that is not live:
// the owners of the nearest enclosing field that is live when it is
// atomic (a RoleBinding's subjects, owned whole by whoever last wrote
// it), else the managers other than kdrift that own that enclosing list
// or map. Nil when nobody but kdrift is there to name.
func (o *Ownership) removedOwners(live map[string]any, ptr string) []status.Owner {
	if o == nil {
		return nil
	}
	for p := parent(ptr); ; p = parent(p) {
		if _, present := ValueAt(live, p); present && p != "" {
			if idx := o.leaves[p]; len(idx) > 0 {
				return o.owners(idx)
			}
			var out []status.Owner
			for _, ow := range o.owners(o.members[p]) {
				if ow.Class != status.OwnerKdrift {
					out = append(out, ow)
				}
			}
			return out
		}
		if p == "" {
			return nil
		}
	}
}
