package actions

import (
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"kdrift.dev/kdrift/engine/source"
)

// authFor picks credentials for a remote URL from the environment with the
// same variables the engine fetches with (source.AuthFrom): an https token,
// an ssh key file or the ssh agent; file:// and local paths need none.
func authFor(url string, getenv func(string) string) (transport.AuthMethod, error) {
	return source.AuthFrom(url, getenv)
}

// authFor are the credentials for remote: those the URL given held, for
// the cache clone's origin, else the environment's.
func (r *Repo) authFor(remote string) (transport.AuthMethod, error) {
	if r.urlAuth != nil && r.cache && remote == git.DefaultRemoteName {
		return r.urlAuth, nil
	}
	return authFor(r.remoteURL(remote), r.opts.Getenv)
}
