package app

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse: whatever an App file holds, Parse returns (no panic, no
// runaway), every error is an *Error naming the file, every App comes back
// with its file, and parsing is deterministic.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: a\nspec:\n  path: deploy/a\n  destination: {namespace: a}\n",
		"apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata: {name: a}\nspec:\n  path: x\n  freeze: {reason: r, by: b, at: \"2026-12-02T15:00:00Z\", until: \"2026-12-02T19:00:00Z\"}\n---\nkind: App\n",
		"apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata: {name: a}\nspec:\n  path: x\n  ignoreDifferences:\n  - {group: apps, kind: Deployment, jsonPointers: [/spec/replicas]}\n  - managedFieldsManagers: [hpa]\n",
		"--- # only a comment\n---\n",
		"--- not a separator\n",
		"spec: &a {path: *a}\n",
		"a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\nd: [*c, *c]\n",
		"metadata: {name: [unclosed\n",
		"apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata: {name: a}\nspec: {path: x, path: y}\n",
		"\t- tab\n",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		apps, errs := Parse(".kdrift/f.yaml", []byte(data))
		for _, err := range errs {
			var e *Error
			if !errors.As(err, &e) || e.File != ".kdrift/f.yaml" || !strings.HasPrefix(err.Error(), ".kdrift/f.yaml") {
				t.Fatalf("error %v (%T) is not an *Error naming the file", err, err)
			}
		}
		for _, a := range apps {
			if a.File != ".kdrift/f.yaml" {
				t.Fatalf("App %q has file %q", a.Metadata.Name, a.File)
			}
		}
		apps2, errs2 := Parse(".kdrift/f.yaml", []byte(data))
		if !reflect.DeepEqual(apps, apps2) || len(errs) != len(errs2) {
			t.Fatalf("Parse is not deterministic")
		}
	})
}
