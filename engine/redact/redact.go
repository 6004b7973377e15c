// Package redact removes credentials and Secret content from text before it
// reaches any output: passwords and tokens in URLs (a remote's address, a
// go-git error that quotes the URL it requested) and the values of
// Kubernetes Secrets (a kustomize or apiserver message that quotes an
// object). It never prints; callers pass every message through it.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces a credential or a Secret value.
const Mask = "xxxxx"

// URL returns loc with its password replaced by Mask. For http and https a
// user name without a password is masked too, since hosts accept a token
// there (https://TOKEN@github.com/...); an ssh user (git@host) is kept.
// Anything that is not a URL with credentials comes back unchanged.
func URL(loc string) string {
	u, err := url.Parse(loc)
	if err != nil || u.User == nil {
		return Text(loc)
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), Mask)
	} else if u.Scheme == "http" || u.Scheme == "https" {
		u.User = url.User(Mask)
	} else {
		return loc
	}
	return strings.Replace(u.String(), url.QueryEscape(Mask), Mask, 1)
}

// userinfo finds the credentials of URLs inside free text: scheme://,
// then a user (and password) up to the @ before the host.
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*)://([^/?#\s@"'<>]+)@`)

// Text returns s with every URL inside it redacted as URL does: error
// messages of go-git and of HTTP clients quote the URL they requested,
// credentials included.
func Text(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	return userinfo.ReplaceAllStringFunc(s, func(m string) string {
		sub := userinfo.FindStringSubmatch(m)
		scheme, info := sub[1], sub[2]
		if user, _, ok := strings.Cut(info, ":"); ok {
			return scheme + "://" + user + ":" + Mask + "@"
		}
		switch strings.ToLower(scheme) {
		case "http", "https":
			return scheme + "://" + Mask + "@"
		}
		return m
	})
}

// Error wraps err so that its message has every URL credential redacted
// (Text); errors.Is and errors.As still see err.
func Error(err error) error {
	if err == nil {
		return nil
	}
	return &redacted{err: err}
}

type redacted struct{ err error }

func (e *redacted) Error() string { return Text(e.err.Error()) }
func (e *redacted) Unwrap() error { return e.err }
