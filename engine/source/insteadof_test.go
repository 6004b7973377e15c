package source_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5"

	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/gittest"
)

// TestSameRepoThroughInsteadOf: a clone whose origin a
// `url.<base>.insteadOf` rule rewrites to a mirror (in the repository's
// config or in the global one) is the repository its configured URL
// names and the mirror's; another URL is not.
func TestSameRepoThroughInsteadOf(t *testing.T) {
	const configured, mirror = "https://github.com/team/gitops", "https://mirror.example.com/git/team/gitops.git"
	for _, scope := range []string{"local", "global"} {
		t.Run(scope, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("HOME", home)
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
			repo := gittest.Init(t)
			repo.Git("remote", "add", "origin", configured)
			rule := "[url \"https://mirror.example.com/git/\"]\n\tinsteadOf = https://github.com/\n"
			if scope == "local" {
				repo.Git("config", "url.https://mirror.example.com/git/.insteadOf", "https://github.com/")
			} else if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(rule), 0o644); err != nil {
				t.Fatal(err)
			}
			g, err := git.PlainOpen(repo.Dir)
			if err != nil {
				t.Fatal(err)
			}
			same := source.SameRepoFunc(g)
			for u, want := range map[string]bool{configured: true, configured + ".git": true, mirror: true, "https://github.com/team/other": false} {
				if got := same(u); got != want {
					t.Errorf("SameRepo(%q) = %v, want %v", u, got, want)
				}
			}
		})
	}
}
