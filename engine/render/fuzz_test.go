package render_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/internal/hostile"
)

// memTree is a Tree in memory; a folder's hash covers every file below it.
type memTree struct{ fstest.MapFS }

func (m memTree) TreeHash(dir string) (string, error) {
	// In name order: a map's order would give one tree many hashes.
	h := sha256.New()
	found := false
	for _, name := range slices.Sorted(maps.Keys(m.MapFS)) {
		if dir == "." || name == dir || strings.HasPrefix(name, dir+"/") {
			found = true
			h.Write([]byte(name))
			h.Write(m.MapFS[name].Data)
		}
	}
	if !found {
		return "", fs.ErrNotExist
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// FuzzRenderGuard renders fuzzed kustomizations and plain YAML beside a
// trap: the git and helm on PATH are impostors that create the marker,
// HTTP goes to a listener that counts, and the temporary folder must stay
// empty. Whatever the input, a render returns, runs nothing and connects
// nowhere.
func FuzzRenderGuard(f *testing.F) {
	tr := hostile.NewTrap(f)
	bin := f.TempDir()
	for _, prog := range []string{"git", "helm", "sh-plugin"} {
		script := "#!/bin/sh\necho " + prog + " >> '" + tr.Marker + "'\n"
		if err := os.WriteFile(filepath.Join(bin, prog), []byte(script), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	f.Setenv("PATH", bin)
	tmp := f.TempDir()
	f.Setenv("TMPDIR", tmp)
	url := "http://" + tr.Addr
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n"
	for _, c := range hostile.Cases(tr) {
		k, rest := "", cm
		for name, body := range c.Files {
			switch path.Base(name) {
			case "kustomization.yaml":
				if k == "" || strings.Count(name, "/") > 2 {
					k = body
				}
			default:
				rest = body
			}
		}
		f.Add(k, rest)
	}
	f.Add("resources: [cm.yaml]\n", cm)
	f.Add("resources: [cm.yaml]\nconfigMapGenerator:\n- name: x\n  literals: [a=b]\n", cm)
	f.Add("resources:\n- "+url+"/x.yaml\n", cm)
	f.Add("openapi:\n  path: "+url+"/schema.json\n", cm)
	f.Add("replacements:\n- path: "+url+"/r.yaml\n", cm)
	f.Add("transformers:\n- |-\n  apiVersion: builtin\n  kind: NamespaceTransformer\n  metadata: {name: x, namespace: y}\n", cm)
	f.Add("", "")
	r := render.NewRenderer()
	r.Options = render.Options{Timeout: 10 * time.Second}
	f.Fuzz(func(t *testing.T, kustomization, resource string) {
		tree := memTree{fstest.MapFS{
			"k/kustomization.yaml": {Data: []byte(kustomization)},
			"k/cm.yaml":            {Data: []byte(resource)},
			"k/gen.yaml":           {Data: []byte(resource)},
			"p/cm.yaml":            {Data: []byte(resource)},
		}}
		for _, dir := range []string{"k", "p"} {
			_, err := r.Render(tree, dir)
			var pe *render.PanicError
			if errors.As(err, &pe) && strings.Contains(err.Error(), "runtime error") {
				t.Logf("%s: recovered %v", dir, err)
			}
		}
		if _, err := os.Stat(tr.Marker); !errors.Is(err, fs.ErrNotExist) {
			data, _ := os.ReadFile(tr.Marker)
			t.Fatalf("a program ran (%q) for kustomization %q", data, kustomization)
		}
		if n := tr.Accepts(); n != 0 {
			t.Fatalf("%d connections for kustomization %q", n, kustomization)
		}
		left, _ := os.ReadDir(tmp)
		// A render worker's private working folder is kdrift's own.
		left = slices.DeleteFunc(left, func(e fs.DirEntry) bool { return strings.HasPrefix(e.Name(), "kdrift-render-") })
		if len(left) != 0 {
			t.Fatalf("the render wrote %s to the temporary folder for kustomization %q", left[0].Name(), kustomization)
		}
	})
}

// FuzzCheckYAML: the guard returns on any input, and what it accepts the
// other parsers read without a runaway.
func FuzzCheckYAML(f *testing.F) {
	for _, seed := range []string{
		"data: &a {k: *a}\n",
		"a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n",
		"a: &a\n  <<: *a\n",
		"base: &b {image: x}\nc1: *b\n---\n{\"json\": [1, {\"x\": null}]}\n",
		strings.Repeat("[", 250) + strings.Repeat("]", 250),
		"a: [unclosed\n",
		"",
	} {
		f.Add(seed)
	}
	o := render.Options{MaxAliasNodes: 1000, MaxDepth: 50}
	f.Fuzz(func(t *testing.T, doc string) {
		err := render.CheckYAML("f.yaml", []byte(doc), o)
		var le *render.LimitError
		var se *render.SyntaxError
		if err != nil && !errors.As(err, &le) && !errors.As(err, &se) {
			t.Fatalf("error %v (%T) is neither a limit nor a syntax error", err, err)
		}
	})
}

// FuzzRenderChart renders a chart whose template and values are fuzzed,
// with small budgets: whatever the input, the render returns within its
// time budget (plus slack), and a failure is a render error.
func FuzzRenderChart(f *testing.F) {
	for _, seed := range []struct{ tpl, values string }{
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\ndata: {a: {{ .Values.a | quote }}}\n", "a: b\n"},
		{`{{ range 100000000 }}x{{ end }}`, ""},
		{`{{ define "a" }}{{ include "a" . }}{{ end }}{{ include "a" . }}`, ""},
		{`{{ range $i, $v := .Values.l }}{{- if $v }}{{ $i }}{{ end }}{{ end }}`, "l: [1, 2, 3]\n"},
		{`{{ repeat 100000000 "x" }}{{ tpl .Values.t . }}`, "t: '{{ until 100000000 }}'\n"},
		{`{{ tpl .Values.t . }}{{ $ | tpl (.Values.u) }}`, "t: '{{ tpl .Values.t . }}'\nu: '{{ tpl (printf \"%s\" .Values.u) $ }}'\n"},
		{`{{- range .Values.l -}}
  {{- end }}{{ block "b" . }}{{ range until 3 }}{{ . }}{{ end }}{{ end }}`, "l: [a]\n"},
	} {
		f.Add(seed.tpl, seed.values)
	}
	f.Fuzz(func(t *testing.T, tpl, values string) {
		tree := memTree{fstest.MapFS{
			"c/Chart.yaml":       {Data: []byte("apiVersion: v2\nname: c\nversion: 0.1.0\n")},
			"c/values.yaml":      {Data: []byte(values)},
			"c/templates/t.yaml": {Data: []byte(tpl)},
			"c/templates/_h.tpl": {Data: []byte(`{{ define "h" }}{{ range . }}{{ . }}{{ end }}{{ end }}`)},
		}}
		r := render.NewRenderer()
		r.Options = render.Options{MaxRenderBytes: 1 << 20, Timeout: 2 * time.Second}
		start := time.Now()
		_, err := r.RenderApp(t.Context(), tree, "c", nil)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("the render returned after %s", d)
		}
		var re *render.Error
		if err != nil && !errors.As(err, &re) {
			t.Fatalf("error %T is not a *render.Error: %v", err, err)
		}
	})
}
