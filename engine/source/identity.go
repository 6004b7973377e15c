package source

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
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
