package diff

import (
	"fmt"
	"slices"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/status"
)

// Compare compares one object as Git wants it with the cluster and returns
// its status, health and changed fields. Fields are sorted by pointer.
//
// Differences come from the dry-run result against the live object, both
// normalized, so apiserver defaults never count. Fields that exist live,
// that Git does not declare and that a manager other than kdrift owns are
// listed as Extra, since a forced apply leaves them in place (ARCHITECTURE.md,
// "Facts checked on a real kube-apiserver", fact 2); they are drift when a person owns them.
func Compare(in Input) status.ResourceStatus {
	opts := in.Options
	res := status.ResourceStatus{Ref: refOf(in.Desired, in.Live)}
	switch {
	case in.Desired == nil && in.Live == nil:
		res.Status = status.ResourceError
		res.Health = status.HealthUnknown
		res.Message = "nothing to compare: neither a desired nor a live object"
		return res
	case in.Desired == nil:
		res.Status = status.ResourceExtraneous
		setHealth(&res, Judge(in.Live, in.Health))
		return res
	case in.Live == nil && (in.DryRunErr == nil || apierrors.IsNotFound(in.DryRunErr)):
		// Not there yet; a dry-run into a namespace that does not exist
		// yet fails with NotFound, which the apply step fixes by creating
		// the namespace first.
		res.Status = status.ResourceMissing
		setHealth(&res, Judge(nil, nil))
		if in.DryRunErr != nil {
			res.Message = in.DryRunErr.Error()
		}
		return res
	case in.DryRunErr != nil:
		res.Status = status.ResourceError
		if IsRequiresReplace(in.DryRunErr) {
			res.Status = status.ResourceRequiresReplace
		}
		setHealth(&res, Judge(in.Live, in.Health))
		res.Message = in.DryRunErr.Error()
		return res
	}

	own, err := NewOwnership(in.Live, opts)
	if err != nil {
		res.Status = status.ResourceError
		setHealth(&res, Judge(in.Live, in.Health))
		res.Message = fmt.Sprintf("%s: %v", res.Ref, err)
		return res
	}
	live := Normalize(in.Live, opts)
	var want *unstructured.Unstructured
	if in.DryRun != nil {
		want = Normalize(in.DryRun, opts)
	} else {
		merged := mergeOver(in.Live.Object, Normalize(in.Desired, opts).Object).(map[string]any)
		want = Normalize(&unstructured.Unstructured{Object: merged}, opts)
	}

	var raw []change
	walk("", want.Object, live.Object, &raw)
	fields := make([]status.FieldChange, 0, len(raw))
	for _, c := range raw {
		fc := status.FieldChange{Path: c.ptr}
		if c.hasD {
			fc.Desired = c.desired
		}
		switch {
		case c.hasL && isComposite(c.live):
			fc.Live = c.live
			fc.Owners = own.Within(c.ptr)
		case c.hasL:
			fc.Live = c.live
			fc.Owners = own.Of(c.ptr)
		default:
			// Git sets it and it is gone: whoever removed it owns what
			// encloses it.
			fc.Owners = own.removedOwners(in.Live.Object, c.ptr)
		}
		fields = append(fields, fc)
	}
	fields = append(fields, extras(in.Desired, in.Defaulted, in.Live, own, fields, opts)...)

	rules := matchingRules(ExpandJQ(in.Ignore, in.Desired, in.Live), res.Ref)
	secret := res.Ref.Group == "" && res.Ref.Kind == "Secret"
	for i := range fields {
		f := &fields[i]
		if f.Owners == nil {
			f.Owners = []status.Owner{}
		}
		f.Class = TopClass(f.Owners)
		f.Ignored = ignored(rules, f.Path, f.Owners)
		f.Delegated = in.Delegations.Of(res.Ref, f.Path, f.Owners)
		if secret && (underPointer(f.Path, "/data") || underPointer(f.Path, "/stringData")) {
			f.Desired, f.Live, f.Masked = maskValue(f.Desired), maskValue(f.Live), true
		}
	}
	slices.SortFunc(fields, func(a, b status.FieldChange) int { return comparePointers(a.Path, b.Path) })
	res.Fields = fields
	setHealth(&res, Judge(in.Live, in.Health))
	res.Status = status.ResourceSynced
	for _, f := range fields {
		if f.IsDrift() {
			res.Status = status.ResourceOutOfSync
			break
		}
		if f.Ignored {
			res.Status = status.ResourceIgnored
		}
	}
	if len(res.Fields) == 0 {
		res.Fields = nil
	}
	return res
}

