package app_test

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"kdrift.dev/kdrift/engine/app"
)

// TestFreezesValidation: spec.freezes decodes strictly and every entry is
// checked: a named resource, well-formed pointers that name a field (not
// the object, nor all of its labels or annotations), the audit fields,
// an end after the start.
func TestFreezesValidation(t *testing.T) {
	fsys := fstest.MapFS{"deploy/good/cm.yaml": {Data: []byte("a: b\n")}}
	parse := func(freezes string) []error {
		t.Helper()
		src := "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: a\nspec:\n  path: deploy/good\n  destination: {namespace: prod}\n  syncPolicy: {selfHeal: true}\n  freezes:\n" + freezes
		apps, errs := app.Parse(".kdrift/a.yaml", []byte(src))
		if len(errs) > 0 {
			return errs
		}
		return app.Validate(apps[0], fsys)
	}
	const who = "    reason: INC-1\n    by: Lao Li <lao.li@example.com>\n    at: \"2026-12-02T15:00:00Z\"\n"
	if errs := parse("  - resource: {group: apps, kind: Deployment, name: web}\n    fields: [/spec/replicas]\n" + who + "  - resource: {group: apps, kind: Deployment, name: web}\n    fields: [/spec/paused]\n" + who); len(errs) > 0 {
		t.Fatalf("a good freeze: %v", errs)
	}
	for _, c := range []struct{ freezes, want string }{
		{"  - resource: {kind: Deployment, name: web}\n    feilds: [/spec/replicas]\n" + who, `spec.freezes[0].feilds: unknown field`},
		{"  - resource: {kind: Deployment}\n" + who, "spec.freezes[0].resource.name: is missing"},
		{"  - resource: {kind: Deployment, name: web}\n    fields: [spec/replicas]\n" + who, "spec.freezes[0].fields[0]: pointer \"spec/replicas\" does not start with '/'"},
		{"  - resource: {kind: Deployment, name: web}\n    fields: [/metadata/annotations]\n" + who, "would freeze kdrift's own tracking labels and annotations too"},
		{"  - resource: {kind: Deployment, name: web}\n    fields: [/metadata/name]\n" + who, "identifies the object"},
		{"  - resource: {kind: Deployment, name: web}\n    fields: [/spec/replicas, /spec/replicas]\n" + who, "is given twice"},
		{"  - resource: {kind: Deployment, name: web}\n    reason: \" \"\n    by: x\n    at: \"2026-12-02T15:00:00Z\"\n", "spec.freezes[0].reason: is blank"},
		{"  - resource: {kind: Deployment, name: web}\n" + who + "    until: \"2026-12-02T14:00:00Z\"\n", "spec.freezes[0].until: 2026-12-02T14:00:00Z is not after at"},
		{"  - resource: {kind: Deployment, name: web}\n" + who + "  - resource: {kind: Deployment, name: web}\n    fields: [/spec/replicas]\n" + who, "one of the two freezes the whole resource"},
		{"  - resource: {kind: Deployment, name: web}\n    fields: [/spec]\n" + who + "  - resource: {kind: Deployment, name: web}\n    fields: [/spec/replicas]\n" + who, "/spec/replicas is already frozen by spec.freezes[0]"},
	} {
		errs := parse(c.freezes)
		found := false
		for _, e := range errs {
			found = found || strings.Contains(e.Error(), c.want)
		}
		if !found {
			t.Errorf("%q: errors %v, want one with %q", c.freezes, errs, c.want)
		}
	}
}

// TestFreezeMatching: an entry with no namespace holds the object in the
// App's destination namespace (or a cluster-scoped one); Covers takes a
// pointer and everything below it; an ended freeze holds nothing.
func TestFreezeMatching(t *testing.T) {
	at := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	until := at.Add(time.Hour)
	a := app.App{Spec: app.Spec{Destination: app.Destination{Namespace: "prod"}, Freezes: []app.ResourceFreeze{
		{Resource: app.ResourceRef{Group: "apps", Kind: "Deployment", Name: "web"}, Fields: []string{"/spec/template"}, Until: &until},
	}}}
	if len(a.FreezesOf("apps", "Deployment", "prod", "web", at)) != 1 || len(a.FreezesOf("apps", "Deployment", "staging", "web", at)) != 0 || len(a.FreezesOf("", "Deployment", "prod", "web", at)) != 0 {
		t.Fatal("namespace or group matching is wrong")
	}
	if len(a.FreezesOf("apps", "Deployment", "prod", "web", until)) != 0 {
		t.Fatal("an ended freeze still holds")
	}
	f := a.Spec.Freezes[0]
	if !f.Covers("/spec/template/spec/containers/0/image") || !f.Covers("/spec/template") || f.Covers("/spec/templates") || f.Covers("/spec/replicas") {
		t.Fatal("Covers is wrong")
	}
}
