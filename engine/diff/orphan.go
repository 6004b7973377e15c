package diff

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/status"
)

// Creator returns the manager that created a live object: the
// managedFields entry (status subresource aside) with the oldest time,
// entries without a time after those with one. The apiserver keeps no
// other record of who made an object. ok is false when there is none.
func Creator(obj *unstructured.Unstructured, opts Options) (status.Owner, bool) {
	var best *status.Owner
	for _, e := range obj.GetManagedFields() {
		if e.Subresource == "status" {
			continue
		}
		o := status.Owner{Manager: e.Manager, Operation: string(e.Operation), Subresource: e.Subresource, Class: opts.Classify(e.Manager)}
		if e.Time != nil {
			t := e.Time.Time
			o.Time = &t
		}
		if best == nil || (o.Time != nil && (best.Time == nil || o.Time.Before(*best.Time))) {
			best = &o
		}
	}
	if best == nil {
		return status.Owner{}, false
	}
	return *best, true
}

// IsOrphan reports whether a live object that no App renders is an orphan,
// and who created it: it has no controller ownerReference (a ReplicaSet's
// Pods are not) and its creator is neither a controller (the ServiceAccount and root CA ConfigMap the cluster puts
// in every namespace are not) nor Git. An object with no managedFields has no
// known creator and counts.
func IsOrphan(obj *unstructured.Unstructured, opts Options) (status.Owner, bool) {
	for _, r := range obj.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller {
			return status.Owner{}, false
		}
	}
	c, ok := Creator(obj, opts)
	if !ok {
		return status.Owner{Class: status.OwnerDefaulted}, true
	}
	if c.Class == status.OwnerController || IsGit(c.Class) {
		return c, false
	}
	return c, true
}
