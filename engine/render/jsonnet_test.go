package render_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/render"
)

// guestbookFiles are shaped like Argo CD's jsonnet-guestbook example: a
// .jsonnet file importing params.libsonnet, here also reading an extVar,
// a top-level argument and a library folder.
var guestbookFiles = map[string]string{
	"jsonnet-guestbook/params.libsonnet": `{
  containerPort: 80,
  image: "quay.io/argoprojlabs/argocd-e2e-container:0.2",
  name: "jsonnet-guestbook-ui",
  replicas: 1,
  servicePort: 80,
  type: "ClusterIP",
}
`,
	"jsonnet-guestbook/guestbook-ui.jsonnet": `local params = import 'params.libsonnet';
local labels = import 'labels.libsonnet';
function(replicas=params.replicas)
[
  {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: params.name, labels: labels + { env: std.extVar("env") } },
    spec: {
      ports: [{ port: params.servicePort, targetPort: params.containerPort }],
      selector: { app: params.name },
      type: params.type,
    },
  },
  {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: params.name, labels: labels },
    spec: {
      replicas: replicas,
      revisionHistoryLimit: 3,
      selector: { matchLabels: { app: params.name } },
      template: {
        metadata: { labels: { app: params.name } },
        spec: { containers: [{ image: params.image, name: params.name, ports: [{ containerPort: params.containerPort }] }] },
      },
    },
  },
]
`,
	"jsonnet-guestbook/README.md": "the guestbook, in Jsonnet\n",
	"lib/labels.libsonnet":        `{ team: "web" }`,
}

// guestbookDir is how the guestbook renders: an extVar, a TLA as code,
// a library folder.
var guestbookDir = &render.Directory{Jsonnet: &render.Jsonnet{
	ExtVars: []render.JsonnetVar{{Name: "env", Value: "prod"}},
	TLAs:    []render.JsonnetVar{{Name: "replicas", Value: "2", Code: true}},
	Libs:    []string{"lib"},
}}

