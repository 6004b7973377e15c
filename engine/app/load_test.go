package app_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/gittest"
)

const goodApp = `apiVersion: kdrift.dev/v1alpha1
kind: App
metadata:
  name: good
spec:
  path: deploy/good
  destination:
    namespace: prod
  syncPolicy:
    selfHeal: true
  ignoreDifferences:
    - group: apps
      kind: Deployment
      jsonPointers: [/spec/replicas, "/metadata/annotations/a~1b"]
    - managedFieldsManagers: [cloud-controller]
`

func bad(name, spec string) string {
	return "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: " + name + "\nspec:\n" + spec
}

// loadFromGit commits files to a fresh repository and loads its Apps from a
// snapshot of that commit.
func loadFromGit(t *testing.T, files map[string]string) app.LoadResult {
	t.Helper()
	repo := gittest.Init(t)
	files["deploy/good/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
	files["deploy/other/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\n"
	files["deploy/afile.yaml"] = "a: b\n"
	files["deploy/chart/Chart.yaml"] = "apiVersion: v2\nname: chart\nversion: 0.1.0\n"
	files["deploy/chart/values-prod.yaml"] = "a: b\n"
	hash := repo.Commit("apps", files)
	r, err := source.Open(context.Background(), source.Options{Location: repo.Dir})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := r.Snapshot(hash)
	if err != nil {
		t.Fatal(err)
	}
	return snap.Apps()
}

func TestLoadStrict(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		file     string // the bad App's file content, in .kdrift/bad.yaml
		invalid  string // name of the invalid App
		want     []string
		wantFile string
	}{
		{"unknown field", bad("typo", "  path: deploy/other\n  syncPolicy:\n    selfheal: true\n"), "typo",
			[]string{`.kdrift/bad.yaml:8: App "typo": spec.syncPolicy.selfheal: unknown field; did you mean "selfHeal"?`}, ""},
		{"unknown top-level field", bad("extra", "  path: deploy/other\n  paths: [a]\n"), "extra",
			[]string{"spec.paths: unknown field", "remove it"}, ""},
		{"bad apiVersion", strings.Replace(bad("oldver", "  path: deploy/other\n"), "v1alpha1", "v1", 1), "oldver",
			[]string{"apiVersion", `"kdrift.dev/v1"`, "set apiVersion: kdrift.dev/v1alpha1"}, ""},
		{"bad kind", strings.Replace(bad("kindly", "  path: deploy/other\n"), "kind: App", "kind: Application", 1), "kindly",
			[]string{"kind", `"Application"`}, ""},
		{"path escaping", bad("escape", "  path: deploy/../../etc\n"), "escape",
			[]string{"spec.path", "leaves the repository", "relative to the repository root"}, ""},
		{"absolute path", bad("abs", "  path: /etc\n"), "abs",
			[]string{"spec.path", "not a relative path"}, ""},
		{"missing path", bad("nopath", "  syncPolicy: {prune: true}\n"), "nopath",
			[]string{"spec.path: is missing"}, ""},
		{"missing folder", bad("gone", "  path: deploy/gone\n"), "gone",
			[]string{`.kdrift/bad.yaml:6: App "gone": spec.path: folder "deploy/gone" does not exist in this revision; commit the folder`}, ""},
		{"path is a file", bad("filepath", "  path: deploy/afile.yaml\n"), "filepath",
			[]string{"is a file, not a folder"}, ""},
		{"bad pointer", bad("ptr", "  path: deploy/other\n  ignoreDifferences:\n    - jsonPointers: [spec/replicas, /a~2b]\n"), "ptr",
			[]string{".kdrift/bad.yaml:8: App \"ptr\": spec.ignoreDifferences[0].jsonPointers[0]", `does not start with '/'`, "spec.ignoreDifferences[0].jsonPointers[1]", "'~' not followed by 0 or 1", "RFC 6901"}, ""},
		{"empty rule", bad("emptyrule", "  path: deploy/other\n  ignoreDifferences:\n    - kind: Deployment\n"), "emptyrule",
			[]string{"spec.ignoreDifferences[0]: ignores nothing"}, ""},
		{"bad name", bad("Bad_Name", "  path: deploy/other\n"), "Bad_Name",
			[]string{"metadata.name", "lowercase"}, ""},
		{"blank freeze reason", bad("frozen", "  path: deploy/other\n  freeze:\n    reason: '  '\n    by: a\n    at: 2026-12-02T15:00:00Z\n"), "frozen",
			[]string{".kdrift/bad.yaml:8: App \"frozen\": spec.freeze.reason: is blank"}, ""},
		{"freeze without at", bad("frozen2", "  path: deploy/other\n  freeze:\n    reason: INC-1\n    by: a\n"), "frozen2",
			[]string{".kdrift/bad.yaml:7: App \"frozen2\": spec.freeze.at: is missing"}, ""},
		{"freeze bad time", bad("frozen3", "  path: deploy/other\n  freeze:\n    reason: INC-1\n    at: yesterday\n"), "frozen3",
			[]string{"frozen3", "RFC 3339"}, ""},
		{"wrong type", bad("typed", "  path: deploy/other\n  syncPolicy:\n    selfHeal: yes-please\n"), "typed",
			[]string{"spec.syncPolicy.selfHeal", "bool"}, ""},
		{"prune opt-in wrong type", bad("optin", "  path: deploy/other\n  syncPolicy:\n    prune: true\n    pruneNamespaces: always\n"), "optin",
			[]string{"spec.syncPolicy.pruneNamespaces", "bool"}, ""},
		{"prune opt-in misspelt", bad("optin2", "  path: deploy/other\n  syncPolicy:\n    prunePVCs: true\n"), "optin2",
			[]string{"spec.syncPolicy.prunePVCs: unknown field"}, ""},
		{"duplicate key", bad("dupkey", "  path: deploy/other\n  path: deploy/good\n"), "dupkey",
			[]string{`.kdrift/bad.yaml:7: App "dupkey": spec.path: is given twice (first at line 6); keep one`}, ""},
		{"helm on a folder that is no chart", bad("h1", "  path: deploy/other\n  helm: {releaseName: x}\n"), "h1",
			[]string{`spec.helm: is set, but "deploy/other" holds no Chart.yaml`}, ""},
		{"helm field misspelt", bad("h2", "  path: deploy/chart\n  helm:\n    valuefiles: [values-prod.yaml]\n"), "h2",
			[]string{`.kdrift/bad.yaml:8: App "h2": spec.helm.valuefiles: unknown field; did you mean "valueFiles"?`}, ""},
		{"helm values files", bad("h3", "  path: deploy/chart\n  helm:\n    valueFiles: [values-prod.yaml, missing.yaml, ../../../x.yaml, https://example.com/v.yaml]\n"), "h3",
			[]string{"spec.helm.valueFiles[1]: deploy/chart/missing.yaml does not exist", "spec.helm.valueFiles[2]", "outside the repository", "spec.helm.valueFiles[3]", "remote location"}, ""},
		{"helm values not a mapping", bad("h4", "  path: deploy/chart\n  helm:\n    values: '- a'\n"), "h4",
			[]string{"spec.helm.values: is not a YAML mapping"}, ""},
		{"helm release name", bad("h5", "  path: deploy/chart\n  helm:\n    releaseName: Bad_Name\n    parameters: [{name: '', value: x}]\n"), "h5",
			[]string{"spec.helm.releaseName", "spec.helm.parameters[0].name: is empty"}, ""},
		{"helm parameter type", bad("h6", "  path: deploy/chart\n  helm:\n    parameters: [{name: a, value: [1]}]\n"), "h6",
			[]string{"spec.helm.parameters", "string"}, ""},
		// yaml.v3 counts lines from the document; errors count from the file.
		{"syntax error", "# header\n---\napiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: [unclosed\n", "",
			[]string{".kdrift/bad.yaml:3: invalid YAML: line 5: did not find expected", "fix the YAML syntax"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := loadFromGit(t, map[string]string{
				".kdrift/good.yaml": goodApp,
				".kdrift/bad.yaml":  tc.file,
			})
			if len(res.Apps) != 1 || res.Apps[0].Metadata.Name != "good" {
				t.Fatalf("the good App must still load, got %+v (invalid %+v)", res.Apps, res.Invalid)
			}
			if len(res.Invalid) != 1 {
				t.Fatalf("want one invalid App, got %+v", res.Invalid)
			}
			in := res.Invalid[0]
			if in.Name != tc.invalid || in.File != ".kdrift/bad.yaml" {
				t.Errorf("invalid entry is %q in %q, want %q in .kdrift/bad.yaml", in.Name, in.File, tc.invalid)
			}
			msg := in.Err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}
}

func TestLoadDuplicateNames(t *testing.T) {
	t.Parallel()
	res := loadFromGit(t, map[string]string{
		".kdrift/a.yaml": bad("web", "  path: deploy/good\n"),
		".kdrift/b.yml":  bad("web", "  path: deploy/other\n") + "---\n" + bad("api", "  path: deploy/other\n"),
		".kdrift/c.yaml": goodApp,
	})
	var names []string
	for _, a := range res.Apps {
		names = append(names, a.Metadata.Name)
	}
	if strings.Join(names, ",") != "api,good" {
		t.Fatalf("valid Apps = %v, want api,good", names)
	}
	if len(res.Invalid) != 2 {
		t.Fatalf("want both web Apps invalid, got %+v", res.Invalid)
	}
	for _, in := range res.Invalid {
		msg := in.Err.Error()
		if in.Name != "web" || !strings.Contains(msg, in.File+`:4: App "web": metadata.name: is declared 2 times (in .kdrift/a.yaml, .kdrift/b.yml)`) {
			t.Errorf("duplicate error for %s in %s = %q, want both files named", in.Name, in.File, msg)
		}
	}
}

func TestLoadFullApp(t *testing.T) {
	t.Parallel()
	res := loadFromGit(t, map[string]string{
		".kdrift/apps.yaml": "# comment\n---\n" + goodApp + "---\n\n---\n" + bad("frozen", `  path: ./deploy/other/
  freeze:
    reason: "INC-1234 render workers 6->12"
    by: "Lao Li <lao.li@example.com>"
    at: "2026-12-02T15:00:00Z"
    until: 2026-12-02T19:00:00Z
`),
		".kdrift/README.md": "not an App file\n",
	})
	if len(res.Invalid) != 0 {
		t.Fatalf("unexpected invalid: %v", res.Invalid[0].Err)
	}
	if len(res.Apps) != 2 {
		t.Fatalf("want 2 Apps, got %d", len(res.Apps))
	}
	fz, ok := res.Find("frozen")
	if !ok || fz.Spec.Freeze == nil || fz.Spec.Freeze.Until == nil || fz.File != ".kdrift/apps.yaml" {
		t.Fatalf("frozen App = %+v", fz)
	}
	if got := fz.Spec.Freeze.Until.Sub(fz.Spec.Freeze.At).Hours(); got != 4 {
		t.Errorf("freeze lasts %vh, want 4h", got)
	}
	g, _ := res.Find("good")
	if !g.Spec.SyncPolicy.SelfHeal || len(g.Spec.IgnoreDifferences) != 2 || g.Spec.IgnoreDifferences[1].ManagedFieldsManagers[0] != "cloud-controller" {
		t.Errorf("good App decoded wrong: %+v", g.Spec)
	}
}

func TestLoadNoAppsFolder(t *testing.T) {
	t.Parallel()
	res := loadFromGit(t, map[string]string{"README.md": "x"})
	if len(res.Apps) != 0 || len(res.Invalid) != 0 {
		t.Fatalf("want nothing, got %+v", res)
	}
}

func TestCheckJSONPointer(t *testing.T) {
	t.Parallel()
	for p, ok := range map[string]bool{"": true, "/": true, "/a/b": true, "/a~0b/~1": true, "a": false, "/a~": false, "/a~x": false} {
		if err := app.CheckJSONPointer(p); (err == nil) != ok {
			t.Errorf("CheckJSONPointer(%q) = %v, want ok=%v", p, err, ok)
		}
	}
}

func TestLoadCleansPath(t *testing.T) {
	t.Parallel()
	res := loadFromGit(t, map[string]string{".kdrift/a.yaml": bad("dotted", "  path: ./deploy/other/\n")})
	if a, ok := res.Find("dotted"); !ok || a.Spec.Path != "deploy/other" {
		t.Fatalf("path = %q, want deploy/other (invalid: %+v)", a.Spec.Path, res.Invalid)
	}
}

func TestParseLinesAcrossDocuments(t *testing.T) {
	t.Parallel()
	data := goodApp + "---\n" + bad("second", "  path: a\n  destinaton: {}\n") + "--- # third\n" + bad("third", "  path: b\n")
	apps, errs := app.Parse(".kdrift/apps.yaml", []byte(data))
	if len(apps) != 2 || apps[0].Metadata.Name != "good" || apps[1].Metadata.Name != "third" || apps[1].File != ".kdrift/apps.yaml" {
		t.Fatalf("apps = %+v", apps)
	}
	goodLines := strings.Count(goodApp, "\n")
	want := fmt.Sprintf(`.kdrift/apps.yaml:%d: App "second": spec.destinaton: unknown field; remove it`, goodLines+1+7)
	if len(errs) != 1 || errs[0].Error() != want {
		t.Fatalf("errs = %v, want %s", errs, want)
	}
	var e *app.Error
	if !errors.As(errs[0], &e) || e.Doc != 2 || e.Field != "spec.destinaton" {
		t.Fatalf("error fields = %+v", e)
	}
	if _, errs := app.Parse("x.yaml", []byte("a: 1\n--- !!map\n")); len(errs) != 1 || !strings.Contains(errs[0].Error(), "x.yaml:2: invalid document separator") {
		t.Fatalf("separator error = %v", errs)
	}
}
