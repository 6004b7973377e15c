package diff

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/status"
)

// Delegator is a kind of scaler or delivery controller that writes fields
// of other objects: an HPA scales its scaleTargetRef, Flagger scales the
// Canary's targetRef to zero and repoints its Service, Argo Rollouts
// scales the Rollout's workloadRef down and adds its pod-template hash to
// its Services' selectors. Such a field is delegated when both hold: an
// object of this kind in the app points at the object, and one of
// Managers owns the field in managedFields.
type Delegator struct {
	// Kind is the controller's object ("HorizontalPodAutoscaler").
	Kind schema.GroupKind
	// Managers are the field managers its controller writes as.
	Managers []string
	// claims lists the objects it points at and the fields it takes.
	claims func(*unstructured.Unstructured) []claim
}

// claim is one object a delegator points at and the fields (JSON pointer
// patterns, "*" for one token) its controller writes there.
type claim struct {
	target schema.GroupKind
	name   string
	fields []string
}

var (
	deploymentGK = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	serviceGK    = schema.GroupKind{Kind: "Service"}
	replicas     = []string{"/spec/replicas"}
)

// Delegators are the controllers whose fields are delegated by default.
// The manager names are those the controllers write as: the HPA
// controller runs in kube-controller-manager (also for the HPA KEDA
// makes), KEDA's operator as keda-operator, Flagger as flagger, Argo
// Rollouts as rollouts-controller, the VPA's parts as vpa-*.
var Delegators = []Delegator{
	{Kind: schema.GroupKind{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}, Managers: []string{"kube-controller-manager"},
		claims: func(o *unstructured.Unstructured) []claim {
			return refClaim(o, replicas, deploymentGK, "spec", "scaleTargetRef")
		}},
	{Kind: schema.GroupKind{Group: "keda.sh", Kind: "ScaledObject"}, Managers: []string{"keda-operator", "keda", "kube-controller-manager"},
		claims: func(o *unstructured.Unstructured) []claim {
			return refClaim(o, replicas, deploymentGK, "spec", "scaleTargetRef")
		}},
	{Kind: schema.GroupKind{Group: "autoscaling.k8s.io", Kind: "VerticalPodAutoscaler"}, Managers: []string{"vpa-updater", "vpa-admission-controller", "vpa-recommender"},
		claims: func(o *unstructured.Unstructured) []claim {
			return refClaim(o, []string{"/spec/template/spec/containers/*/resources", "/spec/template/spec/initContainers/*/resources"}, deploymentGK, "spec", "targetRef")
		}},
	{Kind: schema.GroupKind{Group: "flagger.app", Kind: "Canary"}, Managers: []string{"flagger"},
		claims: func(o *unstructured.Unstructured) []claim {
			out := refClaim(o, replicas, deploymentGK, "spec", "targetRef")
			// Flagger points the apex Service (spec.service.name, the
			// target's name by default) at the primary.
			svc := str(o, "spec", "service", "name")
			if svc == "" {
				svc = str(o, "spec", "targetRef", "name")
			}
			if svc != "" {
				out = append(out, claim{target: serviceGK, name: svc, fields: []string{"/spec/selector"}})
			}
			return out
		}},
	{Kind: schema.GroupKind{Group: "argoproj.io", Kind: "Rollout"}, Managers: []string{"rollouts-controller", "argo-rollouts"},
		claims: func(o *unstructured.Unstructured) []claim {
			out := refClaim(o, replicas, deploymentGK, "spec", "workloadRef")
			for _, path := range [][]string{
				{"spec", "strategy", "canary", "canaryService"}, {"spec", "strategy", "canary", "stableService"},
				{"spec", "strategy", "blueGreen", "activeService"}, {"spec", "strategy", "blueGreen", "previewService"},
			} {
				if name := str(o, path...); name != "" {
					out = append(out, claim{target: serviceGK, name: name, fields: []string{"/spec/selector/rollouts-pod-template-hash"}})
				}
			}
			return out
		}},
}

