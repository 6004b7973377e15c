package render_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/hostile"
)

// TestRenderRefusesHostileRepository: every hostile folder is refused with
// its cause, nothing is run, no connection is made, and a healthy folder
// beside them renders.
func TestRenderRefusesHostileRepository(t *testing.T) {
	tr := hostile.NewTrap(t)
	files := map[string]string{"deploy/good/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good}\n"}
	cases := hostile.Cases(tr)
	for _, c := range cases {
		for f, body := range c.Files {
			files[f] = body
		}
	}
	_, snap := repo(t, files)
	s := snap()
	r := render.NewRenderer()
	for _, c := range cases {
		_, err := r.Render(s, "deploy/"+c.Name)
		t.Logf("%s: %v", c.Name, err)
		var re *render.Error
		if !errors.As(err, &re) || !strings.Contains(err.Error(), c.Want) {
			t.Errorf("%s: error = %v, want a render.Error containing %q", c.Name, err, c.Want)
		}
	}
	if objs, err := r.Render(s, "deploy/good"); err != nil || ids(objs) != "ConfigMap/good" {
		t.Fatalf("good = %s, %v", ids(objs), err)
	}
	if _, err := os.Stat(tr.Marker); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("marker %s exists (or cannot be checked: %v): a command ran", tr.Marker, err)
	}
	if n := tr.Accepts(); n != 0 {
		t.Fatalf("%d connections reached the loopback listener", n)
	}
}

func TestRenderRefusalNamesFileEntryAndFix(t *testing.T) {
	tr := hostile.NewTrap(t)
	var upload hostile.Case
	for _, c := range hostile.Cases(tr) {
		if c.Name == "upload-pack" {
			upload = c
		}
	}
	_, snap := repo(t, upload.Files)
	_, err := render.NewRenderer().Render(snap(), "deploy/upload-pack")
	var re *render.RefusedError
	if !errors.As(err, &re) || re.File != "deploy/upload-pack/kustomization.yaml" || re.Field != "resources" ||
		!strings.HasPrefix(re.Entry, "file:///tmp//?ref=--upload-pack") || !strings.Contains(re.Fix, "vendor the base into the repository") {
		t.Fatalf("error = %#v (%v)", re, err)
	}
}

func TestRenderBudgets(t *testing.T) {
	big := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {a: \"" + strings.Repeat("x", 4000) + "\"}\n"
	_, snap := repo(t, map[string]string{
		"deploy/bigplain/cm.yaml":           big,
		"deploy/bigkust/kustomization.yaml": "resources: [cm.yaml]\n",
		"deploy/bigkust/cm.yaml":            big,
		"deploy/many/a.yaml":                big,
		"deploy/many/b.yaml":                strings.Replace(big, "name: big", "name: big2", 1),
		"deploy/small/cm.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: small}\n",
	})
	s := snap()
	r := render.NewRenderer()
	r.Options = render.Options{MaxFileBytes: 3000}
	for _, dir := range []string{"deploy/bigplain", "deploy/bigkust"} {
		_, err := r.Render(s, dir)
		var le *render.LimitError
		if !errors.As(err, &le) || le.Limit != "file size" || le.File != dir+"/cm.yaml" {
			t.Errorf("%s: error = %v, want the file size limit naming cm.yaml", dir, err)
		}
	}
	r2 := render.NewRenderer()
	r2.Options = render.Options{MaxRenderBytes: 6000}
	_, err := r2.Render(s, "deploy/many")
	var le *render.LimitError
	if !errors.As(err, &le) || le.Limit != "read size" {
		t.Errorf("many: error = %v, want the read size limit", err)
	}
	if _, err := r.Render(s, "deploy/small"); err != nil {
		t.Fatalf("small: %v", err)
	}
}

// blockingTree is a snapshot whose reads of one file never return (until
// the test ends), standing in for a build that hangs.
type blockingTree struct {
	*source.Snapshot
	file    string
	release chan struct{}
}

func (b blockingTree) ReadFile(name string) ([]byte, error) {
	if name == b.file {
		<-b.release
	}
	return b.Snapshot.ReadFile(name)
}

func (b blockingTree) Open(name string) (fs.File, error) {
	if name == b.file {
		<-b.release
	}
	return b.Snapshot.Open(name)
}

func TestRenderHangIsAbandoned(t *testing.T) {
	_, snap := repo(t, overlayFiles)
	s := snap()
	release := make(chan struct{})
	defer close(release)
	r := render.NewRenderer()
	r.Options = render.Options{Timeout: 300 * time.Millisecond}
	_, err := r.Render(blockingTree{s, "deploy/base/service.yaml", release}, "deploy/base")
	var le *render.LimitError
	if !errors.As(err, &le) || le.Limit != "time" {
		t.Fatalf("error = %v, want the time limit", err)
	}
	// A caller's context ends a render at once too.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.RenderContext(ctx, s, "deploy/other"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled render: %v", err)
	}
	// Plain YAML apps do not wait for the hung kustomize build.
	if objs, err := r.Render(s, "deploy/other"); err != nil || ids(objs) != "ConfigMap/other" {
		t.Fatalf("other = %s, %v", ids(objs), err)
	}
}

func TestCheckYAML(t *testing.T) {
	o := render.DefaultOptions()
	for _, tc := range []struct{ name, doc, limit string }{
		{"self", "data: &a {k: *a}\n", "recursive alias"},
		{"mutual", "a: &a [&b [*a]]\n", "recursive alias"},
		{"merge", "a: &a\n  <<: *a\n", "recursive alias"},
		{"depth", "a: " + strings.Repeat("[", 300) + strings.Repeat("]", 300) + "\n", "nesting depth"},
	} {
		var le *render.LimitError
		if err := render.CheckYAML("f.yaml", []byte(tc.doc), o); !errors.As(err, &le) || le.Limit != tc.limit || le.File != "f.yaml" {
			t.Errorf("%s: %v, want the %s limit", tc.name, err, tc.limit)
		}
	}
	ok := "base: &b {image: x, env: [{name: A, value: \"1\"}]}\nc1: *b\nc2: *b\n---\n{\"json\": [1, 2, {\"x\": null}]}\n"
	if err := render.CheckYAML("ok.yaml", []byte(ok), o); err != nil {
		t.Fatalf("shared anchors refused: %v", err)
	}
	var se *render.SyntaxError
	if err := render.CheckYAML("bad.yaml", []byte("a: [unclosed\n"), o); !errors.As(err, &se) {
		t.Fatalf("syntax error = %v", err)
	}
}
