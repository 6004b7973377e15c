package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
	"kdrift.dev/kdrift/internal/hostile"
)

// TestHostileRepository: one healthy app beside many hostile ones in the
// same repository. Nothing runs (no marker file), nothing connects (the
// loopback listener accepts nothing), the engine's pass completes, the
// healthy app is Synced and each hostile app is Error naming its cause.
func TestHostileRepository(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "hostile")
	tr := hostile.NewTrap(t)
	files := map[string]string{
		".kdrift/calm.yaml":   appYAML("calm", "deploy/calm", ns, true, false, ""),
		"deploy/calm/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: calm\ndata:\n  a: \"1\"\n",
	}
	cases := hostile.Cases(tr)
	for _, c := range cases {
		files[".kdrift/"+c.Name+".yaml"] = appYAML(c.Name, "deploy/"+c.Name, ns, true, false, "")
		for f, body := range c.Files {
			files[f] = body
		}
	}
	repo := gittest.Init(t)
	repo.Commit("hostile", files)
	e := newEngine(t, repo, nil)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if calm := appStatus(t, e, "calm"); calm.Sync != status.SyncSynced {
		t.Fatalf("the healthy app must sync beside the hostile ones:\n%s", describe(calm))
	}
	for _, c := range cases {
		a := appStatus(t, e, c.Name)
		if a.Sync != status.SyncError || !strings.Contains(a.Error, c.Want) {
			t.Errorf("%s: want Error containing %q:\n%s", c.Name, c.Want, describe(a))
		}
	}
	if _, err := os.Stat(tr.Marker); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("marker %s exists (or cannot be checked: %v): the repository ran a command", tr.Marker, err)
	}
	if n := tr.Accepts(); n != 0 {
		t.Fatalf("%d connections reached the loopback listener", n)
	}
	// A second pass (the cache answers) and the JSON of every status still
	// hold no surprise.
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := json.Marshal(e.Apps()); err != nil {
		t.Fatal(err)
	}
}

// TestTokenNeverPrinted: a Git URL with a token, whose server answers with
// an error that go-git words with the URL it requested: the error the engine
// returns names the URL without its credentials (they are kept in memory,
// never in the URL go-git is given).
func TestTokenNeverPrinted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "broken", http.StatusInternalServerError)
	}))
	defer srv.Close()
	const token = "s3cr3t-t0ken-value"
	loc := strings.Replace(srv.URL, "http://", "http://kdrift:"+token+"@", 1) + "/org/repo.git"
	_, err := engine.New(engine.Options{Repo: loc, Branch: "main", CacheDir: t.TempDir(), Kubeconfig: enginetest.Kubeconfig()})
	if err == nil {
		t.Fatal("opening a failing remote succeeded")
	}
	bare := strings.TrimPrefix(srv.URL, "http://") + "/org/repo.git"
	if msg := err.Error(); strings.Contains(msg, token) || strings.Contains(msg, "kdrift:") || !strings.Contains(msg, bare) {
		t.Fatalf("error shows the credentials or not the URL %s: %v", bare, err)
	}
	tokenOnly := strings.Replace(srv.URL, "http://", "http://"+token+"@", 1) + "/org/repo.git"
	_, err = engine.New(engine.Options{Repo: tokenOnly, Branch: "main", CacheDir: t.TempDir(), Kubeconfig: enginetest.Kubeconfig()})
	if err == nil || strings.Contains(err.Error(), token) {
		t.Fatalf("error shows the token: %v", err)
	}
}