// setHealth records a judgement on a result.
func setHealth(res *status.ResourceStatus, d status.HealthDetail) {
	res.Health = d.Status
	res.HealthDetail = &d
}

// JudgeInto sets a result's Health and HealthDetail from Judge.
func JudgeInto(res *status.ResourceStatus, live *unstructured.Unstructured, checks *HealthChecks) {
	setHealth(res, Judge(live, checks))
}

// extras finds live fields Git does not declare that a manager other than
// kdrift owns, at the shallowest owned level (a whole env var, a whole
// ConfigMap key), skipping bookkeeping and fields already listed.
func extras(desired, defaulted, live *unstructured.Unstructured, own *Ownership, listed []status.FieldChange, opts Options) []status.FieldChange {
	var out []status.FieldChange
	covered := func(ptr string) bool {
		for _, f := range listed {
			if underPointer(ptr, f.Path) || underPointer(f.Path, ptr) {
				return true
			}
		}
		for _, f := range out {
			if underPointer(ptr, f.Path) {
				return true
			}
		}
		return false
	}
	for _, e := range own.entries {
		if e.owner.Class == status.OwnerKdrift {
			continue
		}
		for i, ptr := range e.pointers {
			if ptr == "" || bookkeeping(ptr, opts) || covered(ptr) {
				continue
			}
			if declared(desired.Object, e.paths[i]) {
				continue
			}
			// A map that only holds owned keys is reported key by key; a
			// list element (an env var) or an atomic map is one field.
			if last := e.paths[i][len(e.paths[i])-1]; last.FieldName != nil && !own.isLeaf(ptr) {
				if _, isMap := mapAt(live.Object, ptr); isMap {
					continue
				}
			}
			v, ok := ValueAt(live.Object, ptr)
			if !ok {
				continue
			}
			if apiserverSet(live, defaulted, e.paths[i], ptr, v) {
				continue // the apiserver's value, recorded under its writer
			}
			out = append(out, status.FieldChange{Path: ptr, Live: v, Owners: own.Within(ptr), Extra: true})
		}
	}
	return out
}

func isComposite(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// MaskedValue replaces Secret values wherever kdrift shows them.
const MaskedValue = "*** (masked)"

func maskValue(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k := range x {
			out[k] = MaskedValue
		}
		return out
	}
	return MaskedValue
}

func refOf(desired, live *unstructured.Unstructured) status.ObjectRef {
	obj := desired
	if obj == nil {
		obj = live
	}
	if obj == nil {
		return status.ObjectRef{}
	}
	gvk := obj.GroupVersionKind()
	return status.ObjectRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// comparePointers orders pointers token by token, list indices
// numerically, so /a/2 comes before /a/10.
func comparePointers(a, b string) int {
	ta, tb := SplitPointer(a), SplitPointer(b)
	for i := 0; i < len(ta) && i < len(tb); i++ {
		if ta[i] == tb[i] {
			continue
		}
		na, ea := strconv.Atoi(ta[i])
		nb, eb := strconv.Atoi(tb[i])
		if ea == nil && eb == nil && na != nb {
			if na < nb {
				return -1
			}
			return 1
		}
		if ta[i] < tb[i] {
			return -1
		}
		return 1
	}
	return len(ta) - len(tb)
}

func mapAt(obj map[string]any, ptr string) (map[string]any, bool) {
	v, ok := ValueAt(obj, ptr)
	if !ok {
		return nil, false
	}
	m, ok := v.(map[string]any)
	return m, ok
}

// NeedsDefaults reports whether a comparison found extra fields (not in
// Git, owned by a manager other than kdrift), which may be defaults
// recorded under whoever wrote the object, by Apply or Update, whatever
// its class; Compare again with Input.Defaulted to tell.
func NeedsDefaults(r status.ResourceStatus) bool {
	for _, f := range r.Fields {
		if f.Extra && !f.Ignored {
			return true
		}
	}
	return false
}
