package source

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Identity is the repository identity kdrift's tracking metadata carries
// (ARCHITECTURE.md, "Repository identity"): the normalized URL of the branch's
// upstream remote and the upstream branch, as NormalizeURL(url)+"#"+branch,
// so two clones of one remote are the same repository. A repository whose
// branch tracks no remote is identified by its absolute path and is never
// shared. A cache clone of a URL is identified by that URL and the branch.
func (r *Repo) Identity() (string, error) {
	if r.remote {
		return CloneIdentity(r.location, r.branch), nil
	}
	return LocalIdentity(r.handle().repo, r.dir, r.branch)
}

// CloneIdentity is the identity of branch in a cache clone of url: the
// URL's normalized form and the branch.
func CloneIdentity(url, branch string) string {
	return NormalizeURL(url) + "#" + branch
}

// LocalIdentity is the identity of branch in repo, a repository opened
// from the folder dir (its working tree's root, or the bare repository):
// the normalized URL of the branch's upstream remote and the upstream
// branch, else dir's absolute path. engine/actions names the Lease it
// nudges by this identity, so it must be the engine's to the byte.
func LocalIdentity(repo *git.Repository, dir, branch string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("repository %s: %w", dir, err)
	}
	cfg, err := repo.Config()
	if err != nil {
		return "", fmt.Errorf("repository %s: config read failed: %w", abs, err)
	}
	b, ok := cfg.Branches[branch]
	if ok && b.Remote != "" && b.Remote != "." && b.Merge != "" {
		if rem, known := cfg.Remotes[b.Remote]; known && len(rem.URLs) > 0 {
			u := rem.URLs[0]
			if !isRemote(u) && !filepath.IsAbs(u) {
				// A remote named by a path relative to the repository.
				u = filepath.Join(abs, u)
			}
			return NormalizeURL(u) + "#" + b.Merge.Short(), nil
		}
	}
	return abs, nil
}

// NormalizeURL is the form of a remote URL that names the repository, not
// the way to reach it: scheme, user and password dropped, host lower-cased,
// the scheme's default port dropped, a trailing "/" and ".git" dropped.
// https://User:pw@GitHub.com/org/repo.git/, ssh://git@github.com:22/org/repo
// and git@github.com:org/repo all become github.com/org/repo. A local path
// or file:// URL becomes the cleaned absolute path.
func NormalizeURL(loc string) string {
	trim := func(p string) string {
		p = strings.TrimRight(p, "/")
		p = strings.TrimSuffix(p, ".git")
		return strings.TrimRight(p, "/")
	}
	if strings.Contains(loc, "://") {
		u, err := url.Parse(loc)
		if err == nil {
			if u.Scheme == "file" {
				return trim(filepath.Clean(u.Path))
			}
			host := strings.ToLower(u.Hostname())
			if port := u.Port(); port != "" && port != defaultPorts[strings.ToLower(u.Scheme)] {
				host += ":" + port
			}
			return trim(host + "/" + strings.TrimLeft(u.Path, "/"))
		}
	}
	if !filepath.IsAbs(loc) {
		if ep, err := transport.NewEndpoint(loc); err == nil && ep.Protocol == "ssh" && ep.Host != "" {
			// scp-like user@host:path
			return trim(strings.ToLower(ep.Host) + "/" + strings.TrimLeft(ep.Path, "/"))
		}
		if abs, err := filepath.Abs(loc); err == nil {
			loc = abs
		}
	}
	return trim(filepath.Clean(loc))
}

// defaultPorts are the ports a URL may name without changing the server.
var defaultPorts = map[string]string{"https": "443", "http": "80", "ssh": "22", "git": "9418"}

// UpstreamBranch is the name branch has where kdrift reads it: its
// upstream's branch (branch.NAME.merge) when it tracks one, else branch
// itself. A Flux GitRepository reads what kdrift reads when it follows
// this branch.
func UpstreamBranch(repo *git.Repository, branch string) string {
	if cfg, err := repo.Config(); err == nil {
		if b, ok := cfg.Branches[branch]; ok && b.Remote != "" && b.Merge != "" {
			return b.Merge.Short()
		}
	}
	return branch
}

// remoteURLs are the URLs cfg's remotes name, each both as configured
// and as the `url.<base>.insteadOf` rules of cfg and of global (nil for
// none) rewrite it: a clone of a mirror whose origin a rule rewrites is
// still the repository its configured URL names, and the mirror's. git
// takes the longest insteadOf that prefixes the URL.
func remoteURLs(cfg, global *config.Config) []string {
	rules := map[string]string{} // insteadOf -> base
	for _, c := range []*config.Config{global, cfg} {
		if c == nil || c.Raw == nil {
			continue
		}
		for _, sub := range c.Raw.Section("url").Subsections {
			for _, from := range sub.Options.GetAll("insteadOf") {
				if from != "" {
					rules[from] = sub.Name
				}
			}
		}
	}
	rewrite := func(u string) string {
		best := ""
		for from := range rules {
			if strings.HasPrefix(u, from) && len(from) > len(best) {
				best = from
			}
		}
		if best == "" {
			return u
		}
		return rules[best] + u[len(best):]
	}
	var out []string
	for _, rem := range cfg.Remotes {
		out = append(out, rem.URLs...)
	}
	if cfg.Raw != nil {
		for _, sub := range cfg.Raw.Section("remote").Subsections {
			for _, u := range sub.Options.GetAll("url") {
				out = append(out, u, rewrite(u))
			}
		}
	}
	return out
}