// refClaim reads a {apiVersion, kind, name} reference at path; kind
// defaults to def (KEDA's scaleTargetRef may omit it).
func refClaim(o *unstructured.Unstructured, fields []string, def schema.GroupKind, path ...string) []claim {
	name := str(o, append(path, "name")...)
	if name == "" {
		return nil
	}
	gk := def
	if k := str(o, append(path, "kind")...); k != "" {
		gv, _ := schema.ParseGroupVersion(str(o, append(path, "apiVersion")...))
		gk = schema.GroupKind{Group: gv.Group, Kind: k}
		if gk.Group == "" && (k == "Deployment" || k == "StatefulSet" || k == "ReplicaSet") {
			gk.Group = "apps" // a reference without apiVersion
		}
	}
	return []claim{{target: gk, name: name, fields: fields}}
}

// Delegations are the claims the delegators among an app's objects make.
type Delegations struct {
	byTarget map[delegationKey][]delegationClaim
}

type delegationKey struct {
	gk        schema.GroupKind
	namespace string
	name      string
}

type delegationClaim struct {
	by       status.ObjectRef
	managers []string
	fields   []string
}

// FindDelegations collects what the delegators among objs (an app's
// live objects, or as Git has them where not live yet) claim. Nil when
// none claims anything.
func FindDelegations(objs []*unstructured.Unstructured) *Delegations {
	var d *Delegations
	for _, o := range objs {
		if o == nil {
			continue
		}
		gk := o.GroupVersionKind().GroupKind()
		for _, del := range Delegators {
			if del.Kind != gk {
				continue
			}
			for _, c := range del.claims(o) {
				if d == nil {
					d = &Delegations{byTarget: map[delegationKey][]delegationClaim{}}
				}
				k := delegationKey{gk: c.target, namespace: o.GetNamespace(), name: c.name}
				d.byTarget[k] = append(d.byTarget[k], delegationClaim{by: refOf(o, nil), managers: del.Managers, fields: c.fields})
			}
		}
	}
	return d
}

// Of says who a field is delegated to: a claim on the object covers the
// field and one of the claimant's managers owns it. Nil when not.
func (d *Delegations) Of(ref status.ObjectRef, ptr string, owners []status.Owner) *status.Delegation {
	if d == nil {
		return nil
	}
	for _, c := range d.byTarget[delegationKey{gk: schema.GroupKind{Group: ref.Group, Kind: ref.Kind}, namespace: ref.Namespace, name: ref.Name}] {
		if !slices.ContainsFunc(c.fields, func(p string) bool { return pointerUnder(ptr, p) }) {
			continue
		}
		for _, o := range owners {
			if slices.Contains(c.managers, o.Manager) {
				return &status.Delegation{Controller: c.by, Manager: o.Manager}
			}
		}
	}
	return nil
}

// pointerUnder reports whether ptr is the pattern's field or inside it;
// a "*" token of the pattern matches any one token.
func pointerUnder(ptr, pattern string) bool {
	pt, pp := SplitPointer(ptr), SplitPointer(pattern)
	if len(pt) < len(pp) {
		return false
	}
	for i, tok := range pp {
		if tok != "*" && tok != pt[i] {
			return false
		}
	}
	return true
}

// Delegate marks the fields of a result that are delegated (d may be
// nil) and, when nothing else differs, makes an OutOfSync result Synced
// (or Ignored). Fields is copied, never changed in place: results are
// kept between passes.
func Delegate(res *status.ResourceStatus, d *Delegations) {
	if d == nil || len(res.Fields) == 0 {
		return
	}
	var fields []status.FieldChange
	for i, f := range res.Fields {
		del := d.Of(res.Ref, f.Path, f.Owners)
		if del == nil {
			continue
		}
		if fields == nil {
			fields = slices.Clone(res.Fields)
		}
		fields[i].Delegated = del
	}
	if fields == nil {
		return
	}
	res.Fields = fields
	if res.Status != status.ResourceOutOfSync {
		return
	}
	res.Status = status.ResourceSynced
	for _, f := range fields {
		if f.IsDrift() {
			res.Status = status.ResourceOutOfSync
			return
		}
		if f.Ignored {
			res.Status = status.ResourceIgnored
		}
	}
}

// DelegatedPointers are the fields of a result that are delegated.
func DelegatedPointers(res status.ResourceStatus) []string {
	var out []string
	for _, f := range res.Fields {
		if f.Delegated != nil {
			out = append(out, f.Path)
		}
	}
	return out
}
