package report

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/status"
)

func sampleMap() diff.OwnerMap {
	t := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	return diff.OwnerMap{Objects: 3, Kinds: []diff.OwnerKind{{
		Group: "apps", Kind: "Deployment", Objects: 3, GitOnly: 7,
		Rows: []diff.OwnerRow{{
			Field: "spec.replicas", Objects: 3, Contested: true, Why: []string{"2 writers"}, Rules: []string{"prod: Deployment.apps /spec/replicas"},
			Writers: []diff.FieldWriter{
				{Manager: "horizontal-pod-autoscaler", Class: status.OwnerController, Operation: "Update", Subresource: "scale", Count: 2, Newest: &t, Objects: []string{"prod:Deployment/prod/a", "prod:Deployment/prod/b"}},
				{Manager: "kdrift", Class: status.OwnerKdrift, Operation: "Apply", Count: 1, Objects: []string{"prod:Deployment/prod/c"}},
			},
		}, {
			Field: `metadata.annotations["odd|key"]`, Objects: 1,
			Writers: []diff.FieldWriter{{Manager: "we`ird|tool", Class: status.OwnerController, Operation: "Update", Count: 1, Objects: []string{"prod:Deployment/prod/a"}}},
		}},
	}}}
}

func TestOwnersMarkdownRoundTrip(t *testing.T) {
	var b bytes.Buffer
	if err := OwnersMarkdown(&b, sampleMap(), nil); err != nil {
		t.Fatal(err)
	}
	doc, err := ParseOwnership(strings.NewReader(b.String()))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, b.String())
	}
	if len(doc.Rows) != 2 {
		t.Fatalf("rows = %+v\n%s", doc.Rows, b.String())
	}
	if vs := CheckOwnership(doc, sampleMap()); len(vs) != 0 {
		t.Fatalf("a fresh document fails: %+v\n%s", vs, b.String())
	}
	// A person writes replicas: one violation naming them.
	m := sampleMap()
	m.Kinds[0].Rows[0].Writers = append(m.Kinds[0].Rows[0].Writers, diff.FieldWriter{Manager: "kubectl", Class: status.OwnerPerson, Operation: "Update", Count: 1, Objects: []string{"prod:Deployment/prod/c"}})
	vs := CheckOwnership(doc, m)
	if len(vs) != 1 || vs[0].Writer.Manager != "kubectl" || vs[0].Field != "spec.replicas" {
		t.Fatalf("violations = %+v", vs)
	}
	var out bytes.Buffer
	if err := Violations(&out, vs, "OWNERSHIP.md"); err != nil {
		t.Fatal(err)
	}
	if want := "Deployment.apps spec.replicas: new writer kubectl (person, Update) on 1 object(s), newest write time unknown; OWNERSHIP.md gives it horizontal-pod-autoscaler, kdrift and Git\n  prod:Deployment/prod/c\n"; out.String() != want {
		t.Errorf("violations text:\n%s\nwant\n%s", out.String(), want)
	}
	// Accepted: any writer passes.
	accepted := strings.Replace(b.String(), "| yes: 2 writers | no |", "| yes: 2 writers | yes |", 1)
	doc, err = ParseOwnership(strings.NewReader(accepted))
	if err != nil {
		t.Fatal(err)
	}
	if vs := CheckOwnership(doc, m); len(vs) != 0 {
		t.Errorf("accepted field still fails: %+v", vs)
	}
}

