package render_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/render"
)

// TestRenderDecodeBudgets: what the parent decodes for one render adds up
// across files, and across a render worker's objects, against the node
// and scalar-byte budgets; each refusal is a LimitError of that render.
func TestRenderDecodeBudgets(t *testing.T) {
	list := func(n int) string { return "[" + strings.TrimSuffix(strings.Repeat("a,", n), ",") + "]" }
	cm := func(name, field string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\n%s\n", name, field)
	}
	files := map[string]string{
		"small/kustomization.yaml": "resources: [cm.yaml]\n",
		"small/cm.yaml":            cm("small", "data: {a: b}"),
		"kust/kustomization.yaml":  "resources: [a.yaml, b.yaml, c.yaml]\n",
		"chart/Chart.yaml":         "apiVersion: v2\nname: chart\nversion: 0.1.0\n",
	}
	for i := range 3 {
		files[fmt.Sprintf("plain/cm%d.yaml", i)] = cm(fmt.Sprintf("p%d", i), "items: "+list(190_000))
		files[fmt.Sprintf("scalars/cm%d.yaml", i)] = cm(fmt.Sprintf("s%d", i), "data: {a: "+strings.Repeat("x", 3<<20)+"}")
		files[fmt.Sprintf("kust/%c.yaml", 'a'+i)] = cm(fmt.Sprintf("k%d", i), "items: "+list(190_000))
		files[fmt.Sprintf("chart/templates/cm%d.yaml", i)] = cm(fmt.Sprintf("h%d", i), "items: {{ until 190000 | toJson }}")
	}
	_, snap := repo(t, files)
	r := render.NewRenderer()
	r.Options.MaxScalarBytes = 8 << 20
	if _, err := r.Render(snap(), "small"); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{
		"plain":   "the render read more than 500000 YAML or JSON nodes (at plain/cm2.yaml)",
		"scalars": "the render read more than 8388608 bytes of YAML or JSON values (at scalars/cm2.yaml)",
		"kust":    "the render read more than 500000 YAML or JSON nodes (at kust/c.yaml)",
		"chart":   "the render rendered more than 500000 YAML or JSON nodes (at chart/templates/cm2.yaml)",
	} {
		_, err := r.Render(snap(), dir)
		var le *render.LimitError
		if !errors.As(err, &le) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a LimitError saying %q", dir, err, want)
		}
	}
}
