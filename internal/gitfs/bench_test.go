package gitfs_test

import (
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"kdrift.dev/kdrift/internal/gitfs"
	"kdrift.dev/kdrift/internal/gittest"
)

// openers are the two ways to open a repository the benchmarks compare.
var openers = map[string]func(string) (*git.Repository, error){
	"gitfs":  func(dir string) (*git.Repository, error) { return gitfs.PlainOpen(dir, nil) },
	"go-git": func(dir string) (*git.Repository, error) { return git.PlainOpen(dir) },
}

// BenchmarkPlainOpen measures opening a repository (gitfs lets go-git find
// it, then opens it again on the wrapped filesystem).
func BenchmarkPlainOpen(b *testing.B) {
	repo := gittest.Init(b)
	repo.Commit("base", map[string]string{"a": "a\n"})
	for name, open := range openers {
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := open(repo.Dir); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMoveBranch measures one compare-and-swap of a branch: through
// the lock file (with its fsync) or in place.
func BenchmarkMoveBranch(b *testing.B) {
	for name, open := range openers {
		b.Run(name, func(b *testing.B) {
			repo := gittest.Init(b)
			first := plumbing.NewHash(repo.Commit("one", map[string]string{"a": "a\n"}))
			second := plumbing.NewHash(repo.Commit("two", map[string]string{"a": "b\n"}))
			g, err := open(repo.Dir)
			if err != nil {
				b.Fatal(err)
			}
			name := plumbing.NewBranchReferenceName("main")
			cur, next := second, first
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := g.Storer.CheckAndSetReference(plumbing.NewHashReference(name, next), plumbing.NewHashReference(name, cur)); err != nil {
					b.Fatal(err)
				}
				cur, next = next, cur
			}
		})
	}
}
