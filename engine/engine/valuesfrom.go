package engine

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/render"
)

// maxValuesFrom bounds one valuesFrom key's value.
const maxValuesFrom = 1 << 20

// withValuesFrom reads, on cluster cl, the ConfigMaps and Secrets App a's
// release takes values from (a Flux HelmRelease's valuesFrom, in the
// release's namespace), as helm-controller does: in order, a key's YAML
// merged over the earlier ones, or with targetPath its whole value set at
// that path as a string. They go into h's Values (over the values files,
// under spec.values); the strings taken from Secrets are returned so
// that every output masks them, and the render is kept off disk. Only
// what the live HelmRelease names is read (see liveValuesFrom). probe
// is h's values with every value from a Secret changed ("" when none
// came from a Secret): rendered again with it, an object that differs
// received Secret-derived values (see probeSensitive).
func (e *core) withValuesFrom(ctx context.Context, a app.App, cl *cluster, h *render.Helm) (sensitive []string, probe string, err error) {
	if a.Spec.Helm == nil || len(a.Spec.Helm.ValuesFrom) == 0 {
		return nil, "", nil
	}
	ns := "default"
	if a.Origin != nil && a.Origin.Namespace != "" {
		ns = a.Origin.Namespace
	}
	refs, err := liveValuesFrom(ctx, a, cl, ns)
	if err != nil {
		return nil, "", err
	}
	vals, probed := map[string]any{}, map[string]any{}
	for i, ref := range refs {
		what := fmt.Sprintf("spec.valuesFrom[%d]: %s %s/%s", i, ref.Kind, ns, ref.Name)
		resource := "configmaps"
		if ref.Kind == "Secret" {
			resource = "secrets"
		}
		obj, err := cl.cs.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: resource}).Namespace(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) && ref.Optional:
			continue
		case apierrors.IsNotFound(err):
			return nil, "", fmt.Errorf("%s is not in the cluster; helm-controller fails the release the same way (create it, or mark the reference optional)", what)
		case apierrors.IsForbidden(err):
			return nil, "", fmt.Errorf("%s cannot be read: kdrift may not get %s in %s (grant it, or compare this release with flux diff)", what, resource, ns)
		case err != nil:
			return nil, "", fmt.Errorf("%s cannot be read: %w", what, err)
		}
		key := ref.ValuesKey
		if key == "" {
			key = "values.yaml"
		}
		raw, found, _ := unstructured.NestedString(obj.Object, "data", key)
		if !found {
			if ref.Optional {
				continue
			}
			return nil, "", fmt.Errorf("%s has no key %q (valuesKey)", what, key)
		}
		if ref.Kind == "Secret" {
			dec, err := base64.StdEncoding.DecodeString(raw)
			if err != nil {
				return nil, "", fmt.Errorf("%s: key %q is not base64", what, key)
			}
			raw = string(dec)
		}
		if len(raw) > maxValuesFrom {
			return nil, "", fmt.Errorf("%s: key %q holds more than %d bytes", what, key, maxValuesFrom)
		}
		if ref.TargetPath != "" {
			if err := setPath(vals, ref.TargetPath, raw); err != nil {
				return nil, "", fmt.Errorf("%s: targetPath %q: %v", what, ref.TargetPath, err)
			}
			pv := raw
			if ref.Kind == "Secret" {
				sensitive = append(sensitive, raw)
				pv = probeValue(raw).(string)
			}
			_ = setPath(probed, ref.TargetPath, pv)
			continue
		}
		var m map[string]any
		if err := render.CheckYAML(what, []byte(raw), render.DefaultOptions()); err != nil {
			return nil, "", err
		}
		if err := yaml.Unmarshal([]byte(raw), &m); err != nil {
			return nil, "", fmt.Errorf("%s: key %q is not a YAML mapping of values: %v", what, key, err)
		}
		var pm map[string]any
		_ = yaml.Unmarshal([]byte(raw), &pm)
		if ref.Kind == "Secret" {
			sensitive = append(sensitive, leafStrings(m)...)
			pm = probeValue(pm).(map[string]any)
		}
		vals = app.MergeValues(vals, m)
		probed = app.MergeValues(probed, pm)
	}
	if len(vals) == 0 {
		return nil, "", nil
	}
	doc, err := yaml.Marshal(vals)
	if err != nil {
		return nil, "", err
	}
	h.Values = string(doc)
	h.Sensitive = len(sensitive) > 0
	if h.Sensitive {
		if pd, err := yaml.Marshal(probed); err == nil {
			probe = string(pd)
		}
	}
	return sensitive, probe, nil
}

// setPath sets the string v at the dotted path p of vals ("\." is a dot
// inside a key), making the mappings on the way.
func setPath(vals map[string]any, p, v string) error {
	var keys []string
	var cur strings.Builder
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == '\\' && i+1 < len(p) && p[i+1] == '.':
			cur.WriteByte('.')
			i++
		case p[i] == '.':
			keys = append(keys, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(p[i])
		}
	}
	keys = append(keys, cur.String())
	m := vals
	for i, k := range keys {
		if k == "" {
			return fmt.Errorf("has an empty key")
		}
		if i == len(keys)-1 {
			m[k] = v
			return nil
		}
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	return nil
}

// leafStrings lists the string values inside v.
func leafStrings(v any) []string {
	switch x := v.(type) {
	case map[string]any:
		var out []string
		for _, e := range x {
			out = append(out, leafStrings(e)...)
		}
		return out
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, leafStrings(e)...)
		}
		return out
	case string:
		return []string{x}
	case nil, bool:
		return nil
	}
	// A number or a date from a Secret is masked as it prints.
	return []string{fmt.Sprint(v)}
}
