package actions

import (
	"path/filepath"
	"strings"

	"kdrift.dev/kdrift/engine/source"
)

// RepoIdentity is the repository identity of the branch actions commit to,
// as the engine computes it (source.Repo.Identity): the normalized URL of
// the upstream remote and the upstream branch. It is "" when the branch
// tracks no remote: such a repository is shared with nobody, so no other
// kdrift heals it.
func (r *Repo) RepoIdentity() (string, error) {
	if r.cache {
		return source.NormalizeURL(r.location) + "#" + r.branch, nil
	}
	remote, merge, ok, err := r.upstream()
	if err != nil || !ok {
		return "", err
	}
	u := r.remoteURL(remote)
	if u == "" {
		return "", nil
	}
	if !strings.Contains(u, "://") && !filepath.IsAbs(u) && !strings.Contains(u, ":") {
		// A remote named by a path relative to the repository.
		if wt, err := r.git.Worktree(); err == nil {
			u = filepath.Join(wt.Filesystem.Root(), u)
		}
	}
	return source.NormalizeURL(u) + "#" + merge.Short(), nil
}
