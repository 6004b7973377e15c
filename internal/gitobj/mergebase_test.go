package gitobj_test

import (
	"fmt"
	"math/rand"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"kdrift.dev/kdrift/internal/gitobj"
	"kdrift.dev/kdrift/internal/gittest"
	"kdrift.dev/kdrift/internal/hostile"
)

// history makes n commits in r from seed: each has one parent, or two
// (a merge, criss-cross ones among them), or none (a second root), with
// committer times one second apart, or equal where same is set.
func history(t *testing.T, r *gittest.Repo, seed int64, n int, same bool) []string {
	t.Helper()
	rnd := rand.New(rand.NewSource(seed))
	tree := r.Git("mktree")
	var commits []string
	for i := 0; i < n; i++ {
		date := 1700000000 + i
		if same {
			date = 1700000000
		}
		t.Setenv("GIT_COMMITTER_DATE", fmt.Sprintf("%d +0000", date))
		args := []string{"commit-tree", tree, "-m", fmt.Sprintf("c%d", i)}
		if len(commits) > 0 && rnd.Intn(12) != 0 {
			// Parents are mostly recent commits: long branches that meet.
			pick := func() string { return commits[max(0, len(commits)-1-rnd.Intn(6))] }
			p := pick()
			args = append(args, "-p", p)
			if q := pick(); q != p && rnd.Intn(3) == 0 {
				args = append(args, "-p", q)
			}
		}
		commits = append(commits, r.Git(args...))
	}
	return commits
}

// gitMergeBase is `git merge-base --all a b`, sorted.
func gitMergeBase(t *testing.T, r *gittest.Repo, a, b string) []string {
	t.Helper()
	cmd := exec.Command("git", "merge-base", "--all", a, b)
	cmd.Dir = r.Dir
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 && len(out) == 0 {
		return nil // no common history
	}
	if err != nil {
		t.Fatalf("git merge-base %s %s: %v", a, b, err)
	}
	got := strings.Fields(string(out))
	slices.Sort(got)
	return got
}

// TestMergeBaseIsGits: on generated histories with criss-cross merges and
// several roots, MergeBase gives what `git merge-base --all` gives, for
// every pair of commits.
func TestMergeBaseIsGits(t *testing.T) {
	cases := 0
	for seed := int64(1); seed <= 6; seed++ {
		r := gittest.Init(t)
		commits := history(t, r, seed, 40, seed == 6)
		g := open(t, r)
		for i := 0; i < len(commits); i += 3 {
			for j := i + 1; j < len(commits); j += 2 {
				want := gitMergeBase(t, r, commits[i], commits[j])
				bases, err := gitobj.MergeBase(g.Storer, plumbing.NewHash(commits[i]), plumbing.NewHash(commits[j]))
				if err != nil {
					t.Fatalf("seed %d: MergeBase(c%d, c%d): %v", seed, i, j, err)
				}
				var got []string
				for _, h := range bases {
					got = append(got, h.String())
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("seed %d: MergeBase(c%d, c%d) = %v, git merge-base --all = %v", seed, i, j, got, want)
				}
				if len(want) > 1 {
					cases++
				}
			}
		}
	}
	if cases == 0 {
		t.Error("no pair had more than one best common ancestor: the histories test no criss-cross")
	}
}

// TestMergeBaseCrissCross: the classic criss-cross has two best common
// ancestors, neither an ancestor of the other.
func TestMergeBaseCrissCross(t *testing.T) {
	r := gittest.Init(t)
	tree := r.Git("mktree")
	root := r.Git("commit-tree", tree, "-m", "root")
	a := r.Git("commit-tree", tree, "-p", root, "-m", "a")
	b := r.Git("commit-tree", tree, "-p", root, "-m", "b")
	x := r.Git("commit-tree", tree, "-p", a, "-p", b, "-m", "x")
	y := r.Git("commit-tree", tree, "-p", b, "-p", a, "-m", "y")
	g := open(t, r)
	bases, err := gitobj.MergeBase(g.Storer, plumbing.NewHash(x), plumbing.NewHash(y))
	var got []string
	for _, h := range bases {
		got = append(got, h.String())
	}
	slices.Sort(got)
	if want := gitMergeBase(t, r, x, y); err != nil || len(want) != 2 || !slices.Equal(got, want) {
		t.Errorf("MergeBase(x, y) = %v, %v; git says %v", got, err, want)
	}
}

// TestMergeBaseReadsHugeCommitsHeaderOnly: a 64 MiB commit message on
// one side of a divergence is read up to the end of its header only.
func TestMergeBaseReadsHugeCommitsHeaderOnly(t *testing.T) {
	r := gittest.Init(t)
	base := r.Commit("base", hostile.BaseFiles)
	other := r.Commit("other side", map[string]string{"o": "1"})
	r.Git("reset", "-q", "--hard", base)
	hostile.BigMessage(t, r, "web", big)
	top := r.Commit("after", map[string]string{"x": "y"})
	for _, packed := range []bool{false, true} {
		if packed {
			r.Git("repack", "-a", "-d", "-q")
		}
		g := open(t, r)
		var bases []plumbing.Hash
		var err error
		n := allocated(func() { bases, err = gitobj.MergeBase(g.Storer, plumbing.NewHash(top), plumbing.NewHash(other)) })
		if err != nil || len(bases) != 1 || bases[0].String() != base {
			t.Errorf("packed %v: MergeBase = %v, %v; want %s", packed, bases, err, base)
		}
		if n > 8<<20 {
			t.Errorf("packed %v: the merge-base past a %d-byte commit allocated %d bytes", packed, big, n)
		}
	}
}
