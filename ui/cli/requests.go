package cli

import (
	"context"
	"path/filepath"
	"strings"

	gogit "github.com/go-git/go-git/v5"

	"kdrift.dev/kdrift/engine/forge"
	"kdrift.dev/kdrift/engine/redact"
)

// upstreamURL is the address of the remote the repository's branch
// tracks, as the forge is found from it: --repo itself when it is a URL;
// empty when the branch tracks no remote.
func upstreamURL(g *globalFlags) string {
	if strings.Contains(g.repo, "://") || (strings.Contains(g.repo, "@") && strings.Contains(g.repo, ":")) {
		return g.repo
	}
	dir := g.repo
	if dir == "" {
		dir = "."
	}
	r, err := gogit.PlainOpenWithOptions(dir, &gogit.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
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
