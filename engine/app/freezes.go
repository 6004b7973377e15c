package app

import (
	"fmt"
	"strings"
	"time"
)

// ResourceRef names one object an App renders, as a freeze records it. An
// empty Group is the core group; an empty Namespace is the App's
// destination namespace (or a cluster-scoped object).
type ResourceRef struct {
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String renders the reference as KIND[.GROUP]/[NAMESPACE/]NAME, the form
// `kdrift freeze --resource` takes (with --namespace).
func (r ResourceRef) String() string {
	s := r.Kind
	if r.Group != "" {
		s += "." + r.Group
	}
	s += "/"
	if r.Namespace != "" {
		s += r.Namespace + "/"
	}
	return s + r.Name
}

// Matches reports whether the reference names the object group, kind,
// namespace, name of an App whose destination namespace is destNS.
func (r ResourceRef) Matches(group, kind, namespace, name, destNS string) bool {
	if r.Group != group || r.Kind != kind || r.Name != name {
		return false
	}
	if r.Namespace == "" {
		if destNS == "" {
			destNS = "default"
		}
		return namespace == "" || namespace == destNS
	}
	return r.Namespace == namespace
}

// ResourceQuery is an object reference as a person types it, the way
// kubectl takes it (deploy/web, Deployment/web, deployments.apps/web,
// Deployment.v1.apps/web), before it is resolved against the objects an App
// renders into a ResourceRef with its group and namespace.
type ResourceQuery struct {
	// Kind is the kind, its plural or a short name, in any case.
	Kind string
	// Group is the API group when GroupGiven; without one the group is
	// whatever the App's objects of that kind have.
	Group      string
	GroupGiven bool
	// Namespace is the namespace given (-n); empty is any namespace the
	// App's objects of that kind and name are in.
	Namespace string
	Name      string
}

// String renders the query as it was typed, with its namespace.
func (q ResourceQuery) String() string {
	s := q.Kind
	if q.GroupGiven {
		s += "." + q.Group
	}
	s += "/"
	if q.Namespace != "" {
		s += q.Namespace + "/"
	}
	return s + q.Name
}

// ParseResourceQuery reads KIND[.[VERSION.]GROUP]/NAME as kubectl does
// (deploy/web, Deployment.apps/web, deployments.v1.apps/web) and an
// optional namespace.
func ParseResourceQuery(s, namespace string) (ResourceQuery, error) {
	kg, name, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok || kg == "" || name == "" || strings.Contains(name, "/") {
		return ResourceQuery{}, fmt.Errorf("--resource %q: want KIND[.GROUP]/NAME, such as Deployment.apps/render-worker, deploy/render-worker or ConfigMap/settings (give the namespace with --namespace)", s)
	}
	kind, group, given := strings.Cut(kg, ".")
	if kind == "" || (given && group == "") {
		return ResourceQuery{}, fmt.Errorf("--resource %q: want KIND[.GROUP]/NAME, such as Deployment.apps/render-worker", s)
	}
	if given {
		// kubectl's RESOURCE.VERSION.GROUP: the version picks no object.
		if v, rest, ok := strings.Cut(group, "."); ok && isVersion(v) {
			group = rest
		} else if isVersion(group) {
			group = ""
		}
	}
	return ResourceQuery{Kind: kind, Group: group, GroupGiven: given, Namespace: strings.TrimSpace(namespace), Name: name}, nil
}

// isVersion reports whether s is an API version such as v1 or v2beta1.
func isVersion(s string) bool {
	if len(s) < 2 || s[0] != 'v' || s[1] < '1' || s[1] > '9' {
		return false
	}
	rest := strings.TrimLeft(s[1:], "0123456789")
	for _, p := range []string{"alpha", "beta"} {
		if strings.HasPrefix(rest, p) {
			n := strings.TrimPrefix(rest, p)
			return n != "" && strings.Trim(n, "0123456789") == ""
		}
	}
	return rest == ""
}

// ResourceFreeze holds one resource of an App, or only some of its fields,
// with an audited reason: self-heal leaves those fields (or the whole
// object) as they are live and prune never deletes the object, while the
// rest of the App keeps healing.
type ResourceFreeze struct {
	Resource ResourceRef `json:"resource"`
	// Fields are JSON pointers (RFC 6901) of the frozen fields; empty
	// freezes the whole resource.
	Fields []string   `json:"fields,omitempty"`
	Reason string     `json:"reason"`
	By     string     `json:"by"`
	At     time.Time  `json:"at"`
	Until  *time.Time `json:"until,omitempty"`
}

// Mark is the freeze's who, why, since and until, as an app freeze carries
// them; status marks frozen drift with it.
func (f ResourceFreeze) Mark() *Freeze {
	return &Freeze{Reason: f.Reason, By: f.By, At: f.At, Until: f.Until}
}

// ActiveAt reports whether the freeze still holds at t.
func (f ResourceFreeze) ActiveAt(t time.Time) bool {
	return f.Until == nil || t.Before(*f.Until)
}

// Whole reports whether the freeze holds the whole resource.
func (f ResourceFreeze) Whole() bool { return len(f.Fields) == 0 }

// Covers reports whether the JSON pointer ptr is a frozen field or inside
// one (always, for a whole-resource freeze).
func (f ResourceFreeze) Covers(ptr string) bool {
	if f.Whole() {
		return true
	}
	for _, p := range f.Fields {
		if ptr == p || strings.HasPrefix(ptr, p+"/") {
			return true
		}
	}
	return false
}

// FreezesOf returns the freezes of the App that hold the object at t.
func (a App) FreezesOf(group, kind, namespace, name string, t time.Time) []ResourceFreeze {
	var out []ResourceFreeze
	for _, f := range a.Spec.Freezes {
		if f.ActiveAt(t) && f.Resource.Matches(group, kind, namespace, name, a.Spec.Destination.Namespace) {
			out = append(out, f)
		}
	}
	return out
}

// validateFreezes checks spec.freezes: a named resource, well-formed and
// distinct pointers that do not freeze the whole object by accident, the
// audit fields, an end after the start, and no resource frozen twice.
func validateFreezes(a App, mk func(field, problem, fix string) error) []error {
	var errs []error
	seen := map[ResourceRef][]int{}
	for i, f := range a.Spec.Freezes {
		field := fmt.Sprintf("spec.freezes[%d]", i)
		r := f.Resource
		if strings.TrimSpace(r.Kind) == "" {
			errs = append(errs, mk(field+".resource.kind", "is missing", "name the kind of the frozen object, such as Deployment"))
		}
		if strings.TrimSpace(r.Name) == "" {
			errs = append(errs, mk(field+".resource.name", "is missing", "name the frozen object"))
		}
		// One resource may have several entries (fields frozen at
		// different times, for different reasons), but never the same
		// field twice nor a whole-resource freeze beside another.
		for _, j := range seen[r] {
			o := a.Spec.Freezes[j]
			switch {
			case o.Whole() || f.Whole():
				errs = append(errs, mk(field+".resource", fmt.Sprintf("%s is already frozen by spec.freezes[%d], and one of the two freezes the whole resource", r, j), "keep one entry for a whole-resource freeze"))
			default:
				for _, p := range f.Fields {
					if o.Covers(p) {
						errs = append(errs, mk(field+".fields", fmt.Sprintf("%s is already frozen by spec.freezes[%d]", p, j), "freeze each field once"))
					}
				}
			}
		}
		seen[r] = append(seen[r], i)
		dup := map[string]bool{}
		for j, p := range f.Fields {
			pf := fmt.Sprintf("%s.fields[%d]", field, j)
			switch err := CheckJSONPointer(p); {
			case err != nil:
				errs = append(errs, mk(pf, err.Error(), "write an RFC 6901 pointer such as /spec/replicas (~0 for '~', ~1 for '/')"))
			case p == "" || p == "/":
				errs = append(errs, mk(pf, "names the whole object", "leave fields out to freeze the whole resource, or name a field such as /spec/replicas"))
			case p == "/metadata" || strings.HasPrefix(p, "/metadata/name") || p == "/metadata/namespace" || p == "/kind" || p == "/apiVersion":
				errs = append(errs, mk(pf, fmt.Sprintf("%q identifies the object and cannot be frozen", p), "freeze a field of the object's spec, labels or annotations"))
			case p == "/metadata/annotations" || p == "/metadata/labels":
				errs = append(errs, mk(pf, fmt.Sprintf("%q would freeze kdrift's own tracking labels and annotations too", p), "freeze one key, such as "+p+"/note"))
			case dup[p]:
				errs = append(errs, mk(pf, fmt.Sprintf("%q is given twice", p), "keep one"))
			}
			dup[p] = true
		}
		if strings.TrimSpace(f.Reason) == "" {
			errs = append(errs, mk(field+".reason", "is blank", "say why it is frozen (use `kdrift freeze --resource … --reason`)"))
		}
		if strings.TrimSpace(f.By) == "" {
			errs = append(errs, mk(field+".by", "is missing", "record who froze it (use `kdrift freeze --resource`)"))
		}
		if f.At.IsZero() {
			errs = append(errs, mk(field+".at", "is missing", "set when the freeze started, an RFC 3339 time (use `kdrift freeze --resource`)"))
		}
		if f.Until != nil && !f.At.IsZero() && !f.Until.After(f.At) {
			errs = append(errs, mk(field+".until", fmt.Sprintf("%s is not after at %s", f.Until.Format(time.RFC3339), f.At.Format(time.RFC3339)), "set until after at, or remove it"))
		}
	}
	return errs
}
