package actions

import (
	"kdrift.dev/kdrift/engine/source"
)

// RepoIdentity is the repository identity of the branch actions commit to,
// the same as the engine's (source.Repo.Identity; ARCHITECTURE.md,
// "Repository identity"): the normalized URL of the upstream remote and
// the upstream branch, or the repository's absolute path when the branch
// tracks no remote. The nudge after an action names the healer's Lease by
// it, so it must be the engine's to the byte.
func (r *Repo) RepoIdentity() (string, error) {
	if r.cache {
		return source.CloneIdentity(r.location, r.branch), nil
	}
	return source.LocalIdentity(r.git, r.dir, r.branch)
}
