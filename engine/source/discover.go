package source

import (
	"path/filepath"

	"github.com/go-git/go-git/v5"

	"kdrift.dev/kdrift/engine/render"
)

// discoverRenderer is the Renderer that renders apps to find the
// Applications and Kustomizations they generate, one per repository so
// that a parent app's render is cached between snapshots.
func (h *handle) discoverRenderer() *render.Renderer {
	h.discOnce.Do(func() { h.disc = render.NewRenderer() })
	return h.disc
}

// sameRepo reports whether a URL names this repository: one of its
// remotes, or its own folder, compared as NormalizeURL forms.
func (h *handle) sameRepo() func(string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return SameRepoFunc(h.repo)
}

// SameRepoFunc reports whether a URL names the repository g: the URL of
// one of its remotes or the folder of its work tree, compared as
// NormalizeURL forms (scheme, user, ".git", trailing "/" and host case
// do not matter).
func SameRepoFunc(g *git.Repository) func(string) bool {
	names := map[string]bool{}
	if cfg, err := g.Config(); err == nil {
		for _, rem := range cfg.Remotes {
			for _, u := range rem.URLs {
				names[NormalizeURL(u)] = true
			}
		}
	}
	if wt, err := g.Worktree(); err == nil {
		names[NormalizeURL(filepath.Clean(wt.Filesystem.Root()))] = true
	}
	return func(u string) bool { return u != "" && names[NormalizeURL(u)] }
}
