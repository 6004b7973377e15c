package actions

import (
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	sigsyaml "sigs.k8s.io/yaml"

	"kdrift.dev/kdrift/engine/app"
)

const appsFile = `# Apps of the render team.
# Keep this file tidy.
apiVersion: kdrift.dev/v1alpha1
kind: App
metadata:
  name: render-prod   # the one that pages
  labels: {team: render, env: prod}
spec:
    path: deploy/gitops/overlays/prod   # a kustomization
    destination:
        context: prod
        namespace: prod
    syncPolicy:
        selfHeal: true    # heal!
        prune: false
    # end of spec comment
---
# second app, with a list at the key's indent
apiVersion: kdrift.dev/v1alpha1
kind: App
metadata:
  name: render-staging
spec:
  path: "deploy/gitops/overlays/staging"
  ignoreDifferences:
  - kind: Deployment
    jsonPointers:
    - /spec/replicas
  syncPolicy: {selfHeal: true, prune: true}

# trailing comment`

// decodeOne decodes the App named name from an edited file. The editor's
// fixtures are sloppy on purpose (no apiVersion, unknown fields), so this
// reads each document leniently instead of with app.Parse: it checks the
// edit kept the YAML well formed and the values right, not the schema.
func decodeOne(t *testing.T, src []byte, name string) app.App {
	t.Helper()
	docs, err := parseDocs(src)
	if err != nil {
		t.Fatalf("edited file does not parse: %v\n%s", err, src)
	}
	for _, d := range docs {
		if !isApp(d, name) {
			continue
		}
		out, err := yaml.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var a app.App
		if err := sigsyaml.Unmarshal(out, &a); err != nil {
			t.Fatalf("edited App %s does not decode: %v\n%s", name, err, src)
		}
		return a
	}
	t.Fatalf("App %s missing after edit:\n%s", name, src)
	return app.App{}
}

// changedLineCount counts lines that differ between two texts.
func changedLineCount(a, b []byte) (removed, added int) {
	for _, h := range diffLines(splitLines(a), splitLines(b)) {
		removed += h.A1 - h.A0
		added += h.B1 - h.B0
	}
	return
}

func TestFreezeUnfreezeRoundTripIsByteExact(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	until := at.Add(4 * time.Hour)
	variants := map[string]string{
		"lf":                   appsFile,
		"final newline":        appsFile + "\n",
		"crlf":                 strings.ReplaceAll(appsFile+"\n", "\n", "\r\n"),
		"spec last no newline": "kind: App\nmetadata:\n  name: render-prod\nspec:\n  path: x\n  syncPolicy:\n    selfHeal: true",
	}
	for vname, src := range variants {
		t.Run(vname, func(t *testing.T) {
			for _, name := range []string{"render-prod", "render-staging"} {
				if name == "render-staging" && !strings.Contains(src, name) {
					continue
				}
				fr := app.Freeze{Reason: "INC-1234 \"workers\" 6->12: stop timeouts\nsecond line", By: "Lao Li <lao.li@example.com>", At: at, Until: &until}
				frozen, err := setFreeze([]byte(src), name, fr)
				if err != nil {
					t.Fatal(err)
				}
				got := decodeOne(t, frozen, name)
				if got.Spec.Freeze == nil || got.Spec.Freeze.Reason != fr.Reason || got.Spec.Freeze.By != fr.By || !got.Spec.Freeze.At.Equal(at) || !got.Spec.Freeze.Until.Equal(until) {
					t.Fatalf("freeze decoded as %+v from\n%s", got.Spec.Freeze, frozen)
				}
				if rm, add := changedLineCount([]byte(src), frozen); rm > 1 || add != 5+rm {
					t.Fatalf("freeze changed %d lines and added %d:\n%s", rm, add, frozen)
				}
				later := until.Add(2 * time.Hour)
				extended, err := setFreezeUntil(frozen, name, later)
				if err != nil {
					t.Fatal(err)
				}
				if rm, add := changedLineCount(frozen, extended); rm != 1 || add != 1 {
					t.Fatalf("extend changed %d/%d lines:\n%s", rm, add, extended)
				}
				if e := decodeOne(t, extended, name); !e.Spec.Freeze.Until.Equal(later) || e.Spec.Freeze.Reason != fr.Reason {
					t.Fatalf("extended freeze %+v", e.Spec.Freeze)
				}
				back, err := removeFreeze(extended, name)
				if err != nil {
					t.Fatal(err)
				}
				if string(back) != src {
					t.Fatalf("round trip changed the file:\n--- want\n%q\n--- got\n%q", src, back)
				}
			}
		})
	}
}

