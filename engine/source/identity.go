package source

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

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
		return NormalizeURL(r.location) + "#" + r.branch, nil
	}
	repo := r.handle().repo
	cfg, err := repo.Config()
	if err != nil {
		return "", fmt.Errorf("repository %s: config read failed: %w", r.location, err)
	}
	b, ok := cfg.Branches[r.branch]
	if ok && b.Remote != "" && b.Remote != "." && b.Merge != "" {
		if rem, known := cfg.Remotes[b.Remote]; known && len(rem.URLs) > 0 {
			u := rem.URLs[0]
			if !isRemote(u) && !filepath.IsAbs(u) {
				// A remote named by a path relative to the repository.
				u = filepath.Join(r.dir, u)
			}
			return NormalizeURL(u) + "#" + b.Merge.Short(), nil
		}
	}
	return filepath.Clean(r.dir), nil
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
