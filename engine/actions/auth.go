package actions

import (
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
)

// authFor picks credentials for a remote URL from the environment: an https
// token (KDRIFT_GIT_TOKEN, then GIT_TOKEN; user KDRIFT_GIT_USER or
// x-access-token) as basic auth, an ssh key file (KDRIFT_SSH_KEY, passphrase
// KDRIFT_SSH_KEY_PASSPHRASE) or the ssh agent; file:// and local paths need
// none.
func authFor(url string, getenv func(string) string) (transport.AuthMethod, error) {
	ep, err := transport.NewEndpoint(url)
	if err != nil {
		return nil, fmt.Errorf("remote %s: not a usable URL: %w", url, err)
	}
	switch ep.Protocol {
	case "http", "https":
		token := getenv("KDRIFT_GIT_TOKEN")
		if token == "" {
			token = getenv("GIT_TOKEN")
		}
		if token == "" {
			return nil, nil
		}
		user := getenv("KDRIFT_GIT_USER")
		if user == "" {
			user = "x-access-token"
		}
		return &githttp.BasicAuth{Username: user, Password: token}, nil
	case "ssh":
		user := ep.User
		if user == "" {
			user = "git"
		}
		if key := getenv("KDRIFT_SSH_KEY"); key != "" {
			a, err := gitssh.NewPublicKeysFromFile(user, key, getenv("KDRIFT_SSH_KEY_PASSPHRASE"))
			if err != nil {
				return nil, fmt.Errorf("ssh key %s (KDRIFT_SSH_KEY): %w", key, err)
			}
			return a, nil
		}
		a, err := gitssh.NewSSHAgentAuth(user)
		if err != nil {
			return nil, fmt.Errorf("remote %s: no ssh agent (%v); start one or set KDRIFT_SSH_KEY to a key file", strings.TrimSpace(url), err)
		}
		return a, nil
	default:
		return nil, nil
	}
}
