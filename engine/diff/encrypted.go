package diff

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/status"
)

// CompareEncrypted compares an object kdrift could not decrypt with the
// cluster by what it can see: the key names under data and stringData,
// the type, and the labels and annotations Git sets. Values are never
// compared or shown. The status is Encrypted whatever differs; why (the
// file, its recipients, where kdrift looked for keys) starts the message.
func CompareEncrypted(desired, live *unstructured.Unstructured, why string) status.ResourceStatus {
	res := status.ResourceStatus{Ref: refOf(desired, live), Status: status.ResourceEncrypted, Message: why}
	if live == nil {
		setHealth(&res, Judge(nil, nil))
		res.Message += "; not in the cluster under this name (a generated name depends on the decrypted content)"
		return res
	}
	setHealth(&res, Judge(live, nil))
	want := keyNames(desired, "data", "stringData")
	have := keyNames(live, "data", "stringData")
	for _, k := range want {
		if !slices.Contains(have, k) {
			res.Fields = append(res.Fields, status.FieldChange{Path: join("/data", k), Desired: MaskedValue, Masked: true, Owners: []status.Owner{}, Class: status.OwnerDefaulted})
		}
	}
	for _, k := range have {
		if !slices.Contains(want, k) {
			res.Fields = append(res.Fields, status.FieldChange{Path: join("/data", k), Live: MaskedValue, Masked: true, Extra: true, Owners: []status.Owner{}, Class: status.OwnerDefaulted})
		}
	}
	if dt, _, _ := unstructured.NestedString(desired.Object, "type"); dt != "" {
		if lt, _, _ := unstructured.NestedString(live.Object, "type"); lt != dt {
			res.Fields = append(res.Fields, status.FieldChange{Path: "/type", Desired: dt, Live: lt, Owners: []status.Owner{}, Class: status.OwnerDefaulted})
		}
	}
	for _, field := range []string{"labels", "annotations"} {
		dm, _, _ := unstructured.NestedStringMap(desired.Object, "metadata", field)
		lm, _, _ := unstructured.NestedStringMap(live.Object, "metadata", field)
		for _, k := range slices.Sorted(maps.Keys(dm)) {
			if lv, ok := lm[k]; !ok || lv != dm[k] {
				fc := status.FieldChange{Path: join("/metadata/"+field, k), Desired: dm[k], Owners: []status.Owner{}, Class: status.OwnerDefaulted}
				if ok {
					fc.Live = lv
				}
				res.Fields = append(res.Fields, fc)
			}
		}
	}
	if len(res.Fields) == 0 {
		res.Message += "; key names, type and metadata match the cluster (values not compared)"
	} else {
		var paths []string
		for _, f := range res.Fields {
			paths = append(paths, f.Path)
		}
		res.Message += fmt.Sprintf("; differs at %s (values not compared)", strings.Join(paths, ", "))
	}
	return res
}

// keyNames lists the keys under the given top-level maps, sorted, once.
func keyNames(o *unstructured.Unstructured, fields ...string) []string {
	var out []string
	for _, f := range fields {
		m, _ := o.Object[f].(map[string]any)
		for k := range m {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}
