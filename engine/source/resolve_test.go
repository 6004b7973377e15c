package source_test

import (
	"context"
	"testing"

	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/gittest"
)

// TestResolveFollowsTheUpstream: a targetRevision resolves to a branch of
// the upstream as last fetched (a local branch of that name is never
// taken), an annotated or light tag, or a full commit hash; a name that
// is not a ref name, or names nothing fetched, is an error.
func TestResolveFollowsTheUpstream(t *testing.T) {
	ctx := context.Background()
	remote := gittest.InitBare(t)
	work := gittest.Init(t)
	first := work.Commit("first", map[string]string{"a.yaml": "a: 1\n"})
	work.Git("remote", "add", "origin", remote.Dir)
	work.Git("push", "-q", "-u", "origin", "main")
	work.Git("checkout", "-q", "-b", "staging")
	staged := work.Commit("staging", map[string]string{"a.yaml": "a: 2\n"})
	work.Git("push", "-q", "origin", "staging")
	work.Commit("local only", map[string]string{"a.yaml": "a: 3\n"}) // not pushed
	work.Git("tag", "-a", "v1", "-m", "release", first)
	work.Git("tag", "light", staged)
	work.Git("checkout", "-q", "main")
	r, err := source.Open(ctx, source.Options{Location: work.Dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, hash, ref string }{
		{"staging", staged, "origin/staging"},
		{"v1", first, "tag v1"},
		{"light", staged, "tag light"},
		{first, first, "commit " + first[:7]},
	} {
		rev, ref, err := r.Resolve(tt.name)
		if err != nil || rev.Hash != tt.hash || ref != tt.ref {
			t.Errorf("Resolve(%q) = %s %q %v; want %s %q", tt.name, rev.Hash, ref, err, tt.hash, tt.ref)
		}
	}
	for _, bad := range []string{"../../HEAD", "wip", first[:7], "a b", ""} {
		if rev, ref, err := r.Resolve(bad); err == nil {
			t.Errorf("Resolve(%q) = %s %q, want an error", bad, rev.Hash, ref)
		}
	}
}
