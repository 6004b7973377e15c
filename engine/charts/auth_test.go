package charts_test

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/charts"
	"kdrift.dev/kdrift/internal/charttest"
)

// The credentials the private servers of these tests require.
const (
	user     = "kdrift-reader"
	password = "pw-9f3c1e7a"
)

// secretAuth is credentials as an Argo CD repository Secret gives them.
func secretAuth(pass string) *charts.Auth {
	return &charts.Auth{Username: user, Password: pass, By: "Argo CD repository Secret argocd/private"}
}

// noPassword fails the test when err's message holds the password.
func noPassword(t *testing.T, err error) {
	t.Helper()
	if strings.Contains(err.Error(), password) || strings.Contains(err.Error(), "wrong-"+password) {
		t.Errorf("the message holds the password: %v", err)
	}
}

func TestFetchHelmRepoWithCredentials(t *testing.T) {
	repo := charttest.HelmRepoWith(t, charttest.RepoOptions{Require: charttest.Credentials{Username: user, Password: password}}, podinfo)
	ref := charts.Ref{Repo: repo.URL, Chart: "podinfo", Version: "6.5.4"}
	cache := t.TempDir()
	f := &charts.Fetcher{CacheDir: cache}

	e := fetchErr(t, f, ref, []charts.Location{{URL: repo.URL, By: "--chart-repo"}})
	if !strings.Contains(e.Problem, "needs credentials and none were given") || !strings.Contains(e.Fix, "Argo CD repository Secret with username and password") {
		t.Errorf("anonymous: %v", e)
	}

	e = fetchErr(t, f, ref, []charts.Location{{URL: repo.URL, By: "--chart-repo", Auth: secretAuth("wrong-" + password)}})
	if !strings.Contains(e.Problem, "refused the credentials of Argo CD repository Secret argocd/private") || !strings.Contains(e.Fix, "argocd/private") || e.Offline {
		t.Errorf("wrong credentials: %v", e)
	}
	noPassword(t, e)
	if repo.WithAuthorization() != 1 {
		t.Errorf("%d requests with credentials, want 1 (the index, refused)", repo.WithAuthorization())
	}

	// The location with credentials wins over one without, listed first.
	allowed := []charts.Location{{URL: repo.URL, By: "--chart-repo"}, {URL: repo.URL + "/", By: "Argo CD repository Secret argocd/private", Auth: secretAuth(password)}}
	got := mustFetch(t, f, ref, allowed)
	checkPodinfo(t, got)
	if got.By != "Argo CD repository Secret argocd/private" || repo.WithAuthorization() != 3 {
		t.Errorf("by %q with %d requests with credentials, want the Secret's and 3", got.By, repo.WithAuthorization())
	}

	// Nothing on disk holds the credentials.
	err := filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err == nil && (strings.Contains(string(data), password) || strings.Contains(string(data), user)) {
			t.Errorf("%s holds the credentials", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFetchCredentialsStayOnTheRepositoryOrigin: credentials go to the
// repository's own scheme, host and port only, as Helm sends them: not to
// an archive the index names on another origin, and not across a
// redirect there (http.Client itself keeps them on a redirect to the same
// host name at another port, as these servers are).
func TestFetchCredentialsStayOnTheRepositoryOrigin(t *testing.T) {
	for _, tc := range []struct {
		name     string
		archives charttest.Archives
		// toRepo is how many requests the repository gets, all with
		// credentials.
		toRepo int64
	}{
		{"index names another host", charttest.ArchivesElsewhere, 1},
		{"repository redirects", charttest.ArchivesRedirected, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := charttest.HelmRepoWith(t, charttest.RepoOptions{Require: charttest.Credentials{Username: user, Password: password}, Archives: tc.archives}, podinfo)
			allowed := []charts.Location{
				{URL: repo.URL, By: "Argo CD repository Secret argocd/private", Auth: secretAuth(password)},
				{URL: repo.ArchiveHost.URL, By: "--chart-repo"},
			}
			got := mustFetch(t, &charts.Fetcher{}, charts.Ref{Repo: repo.URL, Chart: "podinfo", Version: "6.5.4"}, allowed)
			checkPodinfo(t, got)
			if repo.Requests() != tc.toRepo || repo.WithAuthorization() != tc.toRepo {
				t.Errorf("repository: %d requests, %d with credentials; want %d with", repo.Requests(), repo.WithAuthorization(), tc.toRepo)
			}
			if a := repo.ArchiveHost; a.Requests() != 1 || a.WithAuthorization() != 0 {
				t.Errorf("archive host: %d requests, %d with credentials; want 1 without", a.Requests(), a.WithAuthorization())
			}
		})
	}
}

// TestFetchArchiveHostAsksForCredentials: an archive on another origin
// that asks for credentials gets none, and the message says why.
func TestFetchArchiveHostAsksForCredentials(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Errorf("the archive host got credentials")
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="cdn"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	defer other.Close()
	repo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "entries:\n  podinfo:\n  - version: 6.5.4\n    urls: [%s/podinfo-6.5.4.tgz]\n", other.URL)
	}))
	defer repo.Close()
	allowed := []charts.Location{{URL: repo.URL, By: "Argo CD repository Secret argocd/private", Auth: secretAuth(password)}, {URL: other.URL, By: "--chart-repo"}}
	e := fetchErr(t, &charts.Fetcher{}, charts.Ref{Repo: repo.URL, Chart: "podinfo", Version: "6.5.4"}, allowed)
	if !strings.Contains(e.Problem, "a host other than the repository's own asked for credentials") {
		t.Errorf("archive host asks: %v", e)
	}
}

