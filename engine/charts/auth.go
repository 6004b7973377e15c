package charts

import (
	"fmt"
	"net/http"
	"net/url"

	"oras.land/oras-go/v2/registry/remote/auth"

	"kdrift.dev/kdrift/engine/redact"
)

// Credentials (ARCHITECTURE.md, "Remote Helm charts"): a location may
// carry a username and password (an Argo CD repository Secret's). They
// live in memory only: the cache's keys and records are made of the
// normalized location, chart and version, never of them; messages name
// where they came from (Auth.By), never what they are.

// Auth is a username and password to fetch a location with, and where
// they came from. It prints as where they came from only.
type Auth struct {
	Username, Password string
	// By names where they came from, for messages ("Argo CD repository
	// Secret argocd/private-charts").
	By string
}

// Format prints a as "credentials of BY", whatever the verb: a Location
// or an Auth printed by mistake shows no password.
func (a Auth) Format(f fmt.State, _ rune) {
	_, _ = fmt.Fprintf(f, "credentials of %s", a.By)
}

// creds are the credentials of one fetch and the origin (scheme, host and
// port) they may be sent to: the repository's own, as Helm does; an
// archive the index names on another host, or a redirect there, goes
// without them. A nil *creds is an anonymous fetch.
type creds struct {
	auth   *Auth
	origin string
}

// newCreds is the credentials a of the location loc, nil when a is nil
// or lacks a username or password.
func newCreds(loc *url.URL, a *Auth) *creds {
	if a == nil || a.Username == "" || a.Password == "" {
		return nil
	}
	scheme := loc.Scheme
	if scheme == "oci" {
		scheme = "https"
		if loopback(loc.Hostname()) {
			scheme = "http"
		}
	}
	return &creds{auth: a, origin: origin(&url.URL{Scheme: scheme, Host: loc.Host})}
}

// origin is u's scheme, host and port (the scheme's default when u gives
// none), lower-case.
func origin(u *url.URL) string {
	return u.Scheme + "://" + hostPort(u.Hostname(), u.Port(), defaultPort(u.Scheme))
}

// apply sets HTTP basic auth on req when req goes to c's origin, and says
// whether it did.
func (c *creds) apply(req *http.Request) bool {
	if c == nil || origin(req.URL) != c.origin {
		return false
	}
	req.SetBasicAuth(c.auth.Username, c.auth.Password)
	return true
}

// registry is the oras credential of c: for exactly the registry host
// (host:port as oras names it) of loc, none for any other host.
func (c *creds) registry(loc *url.URL) auth.CredentialFunc {
	if c == nil {
		return nil
	}
	return auth.StaticCredential(loc.Host, auth.Credential{Username: c.auth.Username, Password: c.auth.Password})
}

// scrub removes the password (and the basic-auth header value made of
// it) from e's message, should a server or library have quoted it.
func (c *creds) scrub(e *Error) {
	if c == nil {
		return
	}
	var s redact.Secrets
	s.Add(c.auth.Password, c.auth.Username+":"+c.auth.Password)
	e.Problem, e.Fix = s.Scrub(e.Problem), s.Scrub(e.Fix)
}

// stripCredentials is the redirect rule of a fetch's client: the
// Authorization header goes only to the origin of the first request,
// which is where a fetch sets it (http.Client keeps it on a redirect to
// the same host name at another port or scheme, or to a subdomain), and
// a URL's own user and password are never used (a redirect could name
// some).
func stripCredentials(req *http.Request, via []*http.Request) {
	req.URL.User = nil
	if origin(req.URL) != origin(via[0].URL) {
		req.Header.Del("Authorization")
	}
}

// needsCredentials is the Error of a request answered 401 or 403: the
// credentials c gave were refused (sent), or the host asked for
// credentials that kdrift does not send there, or there were none.
func needsCredentials(ref Ref, c *creds, sent bool, err error) *Error {
	switch {
	case c != nil && sent:
		return fail(ref, err, fmt.Sprintf("check the username and password of %s (and that they may read this chart)", c.auth.By),
			"the repository refused the credentials of %s (%v)", c.auth.By, err)
	case c != nil:
		return fail(ref, err, "make the archive readable there without credentials, or vendor the chart into Git (helm pull --untar)",
			"a host other than the repository's own asked for credentials; kdrift sends those of %s only to the repository's scheme, host and port (%v)", c.auth.By, err)
	}
	return fail(ref, err, "an Argo CD repository Secret with username and password for this URL supplies them (the artifact a Flux source serves needs none); or make the chart readable without credentials, or vendor it into Git (helm pull --untar)",
		"the repository needs credentials and none were given (%v)", err)
}
