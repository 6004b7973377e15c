package source_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/source"
)

// TestTokenInURLStaysInMemory: a token given in --repo
// https://user:token@host/… is used for the clone, each fetch and an
// action's push, and never written to the cache clone's config (nor
// anywhere in the clone).
func TestTokenInURLStaysInMemory(t *testing.T) {
	ctx := context.Background()
	bare, work := remote(t)
	bare.Git("config", "http.receivepack", "true")
	const token = "s3cret-url-token"
	srv := gitHTTPServer(t, filepath.Dir(bare.Dir), token)
	t.Setenv(source.EnvToken, "")
	t.Setenv(source.EnvTokenFallback, "")
	url := strings.Replace(srv.URL, "http://", "http://deploy:"+token+"@", 1) + "/" + filepath.Base(bare.Dir)
	cache := t.TempDir()

	r, err := source.Open(ctx, source.Options{Location: url, CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	c2 := work.Commit("second", map[string]string{".kdrift/apps.yaml": "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: web\nspec:\n  path: deploy/web\n"})
	work.Git("push", "-q", "origin", "main")
	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if rev, err := r.Head(ctx); err != nil || rev.Hash != c2 {
		t.Fatalf("Head = %+v %v, want %s", rev, err, c2)
	}
	if strings.Contains(r.Location(), token) {
		t.Fatalf("Location shows the token: %s", r.Location())
	}

	a, err := actions.Open(ctx, actions.RepoOptions{Repo: url, CacheDir: cache, Author: "Erin Oncall <erin@example.com>"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Freeze(ctx, actions.FreezeRequest{Selection: actions.Selection{Apps: []string{"web"}}, Reason: "INC-5 hold"})
	if err != nil || !res.Pushed {
		t.Fatalf("freeze through the URL's token: %+v %v", res, err)
	}
	if got := bare.Git("rev-parse", "main"); got != res.Commit {
		t.Fatalf("remote main = %s, want the pushed %s", got, res.Commit)
	}

	cfg, err := os.ReadFile(filepath.Join(r.Dir(), "config"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cfg), token) || !strings.Contains(string(cfg), srv.URL) {
		t.Fatalf("the cache clone's config:\n%s", cfg)
	}
	err = filepath.Walk(cache, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || info.Size() > 1<<20 {
			return err
		}
		data, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(data), token) {
			t.Errorf("%s holds the token", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