func TestParseOwnershipErrors(t *testing.T) {
	var b bytes.Buffer
	if err := OwnersMarkdown(&b, sampleMap(), nil); err != nil {
		t.Fatal(err)
	}
	good := b.String()
	for name, doc := range map[string]string{
		"no marker":     "# Field ownership\n| a | b |\n",
		"no header":     docMarker + "\n\n| Kind | Field |\n",
		"short row":     good + "", // replaced below
		"bad accepted":  strings.Replace(good, "| yes: 2 writers | no |", "| yes: 2 writers | maybe |", 1),
		"duplicate row": strings.TrimSuffix(good, "\n") + "\n" + lastRow(good) + "\n",
	} {
		if name == "short row" {
			doc = strings.TrimSuffix(good, "\n") + "\n| Deployment.apps | `x` |\n"
		}
		_, err := ParseOwnership(strings.NewReader(doc))
		var de *DocError
		if !errors.As(err, &de) {
			t.Errorf("%s: err = %v, want a DocError", name, err)
		}
	}
	big := strings.Repeat("x", maxDocSize+1)
	if _, err := ParseOwnership(strings.NewReader(big)); err == nil || !strings.Contains(err.Error(), "MiB") {
		t.Errorf("oversized document: %v", err)
	}
}

func lastRow(doc string) string {
	lines := strings.Split(strings.TrimSuffix(doc, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "`spec.replicas`") {
			return lines[i]
		}
	}
	return ""
}

func TestOwnersTableAndAgo(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 12, 0, 0, time.UTC)
	var b bytes.Buffer
	if err := OwnersTable(&b, sampleMap(), now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"horizontal-pod-autoscaler (controller) 2 of 3 · 12m ago", "kdrift (git) 1 of 3 · time unknown", "yes: 2 writers", "(7 fields only Git writes, 3 objects)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	at := now.Add(-3 * 24 * time.Hour)
	if got := Ago(&at, now); got != "3d ago" {
		t.Errorf("Ago = %q", got)
	}
}

// FuzzParseOwnership: a document from a repository is untrusted; parsing
// never panics, and what parses checks without panicking.
func FuzzParseOwnership(f *testing.F) {
	var b bytes.Buffer
	if err := OwnersMarkdown(&b, sampleMap(), nil); err != nil {
		f.Fatal(err)
	}
	f.Add(b.String())
	f.Add(docMarker + "\n" + docHeader + "\n| a | `b` | `c` | | no | yes |\n")
	f.Add(docMarker + "\n" + docHeader + "\n|\\||`|`|\n")
	f.Fuzz(func(t *testing.T, doc string) {
		d, err := ParseOwnership(strings.NewReader(doc))
		if err != nil {
			return
		}
		CheckOwnership(d, sampleMap())
	})
}

func TestOwnersMarkdownReviewedBy(t *testing.T) {
	m := sampleMap()
	row := &m.Kinds[0].Rows[0]
	row.Pointers = []diff.FieldPointer{
		{Ref: diff.OwnedRef{App: "prod"}, Pointer: "/spec/replicas"},
		{Ref: diff.OwnedRef{App: "payments"}, Pointer: "/spec/replicas"},
	}
	owners := map[string][]string{"prod": {"@acme/sre", "@alice"}, "payments": {"@alice", "pay|ops@example.com"}}
	var b bytes.Buffer
	if err := OwnersMarkdown(&b, m, func(app string) []string { return owners[app] }); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, w := range []string{
		"| Accepted | Reviewed by |",
		"| yes: 2 writers | no | @acme/sre, @alice, pay\\|ops@example.com |",
		// A field no App's pointer names has no reviewers; the Git-only
		// summary row names every App of the kind.
		"| no | no |  |",
		"| git: 7 fields | | no | no | @acme/sre, @alice, pay\\|ops@example.com |",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("document lacks %q:\n%s", w, out)
		}
	}
	doc, err := ParseOwnership(strings.NewReader(out))
	if err != nil {
		t.Fatalf("the document with Reviewed by does not read back: %v\n%s", err, out)
	}
	if vs := CheckOwnership(doc, m); len(vs) != 0 {
		t.Errorf("a fresh document fails its own check: %+v", vs)
	}
	short := strings.Replace(out, " | no | @acme/sre, @alice, pay\\|ops@example.com |\n| Deployment.apps | `metadata", " | no |\n| Deployment.apps | `metadata", 1)
	if _, err := ParseOwnership(strings.NewReader(short)); err == nil || !strings.Contains(err.Error(), "want 7") {
		t.Errorf("a row without its Reviewed by cell: %v", err)
	}
}