func TestRenderJsonnetGuestbook(t *testing.T) {
	_, snap := repo(t, guestbookFiles)
	r := render.NewRenderer()
	objs, err := r.RenderApp(t.Context(), snap(), "jsonnet-guestbook", &render.Helm{Directory: guestbookDir})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(objs), "Service/jsonnet-guestbook-ui Deployment/jsonnet-guestbook-ui"; got != want {
		t.Fatalf("objects = %s, want %s", got, want)
	}
	if n, _, _ := unstructured.NestedInt64(objs[1].Object, "spec", "replicas"); n != 2 {
		t.Errorf("replicas = %d, want the TLA's 2", n)
	}
	if env, _, _ := unstructured.NestedString(objs[0].Object, "metadata", "labels", "env"); env != "prod" {
		t.Errorf("env label = %q, want the extVar's prod", env)
	}
	if team, _, _ := unstructured.NestedString(objs[1].Object, "metadata", "labels", "team"); team != "web" {
		t.Errorf("team label = %q, want the library's web", team)
	}
	if got := r.Inputs("jsonnet-guestbook"); strings.Join(got, " ") != "jsonnet-guestbook lib" {
		t.Errorf("inputs = %v, want the app's folder and the library folder", got)
	}
	// Without the TLA the file's default applies; without the extVar it fails.
	objs, err = r.RenderApp(t.Context(), snap(), "jsonnet-guestbook", &render.Helm{Directory: &render.Directory{Jsonnet: &render.Jsonnet{
		ExtVars: guestbookDir.Jsonnet.ExtVars, Libs: []string{"lib"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(objs[1].Object, "spec", "replicas"); n != 1 {
		t.Errorf("replicas = %d, want params' 1", n)
	}
	if _, err := r.RenderApp(t.Context(), snap(), "jsonnet-guestbook", &render.Helm{Directory: &render.Directory{Jsonnet: &render.Jsonnet{Libs: []string{"lib"}}}}); err == nil || !strings.Contains(err.Error(), "env") {
		t.Errorf("error without the extVar = %v, want one naming it", err)
	}
}

// TestRenderJsonnetFlattens: an object, a List kind and a list of them all
// give their objects, as Argo CD flattens them.
func TestRenderJsonnetFlattens(t *testing.T) {
	_, snap := repo(t, map[string]string{
		"j/a.jsonnet": `{apiVersion: "v1", kind: "ConfigMap", metadata: {name: "a"}}`,
		"j/b.jsonnet": `{apiVersion: "v1", kind: "List", items: [{apiVersion: "v1", kind: "ConfigMap", metadata: {name: "b" + i}} for i in ["1", "2"]]}`,
		"j/c.jsonnet": `[null, {apiVersion: "v1", kind: "ConfigMapList", items: [{apiVersion: "v1", kind: "ConfigMap", metadata: {name: "c"}}]}]`,
		"j/d.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d}\n",
	})
	objs, err := render.NewRenderer().Render(snap(), "j")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(objs), "ConfigMap/a ConfigMap/b1 ConfigMap/b2 ConfigMap/c ConfigMap/d"; got != want {
		t.Fatalf("objects = %s, want %s", got, want)
	}
}

// TestRenderJsonnetHostile: what a committer could try is refused or
// stopped at a budget, as that render's error, and another app of the
// same repository still renders.
func TestRenderJsonnetHostile(t *testing.T) {
	files := map[string]string{
		"ok/cm.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n",
		"escape/a.jsonnet":     `import '../../../etc/passwd.jsonnet'`,
		"abs/a.jsonnet":        `{apiVersion: "v1", kind: "ConfigMap", metadata: {name: "x"}, data: {p: importstr '/etc/passwd'}}`,
		"url/a.jsonnet":        `import 'https://example.com/x.libsonnet'`,
		"recursion/a.jsonnet":  `local f(x) = f(x + 1) + 1; f(0)`,
		"doubling4m/a.jsonnet": `local d(s, n) = if n == 0 then s else d(s + s, n - 1); {apiVersion: "v1", kind: "ConfigMap", metadata: {name: "big"}, data: {big: d("x", 22)}}`,
		"deep/a.jsonnet":       `std.foldl(function(acc, i) [acc], std.range(1, 1000), [])`,
		"native/a.jsonnet":     `std.native("parseYaml")("a: 1")`,
	}
	_, snap := repo(t, files)
	r := render.NewRenderer()
	// Doubled 22 times (4 MiB) a string is built, and the size guard
	// refuses the output before it is written out. Doubled 30 times it
	// would take gigabytes: the render worker's memory budget kills it
	// (see TestJsonnetAllocationKilledAtMemory).
	r.Options.Timeout = 15 * time.Second
	r.Options.MaxRenderBytes = 1 << 20
	for _, tc := range []struct {
		dir  string
		want string
		as   any
	}{
		{"escape", "leaves the repository", new(*render.ImportError)},
		{"abs", "absolute paths are refused", new(*render.ImportError)},
		{"url", "URLs are never fetched", new(*render.ImportError)},
		{"recursion", "jsonnet stack limit", new(*render.LimitError)},
		{"doubling4m", "rendered size limit", new(*render.LimitError)},
		{"deep", "nesting depth", new(*render.LimitError)},
		{"native", "native", nil},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			_, err := r.Render(snap(), tc.dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one saying %q", err, tc.want)
			}
			if tc.as != nil && !errors.As(err, tc.as) {
				t.Errorf("error %v is not a %T", err, tc.as)
			}
		})
	}
	objs, err := r.Render(snap(), "ok")
	if err != nil || ids(objs) != "ConfigMap/ok" {
		t.Fatalf("the other app = %s, %v", ids(objs), err)
	}
}

// TestRenderNothingRead: a folder of manifests kdrift does not read is an
// error naming them; a folder empty on purpose (documentation only, or
// nothing) renders no object and no error.
func TestRenderNothingRead(t *testing.T) {
	_, snap := repo(t, map[string]string{
		"txt/deployment.txt":       "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
		"txt/service.txt":          "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n",
		"docs/README.md":           "# nothing to deploy here yet\n",
		"docs/.gitkeep":            "",
		"lib/only.libsonnet":       "{}",
		"flat/sub/cm.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sub}\n",
		"excl/notes.txt":           "x\n",
		"empty/kustomization.yaml": "resources: []\n",
	})
	r := render.NewRenderer()
	_, err := r.Render(snap(), "txt")
	var nr *render.NothingReadError
	if !errors.As(err, &nr) || len(nr.Skipped) != 2 {
		t.Fatalf("error = %v, want a NothingReadError naming 2 files", err)
	}
	for _, want := range []string{"txt/deployment.txt", "txt/service.txt", "reads only .yaml, .yml, .json and .jsonnet"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	for _, dir := range []string{"docs", "empty"} {
		objs, err := r.Render(snap(), dir)
		if err != nil || len(objs) != 0 {
			t.Errorf("%s: %d objects, %v; want none and no error", dir, len(objs), err)
		}
	}
	if _, err := r.Render(snap(), "lib"); !errors.As(err, &nr) || !strings.Contains(err.Error(), "Jsonnet library") {
		t.Errorf("library-only folder: %v", err)
	}
	// Argo CD's directory options: recurse off leaves the subfolder out,
	// and says so; an exclude is the app's choice.
	if _, err := r.RenderApp(t.Context(), snap(), "flat", &render.Helm{Directory: &render.Directory{}}); !errors.As(err, &nr) || !strings.Contains(err.Error(), "directory.recurse is off") {
		t.Errorf("recurse off: %v", err)
	}
	if objs, err := r.RenderApp(t.Context(), snap(), "flat", &render.Helm{Directory: &render.Directory{Recurse: true}}); err != nil || ids(objs) != "ConfigMap/sub" {
		t.Errorf("recurse on: %s, %v", ids(objs), err)
	}
	if objs, err := r.RenderApp(t.Context(), snap(), "excl", &render.Helm{Directory: &render.Directory{Exclude: "*.txt"}}); err != nil || len(objs) != 0 {
		t.Errorf("excluded: %d objects, %v", len(objs), err)
	}
}

// TestRenderDirectoryGlobs: include and exclude match a file's path from
// the App's folder with Argo CD's glob syntax ({a,b}, * across folders);
// exclude wins.
func TestRenderDirectoryGlobs(t *testing.T) {
	cm := func(n string) string { return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + n + "}\n" }
	_, snap := repo(t, map[string]string{
		"g/a.yaml":        cm("a"),
		"g/b.yml":         cm("b"),
		"g/c.json":        `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}`,
		"g/sub/d.yaml":    cm("d"),
		"g/sub/skip.yaml": cm("skip"),
	})
	r := render.NewRenderer()
	for _, tc := range []struct {
		d    render.Directory
		want string
	}{
		{render.Directory{}, "ConfigMap/a ConfigMap/b ConfigMap/c"},
		{render.Directory{Recurse: true}, "ConfigMap/a ConfigMap/b ConfigMap/c ConfigMap/d ConfigMap/skip"},
		{render.Directory{Recurse: true, Include: "{*.yml,*.json}"}, "ConfigMap/b ConfigMap/c"},
		{render.Directory{Recurse: true, Include: "*.yaml", Exclude: "*skip*"}, "ConfigMap/a ConfigMap/d"},
		{render.Directory{Recurse: true, Include: "sub/*"}, "ConfigMap/d ConfigMap/skip"},
	} {
		objs, err := r.RenderApp(t.Context(), snap(), "g", &render.Helm{Directory: &tc.d})
		if err != nil || ids(objs) != tc.want {
			t.Errorf("%+v: %s, %v; want %s", tc.d, ids(objs), err, tc.want)
		}
	}
	if _, err := r.RenderApp(t.Context(), snap(), "g", &render.Helm{Directory: &render.Directory{Include: "[a"}}); err == nil || !strings.Contains(err.Error(), "directory.include") {
		t.Errorf("bad glob: %v", err)
	}
}
