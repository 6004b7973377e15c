package app

import (
	"strings"
	"testing"
)

// TestQuietFile: a file a quiet render may read holds no tool's marker
// and no backslash, and a kustomization file none of the fields that
// compose strings.
func TestQuietFile(t *testing.T) {
	for _, c := range []struct {
		name, data string
		quiet      bool
	}{
		{"cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n", true},
		{"cm.yaml", "data: {k: argoproj.io}\n", false},
		{"cm.yaml", "data: {k: toolkit.fluxcd.io}\n", false},
		{"cm.yaml", `apiVersion: "argoproj\x2eio/v1alpha1"` + "\n", false},
		{"patch.json", `[{"op": "replace", "path": "/apiVersion", "value": "x\u002eio"}]`, false},
		{"kustomization.yaml", "resources: [cm.yaml]\nnamePrefix: p-\nimages: [{name: a, newTag: b}]\n", true},
		{"Kustomization", "resources: [cm.yaml]\npatches: [{path: p.yaml}]\n", true},
		{"kustomization.yml", "resources: [cm.yaml]\nreplacements: [{path: r.yaml}]\n", false},
		{"kustomization.yaml", "vars: []\n", false},
		{"kustomization.yaml", "helmCharts: [{name: x}]\n", false},
		{"kustomization.yaml", "transformers: [t.yaml]\n", false},
		{"kustomization.yaml", "generators: [g.yaml]\n", false},
		{"kustomization.yaml", "configurations: [c.yaml]\n", false},
		{"kustomization.yaml", "resources: [a]\n---\nreplacements: []\n", false},
		{"kustomization.yaml", "resources: [a\n", false},
	} {
		if got := quietFile(c.name, []byte(c.data)); got != c.quiet {
			t.Errorf("quietFile(%s, %q) = %v, want %v", c.name, c.data, got, c.quiet)
		}
	}
}

// TestMarkersNameEveryDeclaredGroup: a quiet render rests on every kind
// a tool declares with having a tool's marker in its group.
func TestMarkersNameEveryDeclaredGroup(t *testing.T) {
	for _, tool := range Tools {
		for _, gk := range tool.Kinds() {
			if !mayDeclare([]byte(gk.Group)) {
				t.Errorf("%s declares %s, whose group holds no tool's marker", tool.Name(), gk)
			}
		}
	}
	if mayDeclare([]byte(strings.Repeat("x", 10))) {
		t.Error("a file without a marker may declare")
	}
}

// TestAffected: which recorded reads a commit's changed paths reach.
func TestAffected(t *testing.T) {
	changed := map[string]bool{"apps": false, "apps/a": false, "apps/a/cm.yaml": true, "gone": true}
	render := `{"path":"apps/a","inputs":{"apps/a":"x"}}`
	for _, c := range []struct {
		op, name, id string
		want         bool
	}{
		{opRead, "apps/a/cm.yaml", "", true},
		{opRead, "apps/a/kustomization.yaml", "", false}, // its folder changed, not it
		{opStat, "apps/b", "", false},
		{opReadDir, "apps", "", true},
		{opTree, "apps/a", "", true},
		{opSum, "apps/b", "", false},
		{opRead, "gone/x/y.yaml", "", true}, // a folder on its path was replaced
		{opReadDir, ".", "", true},
		{opRender, "apps/a\x00{}", render, true},
		{opRender, "apps/b\x00{}", `{"path":"apps/b","inputs":{"apps/b":"x","lib":"y"}}`, false},
	} {
		paths, _, ok := depPaths(c.op, c.name, c.id)
		if !ok {
			t.Fatalf("depPaths(%s %s) refused %q", c.op, c.name, c.id)
		}
		if got := affected(paths, changed); got != c.want {
			t.Errorf("affected(%s %s) = %v, want %v", c.op, c.name, got, c.want)
		}
	}
	if _, _, ok := depPaths(opRender, "apps/c\x00{}", "not json"); ok {
		t.Error("a render recorded as something else is read as one: it must be checked, and fail")
	}
	if affected([]string{"."}, map[string]bool{}) {
		t.Error("nothing changed, yet the root's listing is affected")
	}
}
