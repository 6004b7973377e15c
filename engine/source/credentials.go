package source

import (
	"net/url"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/http"
)

// SplitCredentials takes the user and token out of an http(s) URL
// (https://user:token@host/repo) and returns the URL without them and the
// credentials as basic auth (nil when it held none). kdrift keeps such a
// token in memory only and hands it to each fetch, clone and push: a
// clone made from the URL as given would store it in the cache clone's
// .git/config, readable by anyone who can read the cache folder. Other
// locations are returned as they are.
func SplitCredentials(location string) (string, transport.AuthMethod) {
	lower := strings.ToLower(location)
	if !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
		return location, nil
	}
	u, err := url.Parse(location)
	if err != nil || u.User == nil {
		return location, nil
	}
	user := u.User.Username()
	pass, hasPass := u.User.Password()
	u.User = nil
	clean := u.String()
	if !hasPass {
		if user == "" {
			return clean, nil
		}
		// https://TOKEN@host: the token is the user name, as some hosts
		// take it.
		return clean, &http.BasicAuth{Username: user}
	}
	if user == "" {
		user = "git"
	}
	return clean, &http.BasicAuth{Username: user, Password: pass}
}