func TestFetchRegistryWithCredentials(t *testing.T) {
	reg := charttest.RegistryWith(t, charttest.Credentials{Username: user, Password: password})
	digest := reg.PushChart(t, "charts/podinfo", podinfo)
	loc := "oci://" + reg.Host + "/charts"
	ref := charts.Ref{Repo: loc, Chart: "podinfo", Version: "6.5.4"}
	f := &charts.Fetcher{}

	e := fetchErr(t, f, ref, []charts.Location{{URL: loc, By: "--chart-repo"}})
	if !strings.Contains(e.Problem, "needs credentials and none were given") {
		t.Errorf("anonymous: %v", e)
	}
	before := reg.WithAuthorization()
	e = fetchErr(t, f, ref, []charts.Location{{URL: loc, By: "--chart-repo", Auth: secretAuth("wrong-" + password)}})
	if !strings.Contains(e.Problem, "refused the credentials of Argo CD repository Secret argocd/private") || e.Offline {
		t.Errorf("wrong credentials: %v", e)
	}
	noPassword(t, e)
	if reg.WithAuthorization() == before {
		t.Error("the wrong credentials were not sent")
	}

	ref.Digest = digest
	got := mustFetch(t, f, ref, []charts.Location{{URL: loc, By: "Argo CD repository Secret argocd/private", Auth: secretAuth(password)}})
	checkPodinfo(t, got)
}

func TestAuthPrintsNoPassword(t *testing.T) {
	loc := charts.Location{URL: "https://charts.example.com", By: "x", Auth: secretAuth(password)}
	for _, s := range []string{fmt.Sprint(loc), fmt.Sprintf("%+v", loc), fmt.Sprintf("%#v", loc), fmt.Sprintf("%v %s %+v %#v", *loc.Auth, loc.Auth, loc.Auth, *loc.Auth)} {
		if strings.Contains(s, password) || strings.Contains(s, user) {
			t.Errorf("printed: %s", s)
		}
	}
}

// TestFetchIgnoresARedirectsOwnCredentials: a redirect to a URL with a
// user and password does not make kdrift send them.
func TestFetchIgnoresARedirectsOwnCredentials(t *testing.T) {
	repo := charttest.HelmRepoWith(t, charttest.RepoOptions{Archives: charttest.ArchivesElsewhere}, podinfo)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(repo.URL, "http://", "http://someone:"+password+"@", 1)+r.URL.Path, http.StatusFound)
	}))
	defer redirector.Close()
	allowed := []charts.Location{{URL: redirector.URL, By: "--chart-repo"}, {URL: repo.URL, By: "--chart-repo"}, {URL: repo.ArchiveHost.URL, By: "--chart-repo"}}
	checkPodinfo(t, mustFetch(t, &charts.Fetcher{}, charts.Ref{Repo: redirector.URL, Chart: "podinfo", Version: "6.5.4"}, allowed))
	if repo.WithAuthorization() != 0 || repo.ArchiveHost.WithAuthorization() != 0 {
		t.Errorf("%d and %d requests with credentials, want none", repo.WithAuthorization(), repo.ArchiveHost.WithAuthorization())
	}
}
