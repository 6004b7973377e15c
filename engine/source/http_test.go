package source_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/source"
)

// gitHTTPServer serves the repositories under root with the real
// `git http-backend`, asking for basic auth with password token.
func gitHTTPServer(t *testing.T, root, token string) *httptest.Server {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	backend := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pass, ok := r.BasicAuth(); !ok || pass != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestCloneHTTPWithTokenFromEnv(t *testing.T) {
	ctx := context.Background()
	bare, work := remote(t)
	srv := gitHTTPServer(t, filepath.Dir(bare.Dir), "s3cret-token")
	url := srv.URL + "/" + filepath.Base(bare.Dir)

	t.Setenv(source.EnvToken, "")
	t.Setenv(source.EnvTokenFallback, "")
	_, err := source.Open(ctx, source.Options{Location: url, CacheDir: t.TempDir()})
	var re *source.RemoteError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "clone failed: authentication required") {
		t.Fatalf("without a token: %v", err)
	}

	t.Setenv(source.EnvToken, "s3cret-token")
	r, err := source.Open(ctx, source.Options{Location: url, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := r.Head(ctx)
	if err != nil || rev.Hash != work.Git("rev-parse", "HEAD") {
		t.Fatalf("Head over http = %+v, %v", rev, err)
	}
	next := work.Commit("over http", map[string]string{"README.md": "http\n"})
	work.Git("push", "-q", "origin", "main")
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if rev, err := r.Head(ctx); err != nil || rev.Hash != next {
		t.Fatalf("Head after fetch = %+v, %v", rev, err)
	}
}