func TestSetFreezeReplacesHandWrittenFreeze(t *testing.T) {
	t.Parallel()
	src := "kind: App\nmetadata:\n  name: a\nspec:\n  freeze:\n    reason: old\n    by: x\n  path: p # keep\n"
	out, err := setFreeze([]byte(src), "a", app.Freeze{Reason: "new", By: "A <a@b.c>", At: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "  path: p # keep\n") || strings.Contains(string(out), "old") {
		t.Fatalf("got\n%s", out)
	}
	if a := decodeOne(t, out, "a"); a.Spec.Freeze.Reason != "new" || a.Spec.Path != "p" {
		t.Fatalf("decoded %+v", a.Spec)
	}
	if _, err := setFreezeUntil([]byte(src), "a", time.Unix(100, 0)); err != nil {
		t.Fatal(err)
	}
}

func TestAppendIgnoreRule(t *testing.T) {
	t.Parallel()
	rule := app.IgnoreRule{Group: "apps", Kind: "Deployment", Name: "render", JSONPointers: []string{"/spec/replicas"}}
	for _, name := range []string{"render-prod", "render-staging"} {
		out, err := appendIgnoreRule([]byte(appsFile), name, rule)
		if err != nil {
			t.Fatal(err)
		}
		a := decodeOne(t, out, name)
		last := a.Spec.IgnoreDifferences[len(a.Spec.IgnoreDifferences)-1]
		if last.Group != "apps" || last.Kind != "Deployment" || last.Name != "render" || len(last.JSONPointers) != 1 || last.JSONPointers[0] != "/spec/replicas" {
			t.Fatalf("%s: rules %+v\n%s", name, a.Spec.IgnoreDifferences, out)
		}
		if rm, _ := changedLineCount([]byte(appsFile), out); rm != 0 {
			t.Fatalf("%s: append removed %d lines:\n%s", name, rm, out)
		}
		if name == "render-staging" && len(a.Spec.IgnoreDifferences) != 2 {
			t.Fatalf("existing rule lost: %+v", a.Spec.IgnoreDifferences)
		}
	}
	empty := "kind: App\nmetadata:\n  name: a\nspec:\n  ignoreDifferences: []\n  path: p\n"
	out, err := appendIgnoreRule([]byte(empty), "a", app.IgnoreRule{ManagedFieldsManagers: []string{"hpa"}})
	if err != nil {
		t.Fatal(err)
	}
	if a := decodeOne(t, out, "a"); len(a.Spec.IgnoreDifferences) != 1 || a.Spec.Path != "p" {
		t.Fatalf("got %+v\n%s", a.Spec, out)
	}
	flow := "kind: App\nmetadata:\n  name: a\nspec:\n  ignoreDifferences: [{kind: X}]\n"
	if out, err := appendIgnoreRule([]byte(flow), "a", rule); err != nil || len(decodeOne(t, out, "a").Spec.IgnoreDifferences) != 2 {
		t.Fatalf("flow list: %v\n%s", err, out)
	}
}

// TestEditsOnTrickyLayouts covers a block scalar last in spec, a key after
// spec, comments at odd indents, a document end marker, and tab-free but
// 4-space indentation: each freeze parses, and unfreeze restores the bytes.
func TestEditsOnTrickyLayouts(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	files := map[string]string{
		"block scalar last":  "kind: App\nmetadata:\n  name: a\nspec:\n  path: p\n  notes: |\n    line one\n\n    line three\n# top comment\nstatus: {}\n",
		"key after spec":     "kind: App\nmetadata: {name: a}\nspec:\n  path: p\n      # deep comment\n  syncPolicy:\n    selfHeal: true\nextra: 1\n",
		"doc end marker":     "kind: App\nmetadata:\n  name: a\nspec:\n  path: p\n...\n---\nkind: Other\nmetadata:\n  name: a\n",
		"list at key indent": "kind: App\nmetadata:\n  name: a\nspec:\n  ignoreDifferences:\n  - kind: X\n    jsonPointers:\n    - /a\n",
		"freeze in middle":   "kind: App\nmetadata:\n  name: a\nspec:\n  path: p\n  freeze:\n    reason: hand written\n    by: someone\n    at: 2026-01-01T00:00:00Z\n  syncPolicy: {prune: true}\n",
	}
	for name, src := range files {
		t.Run(name, func(t *testing.T) {
			had := decodeOne(t, []byte(src), "a")
			var out []byte
			var err error
			if had.Spec.Freeze == nil {
				out, err = setFreeze([]byte(src), "a", app.Freeze{Reason: "r", By: "A <a@b.c>", At: at})
				if err != nil {
					t.Fatal(err)
				}
				got := decodeOne(t, out, "a")
				if got.Spec.Freeze == nil || got.Spec.Freeze.Reason != "r" || got.Spec.Path != had.Spec.Path || len(got.Spec.IgnoreDifferences) != len(had.Spec.IgnoreDifferences) {
					t.Fatalf("after freeze %+v\n%s", got.Spec, out)
				}
				back, err := removeFreeze(out, "a")
				if err != nil {
					t.Fatal(err)
				}
				if string(back) != src {
					t.Fatalf("round trip:\n%q\n%q", src, back)
				}
			} else {
				out, err = removeFreeze([]byte(src), "a")
				if err != nil {
					t.Fatal(err)
				}
				got := decodeOne(t, out, "a")
				if got.Spec.Freeze != nil || !got.Spec.SyncPolicy.Prune || got.Spec.Path != "p" {
					t.Fatalf("after unfreeze %+v\n%s", got.Spec, out)
				}
			}
			if _, err := appendIgnoreRule([]byte(src), "a", app.IgnoreRule{Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
