package redact_test

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/redact"
)

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:tok3n@github.com/org/repo.git": "https://user:xxxxx@github.com/org/repo.git",
		"https://ghp_tok3n@github.com/org/repo.git":  "https://xxxxx@github.com/org/repo.git",
		"ssh://git@github.com/org/repo.git":          "ssh://git@github.com/org/repo.git",
		"git@github.com:org/repo.git":                "git@github.com:org/repo.git",
		"/home/me/repo":                              "/home/me/repo",
		"file:///srv/repo.git":                       "file:///srv/repo.git",
	} {
		if got := redact.URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestText(t *testing.T) {
	msg := `unexpected requesting "https://kdrift:s3cr3t@example.com/org/repo.git/info/refs?service=git-upload-pack" status code: 500; also http://tok3n@h:8080/x and ssh://git@h/x`
	got := redact.Text(msg)
	if strings.Contains(got, "s3cr3t") || strings.Contains(got, "tok3n") || !strings.Contains(got, "https://kdrift:xxxxx@example.com") || !strings.Contains(got, "ssh://git@h/x") {
		t.Fatalf("Text = %q", got)
	}
	base := errors.New(msg)
	if err := redact.Error(base); strings.Contains(err.Error(), "s3cr3t") || !errors.Is(err, base) {
		t.Fatalf("Error = %v", err)
	}
}

func TestSecretsScrub(t *testing.T) {
	s := &redact.Secrets{}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db"},
		"data":       map[string]any{"password": "aHVudGVyMi1sb25n"}, // hunter2-long
		"stringData": map[string]any{"token": "tok-123456"},
	}}
	s.AddObjects([]*unstructured.Unstructured{u})
	msg := `Secret "db" is invalid: data[password]: aHVudGVyMi1sb25n (hunter2-long), token tok-123456, name db`
	got := s.Scrub(msg)
	for _, v := range []string{"aHVudGVyMi1sb25n", "hunter2-long", "tok-123456"} {
		if strings.Contains(got, v) {
			t.Fatalf("Scrub left %q in %q", v, got)
		}
	}
	if !strings.Contains(got, `Secret "db" is invalid`) {
		t.Fatalf("Scrub masked too much: %q", got)
	}
	var none *redact.Secrets
	if got := none.Scrub("https://u:p4ss@h/x"); strings.Contains(got, "p4ss") {
		t.Fatalf("nil Scrub = %q", got)
	}
}

func TestSecretYAML(t *testing.T) {
	src := "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: visible\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  token: c2VjcmV0LXZhbHVl\nstringData:\n  cert: |\n    -----BEGIN-----\n    MIIBsecretbody\n  inline: {x: y}\ntype: Opaque\n"
	got := redact.SecretYAML(src)
	for _, v := range []string{"c2VjcmV0LXZhbHVl", "MIIBsecretbody", "{x: y}"} {
		if strings.Contains(got, v) {
			t.Fatalf("SecretYAML left %q:\n%s", v, got)
		}
	}
	for _, v := range []string{"a: visible", "token: <redacted ", "cert: <redacted ", "type: Opaque", "name: s"} {
		if !strings.Contains(got, v) {
			t.Fatalf("SecretYAML lost %q:\n%s", v, got)
		}
	}
	changed := redact.SecretYAML(strings.Replace(src, "c2VjcmV0LXZhbHVl", "b3RoZXItdmFsdWU=", 1))
	if changed == got {
		t.Fatal("a changed value masks to the same text: a diff would hide the change")
	}
}

// FuzzSecretYAML: a value written under a Secret's stringData never
// survives masking, and text without a Secret comes back as it was.
func FuzzSecretYAML(f *testing.F) {
	f.Add("hunter2-long", "kind: ConfigMap\ndata:\n  a: visible\n")
	f.Add("\"quoted value\"", "")
	f.Add("|", "kind: Secret\n")
	f.Add("{a: b}", "data:\n  x: y\n")
	f.Fuzz(func(t *testing.T, value, other string) {
		if !strings.Contains(other, "Secret") && redact.SecretYAML(other) != other {
			t.Fatalf("text without a Secret changed: %q", other)
		}
		if strings.ContainsAny(value, "\r\n") {
			return
		}
		v := strings.TrimSpace(value)
		prefix := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  key: "
		text := prefix + value + "\ntype: Opaque\n"
		if len(v) < 4 || strings.HasPrefix(v, "#") || strings.Contains(prefix+"\ntype: Opaque\n<redacted ", v) {
			return
		}
		if out := redact.SecretYAML(text); strings.Contains(out, v) {
			t.Fatalf("value %q survives masking:\n%s", v, out)
		}
	})
}
