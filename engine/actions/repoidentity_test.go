package actions

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"kdrift.dev/kdrift/engine/source"
)

// TestRepoIdentityIsTheEngines: the identity an action nudges a healer by
// is the engine's (source.Repo.Identity) for a clone with an upstream, a
// branch with no upstream, a repository with no remote at all, a path
// inside the working tree and a cache clone of a URL. With no upstream it
// is the repository's absolute path, as ARCHITECTURE.md says.
func TestRepoIdentityIsTheEngines(t *testing.T) {
	ctx := context.Background()
	remote := newRemote(t)
	clone := cloneOf(t, remote)
	lone := filepath.Join(t.TempDir(), "lone")
	gitRun(t, filepath.Dir(lone), "init", "-q", "-b", "main", lone)
	writeFile(t, lone, "README.md", "alone\n")
	gitRun(t, lone, "add", "-A")
	gitRun(t, lone, "commit", "-qm", "first")
	local := filepath.Join(t.TempDir(), "local")
	gitRun(t, filepath.Dir(local), "clone", "-q", remote, local)
	gitRun(t, local, "checkout", "-q", "-b", "hotfix")
	if out := gitRun(t, local, "for-each-ref", "--format=%(upstream)", "refs/heads/hotfix"); out != "" && out != "\n" {
		t.Fatalf("hotfix tracks %q: the test needs a branch with no upstream", out)
	}
	if err := os.MkdirAll(filepath.Join(clone, "deploy", "prod"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, loc, want string
	}{
		{"clone with an upstream", clone, source.NormalizeURL(remote) + "#main"},
		{"branch with no upstream", local, local},
		{"no remote at all", lone, lone},
		{"path inside the working tree", filepath.Join(clone, "deploy", "prod"), source.NormalizeURL(remote) + "#main"},
		{"cache clone of a URL", "file://" + remote, source.NormalizeURL(remote) + "#main"},
	} {
		cache := t.TempDir()
		a, err := Open(ctx, RepoOptions{Repo: c.loc, Author: testAuthor, CacheDir: cache})
		if err != nil {
			t.Fatalf("%s: actions.Open: %v", c.name, err)
		}
		got, err := a.RepoIdentity()
		if err != nil {
			t.Fatalf("%s: actions identity: %v", c.name, err)
		}
		s, err := source.Open(ctx, source.Options{Location: c.loc, CacheDir: cache})
		if err != nil {
			t.Fatalf("%s: source.Open: %v", c.name, err)
		}
		engine, err := s.Identity()
		if err != nil {
			t.Fatalf("%s: source identity: %v", c.name, err)
		}
		if got != engine || got != c.want {
			t.Errorf("%s: actions identity %q, engine identity %q; want both %q", c.name, got, engine, c.want)
		}
	}
}
