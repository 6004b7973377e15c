package render

import (
	"strings"
	"testing"

	yaml3 "gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/types"
)

// TestOverlayEdit checks the kustomization an overlay writes, field by
// field, for both engines' semantics.
func TestOverlayEdit(t *testing.T) {
	const in = `resources: [a.yaml]
NamePrefix: old-
images:
- {name: nginx, newTag: "1.0"}
- {name: redis, digest: "sha256:aa"}
replicas:
- {name: web, count: 1}
components: [../c]
patches:
- path: p.yaml
`
	edit := func(o *Overlay) string {
		t.Helper()
		var k map[string]any
		if err := yaml3.Unmarshal([]byte(in), &k); err != nil {
			t.Fatal(err)
		}
		if err := o.edit(k, DefaultOptions()); err != nil {
			t.Fatal(err)
		}
		out, err := yaml3.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	argo := edit(&Overlay{Style: ArgoCD, NamePrefix: "new-", Namespace: "ns",
		Images:     []types.Image{{Name: "nginx", NewName: "mirror/nginx"}, {Name: "redis", NewTag: "7"}, {Name: "busybox", NewTag: "1"}},
		Replicas:   []types.Replica{{Name: "web", Count: 4}, {Name: "db", Count: 2}},
		Components: []string{"../c", "../d"},
		Patches:    []types.Patch{{Patch: "{kind: X}"}},
	})
	want := `components:
    - ../c
    - ../d
images:
    - name: nginx
      newName: mirror/nginx
      newTag: "1.0"
    - name: redis
      newTag: "7"
    - name: busybox
      newTag: "1"
namePrefix: new-
namespace: ns
patches:
    - path: p.yaml
    - patch: '{kind: X}'
replicas:
    - count: 4
      name: web
    - count: 2
      name: db
resources:
    - a.yaml
`
	if argo != want {
		t.Errorf("Argo CD edit:\n%s\nwant:\n%s", argo, want)
	}
	flux := edit(&Overlay{Style: Flux, Images: []types.Image{{Name: "nginx", NewName: "mirror/nginx"}}})
	if !strings.Contains(flux, "- name: nginx\n      newName: mirror/nginx\n    - digest") {
		t.Errorf("Flux replaces the image entry whole:\n%s", flux)
	}
}

// FuzzSubstitute: whatever an object's text and a variable hold,
// substitution returns an object or an error, never panics, and never
// produces more than its budget.
func FuzzSubstitute(f *testing.F) {
	for _, s := range []string{"${a}", "${a:=${b:-x}}", "${a//x/yy}", "${a%%*x}", "$${a}", "${", "${a:0:-1}", "${#a}"} {
		f.Add(s, "xyx")
	}
	f.Fuzz(func(t *testing.T, text, value string) {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}, "data": map[string]any{"k": text}}}
		const budget = 1 << 20
		out, err := substitute(obj, map[string]string{"a": value, "b": value}, budget)
		if err != nil {
			return
		}
		js, err := out.MarshalJSON()
		if err == nil && len(js) > budget {
			t.Fatalf("%d bytes past the budget", len(js))
		}
	})
}
