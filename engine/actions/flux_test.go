package actions

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"kdrift.dev/kdrift/internal/fluxtest"
)

// newFluxLayoutRemote makes a bare remote holding Flux's reference layout
// (fluxtest.ReferenceLayout) on main, and returns its path.
func newFluxLayoutRemote(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	remote := filepath.Join(root, "remote.git")
	gitRun(t, root, "init", "-q", "--bare", "-b", "main", remote)
	seed := filepath.Join(root, "seed")
	gitRun(t, root, "clone", "-q", remote, seed)
	for name, body := range fluxtest.ReferenceLayout(remote, "podinfo") {
		writeFile(t, seed, name, body)
	}
	gitRun(t, seed, "add", "-A")
	gitRun(t, seed, "commit", "-q", "-m", "Flux reference layout")
	gitRun(t, seed, "push", "-q", "origin", "main")
	return remote
}

// TestFreezeInAClusterFolder: in Flux's reference layout, `apps` is
// declared in every cluster folder; with a cluster folder the freeze
// writes into that folder's declaration only, and without one it is
// refused with the fix.
func TestFreezeInAClusterFolder(t *testing.T) {
	isolate(t)
	remote := newFluxLayoutRemote(t)
	dir := cloneOf(t, remote)
	ctx := context.Background()

	r := openRepo(t, dir, newClock())
	_, err := r.Freeze(ctx, FreezeRequest{Selection: Selection{Apps: []string{"flux-system/apps"}}, Reason: "INC-9"})
	if err == nil || !strings.Contains(err.Error(), "pass --cluster-path with the folder of the cluster to compare: clusters/production, clusters/staging") {
		t.Fatalf("a freeze of a name every cluster folder declares: %v", err)
	}

	r, err = Open(ctx, RepoOptions{Repo: dir, Author: testAuthor, Now: newClock().Now, ClusterPath: "clusters/production"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Freeze(ctx, FreezeRequest{Selection: Selection{Apps: []string{"apps"}}, Reason: "INC-9 hold production"}); err != nil {
		t.Fatal(err)
	}
	changed := gitRun(t, remote, "diff", "--name-only", "main~1", "main")
	if strings.TrimSpace(changed) != "clusters/production/apps.yaml" {
		t.Fatalf("the freeze wrote %q", changed)
	}
	if got := gitRun(t, remote, "show", "main:clusters/production/apps.yaml"); !strings.Contains(got, "suspend: true") {
		t.Fatalf("frozen:\n%s", got)
	}
}
