package app_test

import (
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/render"
)

// TestDiscoverArgoDirectory: an Application's source.directory (recurse,
// include, exclude, jsonnet with Argo CD's build variables substituted)
// becomes the App's render, and Argo CD's default of not recursing is
// kept when it says nothing.
func TestDiscoverArgoDirectory(t *testing.T) {
	t.Parallel()
	app := func(name, dir string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: " + name + "\nspec:\n  project: web\n  source:\n    repoURL: https://github.com/example/gitops\n    path: jsonnet-guestbook\n" + dir +
			"  destination:\n    server: https://kubernetes.default.svc\n    namespace: guestbook\n"
	}
	res := discoverFromGit(t, map[string]string{
		"argocd/jsonnet.yaml":                    app("jsonnet", "    directory:\n      recurse: true\n      include: '{*.jsonnet,*.yaml}'\n      exclude: 'test/*'\n      jsonnet:\n        extVars: [{name: app, value: $ARGOCD_APP_NAME-$ARGOCD_APP_NAMESPACE}]\n        tlas: [{name: replicas, value: '2', code: true}]\n        libs: [lib]\n"),
		"argocd/plain.yaml":                      app("plain", ""),
		"argocd/badglob.yaml":                    app("badglob", "    directory:\n      include: '[a'\n"),
		"argocd/badlib.yaml":                     app("badlib", "    directory:\n      jsonnet:\n        libs: [../outside]\n"),
		"argocd/badtla.yaml":                     app("badtla", "    directory:\n      jsonnet:\n        tlas: [{name: 'a-b', value: x}]\n"),
		"jsonnet-guestbook/guestbook-ui.jsonnet": "{}",
		"lib/x.libsonnet":                        "{}",
	})
	got := map[string]bool{}
	for _, a := range res.Apps {
		got[a.Metadata.Name] = true
		h := a.RenderHelm()
		switch a.Metadata.Name {
		case "jsonnet":
			d := h.Directory
			if d == nil || !d.Recurse || d.Include != "{*.jsonnet,*.yaml}" || d.Exclude != "test/*" || d.Jsonnet == nil {
				t.Fatalf("directory = %+v", d)
			}
			if v := d.Jsonnet.ExtVars[0].Value; v != "jsonnet-guestbook" {
				t.Errorf("extVar = %q, want the build variables substituted", v)
			}
			if tla := d.Jsonnet.TLAs[0]; tla != (render.JsonnetVar{Name: "replicas", Value: "2", Code: true}) {
				t.Errorf("tla = %+v", tla)
			}
		case "plain":
			if d := h.Directory; d == nil || d.Recurse {
				t.Errorf("directory = %+v, want Argo CD's default: no recursion", d)
			}
		}
	}
	if !got["jsonnet"] || !got["plain"] {
		t.Fatalf("apps = %v, invalid = %+v", got, res.Invalid)
	}
	for name, want := range map[string]string{
		"badglob": "spec.source.directory.include: glob",
		"badlib":  "spec.source.directory.jsonnet.libs[0]",
		"badtla":  `spec.source.directory.jsonnet.tlas[0].name: "a-b" is not a Jsonnet identifier`,
	} {
		in, ok := res.FindInvalid(name)
		if !ok || !strings.Contains(in.Err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, in.Err, want)
		}
	}
}

// TestLoadJsonnetApp: a kdrift App's spec.jsonnet and spec.directory are
// read and checked like its other fields.
func TestLoadJsonnetApp(t *testing.T) {
	t.Parallel()
	res := loadFromGit(t, map[string]string{
		".kdrift/good.yaml": bad("good", "  path: deploy/good\n  directory:\n    recurse: false\n    exclude: '*.txt'\n  jsonnet:\n    extVars: [{name: env, value: prod}]\n    tlas: [{name: replicas, value: '3', code: true}]\n    libs: [deploy/other]\n"),
		".kdrift/lib.yaml":  bad("lib", "  path: deploy/good\n  jsonnet:\n    libs: [nowhere]\n"),
		".kdrift/tla.yaml":  bad("tla", "  path: deploy/good\n  jsonnet:\n    tlas: [{name: local, value: x}]\n"),
		".kdrift/kust.yaml": bad("kust", "  path: deploy/chart\n  jsonnet: {}\n"),
		".kdrift/typo.yaml": bad("typo", "  path: deploy/good\n  jsonnet:\n    extvars: []\n"),
	})
	if len(res.Apps) != 1 || res.Apps[0].Metadata.Name != "good" {
		t.Fatalf("apps = %+v, invalid = %+v", res.Apps, res.Invalid)
	}
	d := res.Apps[0].RenderHelm().Directory
	if d == nil || d.Recurse || d.Exclude != "*.txt" || d.Jsonnet.TLAs[0].Value != "3" || d.Jsonnet.Libs[0] != "deploy/other" {
		t.Errorf("directory = %+v", d)
	}
	for name, want := range map[string]string{
		"lib":  `.kdrift/lib.yaml:8: App "lib": spec.jsonnet.libs[0]: folder "nowhere" does not exist`,
		"tla":  `spec.jsonnet.tlas[0].name: "local" is a Jsonnet keyword`,
		"kust": "spec.jsonnet: is set, but \"deploy/chart\" holds Chart.yaml",
		"typo": "spec.jsonnet.extvars: unknown field",
	} {
		in, ok := res.FindInvalid(name)
		if !ok || !strings.Contains(in.Err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, in.Err, want)
		}
	}
}
