package engine

import (
	"fmt"
	"net/url"
	"strings"

	"kdrift.dev/kdrift/engine/charts"
)

// Credentials of Argo CD repository Secrets (ARCHITECTURE.md, "Remote
// charts in the engine"): the username and password of the live Secrets
// argoRepositories reads, kept in memory with them and handed to the
// fetch of a chart whose repository they apply to, as Argo CD applies
// them: a `repository` Secret's to exactly its url, a `repo-creds`
// template's to every repository URL that starts with its url (on the
// same scheme, host and port: a template never lends its credentials to
// another host), the most specific first, and a repository Secret
// without credentials takes the template's.

// argoCred is what one live Argo CD repository Secret says about
// credentials.
type argoCred struct {
	// url is the Secret's url, as a location (oci:// added where
	// argoRepositories adds it).
	url string
	// template says the Secret is a repo-creds template.
	template bool
	// username and password are its credentials, "" when it has none.
	username, password string
	// by names the Secret, for messages.
	by string
}

// argoCredOf reads the credentials of the Secret NAMESPACE/NAME (secret)
// of type secretType whose url (as a location) is u; field reads a key of
// its data.
func argoCredOf(secretType, u, secret string, field func(string) string) argoCred {
	return argoCred{
		url:      u,
		template: secretType == "repo-creds",
		username: field("username"),
		password: field("password"),
		by:       "Argo CD repository Secret " + secret,
	}
}

// argoCredentials are the credentials creds give the repository repoURL,
// nil when none does.
func argoCredentials(repoURL string, creds []argoCred) *charts.Auth {
	want := credURL(repoURL)
	var best *argoCred
	for i, c := range creds {
		if c.username == "" || c.password == "" {
			continue
		}
		have := credURL(c.url)
		if want == "" || have == "" {
			continue
		}
		if !c.template {
			if have == want {
				// A repository Secret of exactly this URL.
				best = &creds[i]
				break
			}
			continue
		}
		if sameOrigin(have, want) && strings.HasPrefix(want, have) && (best == nil || len(have) > len(credURL(best.url))) {
			best = &creds[i]
		}
	}
	if best == nil {
		return nil
	}
	return &charts.Auth{Username: best.username, Password: best.password, By: best.by}
}

// credURL is u as credentials match it: scheme and host lower-case, no
// user, query, fragment or trailing "/"; "" when u is not a URL with a
// scheme and host.
func credURL(u string) string {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || p.Scheme == "" || p.Host == "" {
		return ""
	}
	p.Scheme, p.Host = strings.ToLower(p.Scheme), strings.ToLower(p.Host)
	p.User, p.RawQuery, p.ForceQuery, p.Fragment, p.RawFragment = nil, "", false, "", ""
	return strings.TrimRight(p.String(), "/")
}

// sameOrigin says whether the credential URLs a and b (credURL's) have
// the same scheme, host and port.
func sameOrigin(a, b string) bool {
	pa, errA := url.Parse(a)
	pb, errB := url.Parse(b)
	return errA == nil && errB == nil && pa.Scheme == pb.Scheme && pa.Host == pb.Host
}

// withArgoCredentials gives the locations of locs that allow ref the
// credentials the live Argo CD repository Secrets of namespace ns (on
// kubeconfig context kctx, as argoRepositories last read them) give ref's
// repository; note says whose, for the app's chart line ("" when none).
func (e *core) withArgoCredentials(kctx, ns string, ref charts.Ref, locs []charts.Location) (out []charts.Location, note string) {
	if kctx == "" {
		kctx = e.opts.Context
	}
	rc := e.charts
	rc.mu.Lock()
	s := rc.argo[kctx+"\x00"+ns]
	rc.mu.Unlock()
	if s == nil {
		return locs, ""
	}
	a := argoCredentials(ref.Repo, s.creds)
	if a == nil {
		return locs, ""
	}
	out = make([]charts.Location, len(locs))
	copy(out, locs)
	for i := range out {
		if charts.Allows(ref, out[i:i+1]) {
			out[i].Auth = a
			note = fmt.Sprintf(" (with the credentials of %s)", a.By)
		}
	}
	return out, note
}
