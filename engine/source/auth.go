package source

import (
	"fmt"
	"os"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/plumbing/transport/ssh"
)

// Environment variables AuthFromEnv reads.
const (
	// EnvToken is an HTTPS token, sent as the basic-auth password.
	EnvToken = "KDRIFT_GIT_TOKEN"
	// EnvTokenFallback is read when EnvToken is unset.
	EnvTokenFallback = "GIT_TOKEN"
	// EnvUsername is the basic-auth user sent with the token (default "git").
	EnvUsername = "KDRIFT_GIT_USERNAME"
	// EnvSSHKey is a private key file for ssh; without it the ssh agent is used.
	EnvSSHKey = "KDRIFT_SSH_KEY"
	// EnvSSHKeyPassword is the passphrase of EnvSSHKey, if it has one.
	EnvSSHKeyPassword = "KDRIFT_SSH_KEY_PASSWORD"
)

// AuthFromEnv is AuthFrom with the process environment.
func AuthFromEnv(location string) (transport.AuthMethod, error) {
	return AuthFrom(location, os.Getenv)
}

// AuthFrom picks credentials for location from an environment: for
// https a token (KDRIFT_GIT_TOKEN, else GIT_TOKEN) as basic auth; for ssh the
// key file in KDRIFT_SSH_KEY, else the ssh agent, with host keys checked
// against $SSH_KNOWN_HOSTS, else ~/.ssh/known_hosts. It returns nil when the
// transport needs none (file://) or none is configured.
// Fetching (engine) and pushing (actions) both use it, so one set of
// variables works for both.
func AuthFrom(location string, getenv func(string) string) (transport.AuthMethod, error) {
	ep, err := transport.NewEndpoint(location)
	if err != nil {
		return nil, fmt.Errorf("cannot parse %q as a Git URL: %w", location, err)
	}
	switch ep.Protocol {
	case "http", "https":
		tok := getenv(EnvToken)
		if tok == "" {
			tok = getenv(EnvTokenFallback)
		}
		if tok == "" {
			return nil, nil
		}
		user := getenv(EnvUsername)
		if user == "" {
			user = "git"
		}
		return &http.BasicAuth{Username: user, Password: tok}, nil
	case "ssh":
		user := ep.User
		if user == "" {
			user = "git"
		}
		if key := getenv(EnvSSHKey); key != "" {
			auth, err := ssh.NewPublicKeysFromFile(user, key, getenv(EnvSSHKeyPassword))
			if err != nil {
				return nil, fmt.Errorf("ssh key %s (from %s): %w", key, EnvSSHKey, err)
			}
			return auth, nil
		}
		if getenv("SSH_AUTH_SOCK") == "" {
			return nil, fmt.Errorf("no ssh credentials: set %s to a private key file or start an ssh agent (SSH_AUTH_SOCK)", EnvSSHKey)
		}
		auth, err := ssh.NewSSHAgentAuth(user)
		if err != nil {
			return nil, fmt.Errorf("ssh agent: %w", err)
		}
		return auth, nil
	}
	return nil, nil
}
