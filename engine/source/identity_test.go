package source_test

import (
	"context"
	"path/filepath"
	"testing"

	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/gittest"
)

func TestNormalizeURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://User:secret@GitHub.com/acme/deploy.git/": "github.com/acme/deploy",
		"https://github.com:443/acme/deploy":              "github.com/acme/deploy",
		"http://git.example:8080/acme/deploy.git":         "git.example:8080/acme/deploy",
		"ssh://git@GitHub.com:22/acme/deploy.git":         "github.com/acme/deploy",
		"ssh://git@github.com:2222/acme/deploy":           "github.com:2222/acme/deploy",
		"git@github.com:acme/deploy.git":                  "github.com/acme/deploy",
		"file:///srv/git/deploy.git":                      "/srv/git/deploy",
		"/srv/git/deploy.git/":                            "/srv/git/deploy",
	} {
		if got := source.NormalizeURL(in); got != want {
			t.Errorf("NormalizeURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestIdentity: two clones of one remote (and a cache clone of its URL)
// are one repository; a repository with no upstream is its path.
func TestIdentity(t *testing.T) {
	ctx := context.Background()
	bare, work := remote(t)
	id := func(loc string) string {
		t.Helper()
		r, err := source.Open(ctx, source.Options{Location: loc, CacheDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Identity()
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	clone := func() string {
		dir := filepath.Join(t.TempDir(), "clone")
		work.Git("clone", "-q", bare.Dir, dir)
		return dir
	}
	want := source.NormalizeURL(bare.Dir) + "#main"
	if a, b, c := id(clone()), id(clone()), id(bare.URL()); a != want || b != want || c != want {
		t.Fatalf("identities %q, %q, %q; want all %q", a, b, c, want)
	}
	lone := gittest.Init(t)
	lone.Commit("first", map[string]string{"README.md": "x\n"})
	if got := id(lone.Dir); got != filepath.Clean(lone.Dir) {
		t.Fatalf("a repository with no upstream: identity %q, want its path %q", got, lone.Dir)
	}
}
