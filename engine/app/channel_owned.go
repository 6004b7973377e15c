package app

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	yaml3 "gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/render"
)

// OwnedFreeze is a freeze record's change to the declaration of an app
// another GitOps tool owns.
type OwnedFreeze struct {
	// App is the app's name.
	App string `json:"app"`
	// Origin is its declaration.
	Origin Origin `json:"-"`
	// Freeze is the freeze the record leaves in force; nil when it lifted
	// it.
	Freeze *Freeze `json:"freeze,omitempty"`
}

// ownedDoc is one document of a file holding GitOps declarations, decoded
// for a freeze-only comparison.
type ownedDoc struct {
	body map[string]any
	// heal is the healing field of the tool that declares the document's
	// kind; nil when no tool with a healing field does.
	heal *HealField
	kind string
	name string
}

// OwnedFreezeOnlyChange checks that a change of file, a repository file
// other than an App file, from before to after, touches nothing but
// kdrift's freezes of the GitOps declarations it holds (an Argo CD
// Application, a Flux Kustomization or HelmRelease): the kdrift.dev/freeze-*
// annotations and the tool's healing field (HealField). It is what an
// incident channel commit may do to such a file; anything else is
// returned as an error naming the declaration or the document.
func OwnedFreezeOnlyChange(file string, before, after []byte) error {
	if err := addsOrDeletes(file, before, after); err != nil {
		return err
	}
	bd, err := ownedDocs(file, before)
	if err != nil {
		return fmt.Errorf("%s cannot be read before the commit: %v", file, err)
	}
	if !slices.ContainsFunc(bd, func(d ownedDoc) bool { return d.heal != nil }) {
		// A manifest, not a declaration kdrift freezes.
		return fmt.Errorf("changes %s", file)
	}
	ad, err := ownedDocs(file, after)
	if err != nil {
		return fmt.Errorf("makes %s unreadable: %v", file, err)
	}
	if len(bd) != len(ad) {
		return fmt.Errorf("changes which documents %s holds", file)
	}
	for i := range bd {
		b, a := bd[i], ad[i]
		if reflect.DeepEqual(b.body, a.body) {
			continue
		}
		if a.heal == nil || b.heal == nil || a.kind != b.kind || a.name != b.name {
			return fmt.Errorf("changes document %d of %s, which is no declaration kdrift freezes", i+1, file)
		}
		if !reflect.DeepEqual(withoutOwnedFreeze(b), withoutOwnedFreeze(a)) {
			return fmt.Errorf("changes %s %s in %s beyond kdrift's freeze", a.kind, a.name, file)
		}
	}
	return nil
}

// DeclaredFreeze is the freeze kdrift wrote into the declaration of o in
// data, the content of o.File at some revision: nil when the declaration
// carries none or data does not hold it (by kind, namespace and name), an
// error when data or the freeze annotations cannot be read.
func DeclaredFreeze(o *Origin, data []byte) (*Freeze, error) {
	docs, err := ownedDocs(o.File, data)
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		md, _ := d.body["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		ns, _ := md["namespace"].(string)
		if d.heal == nil || d.kind != o.Kind || name != o.Name || (ns != "" && ns != o.Namespace) {
			continue
		}
		raw, _ := md["annotations"].(map[string]any)
		ann := map[string]string{}
		for k, v := range raw {
			if s, ok := v.(string); ok {
				ann[k] = s
			}
		}
		fr, err := freezeOf(ann)
		if err != nil {
			return nil, fmt.Errorf("%s %s in %s: %w", o.Kind, o.QualifiedName(), o.File, err)
		}
		return fr, nil
	}
	return nil, nil
}

// ownedDocs decodes the documents of file, within the bounds every
// repository file is read with.
func ownedDocs(file string, data []byte) ([]ownedDoc, error) {
	if err := render.CheckYAML(file, data, render.DefaultOptions()); err != nil {
		return nil, err
	}
	docs, serr := splitDocuments(data)
	if serr != nil {
		return nil, fmt.Errorf("line %d: %s", serr.line, serr.msg)
	}
	out := make([]ownedDoc, 0, len(docs))
	for _, d := range docs {
		var body map[string]any
		if err := yaml3.Unmarshal(d.raw, &body); err != nil {
			return nil, errors.New(shiftLines(strings.TrimPrefix(err.Error(), "yaml: "), d.line))
		}
		od := ownedDoc{body: body}
		apiVersion, _ := body["apiVersion"].(string)
		od.kind, _ = body["kind"].(string)
		md, _ := body["metadata"].(map[string]any)
		od.name, _ = md["name"].(string)
		if ns, _ := md["namespace"].(string); ns != "" {
			od.name = ns + "/" + od.name
		}
		od.heal = healOf(apiVersion, od.kind)
		out = append(out, od)
	}
	return out, nil
}

// healOf is the healing field of the registered tool that declares
// documents of apiVersion and kind; nil when none does.
func healOf(apiVersion, kind string) *HealField {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil
	}
	if t := ToolOfKind(schema.GroupKind{Group: gv.Group, Kind: kind}); t != nil {
		return t.Edits().Heal
	}
	return nil
}

// withoutOwnedFreeze is d's body without the freeze annotations and the
// healing field (a copy: d is not changed). An annotations map left empty
// is dropped, as the freeze's removal drops it.
func withoutOwnedFreeze(d ownedDoc) map[string]any {
	body := copyMap(d.body)
	if md, ok := body["metadata"].(map[string]any); ok {
		md = copyMap(md)
		body["metadata"] = md
		if ann, ok := md["annotations"].(map[string]any); ok {
			ann = copyMap(ann)
			for k := range ann {
				if strings.HasPrefix(k, FreezeAnnotationPrefix) {
					delete(ann, k)
				}
			}
			md["annotations"] = ann
			if len(ann) == 0 {
				delete(md, "annotations")
			}
		}
	}
	m := body
	for _, k := range d.heal.Path {
		next, ok := m[k].(map[string]any)
		if !ok {
			return body
		}
		next = copyMap(next)
		m[k] = next
		m = next
	}
	delete(m, d.heal.Field)
	return body
}

// copyMap is a shallow copy of m.
func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
