package cli

import (
	"context"
	"path/filepath"
	"strings"
	"sync"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"kdrift.dev/kdrift/engine/forge"
	"kdrift.dev/kdrift/engine/redact"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/ui"
)

// upstreamURL is the address of the remote the repository's branch
// tracks, as the forge is found from it: --repo itself when it is a URL;
// empty when the branch tracks no remote.
func upstreamURL(g *globalFlags) string {
	if isURL(g.repo) {
		return g.repo
	}
	r := localRepo(g)
	if r == nil {
		return ""
	}
	branch := g.branch
	if branch == "" {
		head, err := r.Head()
		if err != nil || !head.Name().IsBranch() {
			return ""
		}
		branch = head.Name().Short()
	}
	cfg, err := r.Config()
	if err != nil {
		return ""
	}
	b, ok := cfg.Branches[branch]
	if !ok || b.Remote == "" || b.Remote == "." {
		return ""
	}
	rem, ok := cfg.Remotes[b.Remote]
	if !ok || len(rem.URLs) == 0 {
		return ""
	}
	u := rem.URLs[0]
	if !strings.Contains(u, "://") && !strings.Contains(u, "@") && !filepath.IsAbs(u) {
		return ""
	}
	return u
}

// openRequests reads kdrift's open requests on the repository's forge:
// none and no note without a token (kdrift does not guess); a one-line
// note when the forge cannot be placed or does not answer.
func openRequests(ctx context.Context, g *globalFlags, f *forgeFlags) ([]forge.PullRequest, string) {
	q, err := f.requests(upstreamURL(g))
	if err != nil {
		return nil, "pull requests not shown: " + firstLineOf(redact.Text(err.Error()))
	}
	if q == nil {
		return nil, ""
	}
	prs, err := q.Get(ctx)
	if err != nil {
		return nil, "pull requests not shown: " + firstLineOf(redact.Text(err.Error()))
	}
	return prs, ""
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// uiForge is what the UI's app view shows from the forge and CODEOWNERS
// of the repository: the open requests only with a token, the code owners
// of a local repository.
func uiForge(g *globalFlags, f *forgeFlags) (ui.Forge, string) {
	var out ui.Forge
	note := ""
	if q, err := f.requests(upstreamURL(g)); err != nil {
		note = "pull requests not shown: " + firstLineOf(redact.Text(err.Error()))
	} else if q != nil {
		out.Requests = q.Peek
	}
	if repo := localRepo(g); repo != nil {
		out.CodeOwners = codeOwners(repo)
	}
	return out, note
}

// localRepo opens the repository of --repo (or the current folder) when
// it is local; nil for a URL or no repository.
func localRepo(g *globalFlags) *gogit.Repository {
	if isURL(g.repo) {
		return nil
	}
	dir := g.repo
	if dir == "" {
		dir = "."
	}
	r, err := gogit.PlainOpenWithOptions(dir, &gogit.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return nil
	}
	return r
}

// codeOwners looks up who owns an App's files at its revision, once per
// App and revision.
func codeOwners(repo *gogit.Repository) func(status.AppStatus) ([]string, error) {
	type key struct{ app, rev, file, path string }
	type answer struct {
		owners []string
		err    error
	}
	var mu sync.Mutex
	cache := map[key]answer{}
	return func(a status.AppStatus) ([]string, error) {
		k := key{a.Name, a.Revision, a.File, a.Path}
		mu.Lock()
		defer mu.Unlock()
		if got, ok := cache[k]; ok {
			return got.owners, got.err
		}
		if len(cache) > 1000 {
			clear(cache)
		}
		owners, err := forge.AppOwners(repo, plumbing.NewHash(a.Revision), a.File, a.Path)
		cache[k] = answer{owners, err}
		return owners, err
	}
}

// isURL says whether --repo names a remote (a URL or scp-like address)
// rather than a folder.
func isURL(repo string) bool {
	return strings.Contains(repo, "://") || (strings.Contains(repo, "@") && strings.Contains(repo, ":"))
}
