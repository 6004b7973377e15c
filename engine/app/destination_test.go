package app_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/gittest"
)

func TestNormalizeServer(t *testing.T) {
	t.Parallel()
	same := [][]string{
		{"https://API.Prod.example.com", "https://api.prod.example.com:443/", "HTTPS://api.prod.example.com/"},
		{"http://10.0.0.1:80", "http://10.0.0.1"},
		{"https://[::1]:443", "https://[::1]"},
		{"https://k8s.example.com:6443/", "https://k8s.example.com:6443"},
	}
	for _, group := range same {
		for _, s := range group[1:] {
			if a, b := app.NormalizeServer(group[0]), app.NormalizeServer(s); a != b {
				t.Errorf("%s -> %s, %s -> %s: want one form", group[0], a, s, b)
			}
		}
	}
	if app.NormalizeServer("https://k8s.example.com:6443") == app.NormalizeServer("https://k8s.example.com") {
		t.Error("another port is another server")
	}
}

// TestDiscoverDestinationServer: destination.server maps to the context
// whose cluster is that server; several contexts take destination.name;
// none, or an ambiguous server, is an Error that says what to do.
func TestDiscoverDestinationServer(t *testing.T) {
	t.Parallel()
	argo := func(name, dest string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: " + name + ", namespace: argocd}\nspec:\n  source: {repoURL: https://github.com/example/gitops, path: guestbook}\n  destination: {" + dest + "namespace: x}\n"
	}
	files := map[string]string{
		"guestbook/cm.yaml": cm,
		"apps/prod.yaml":    argo("prod", "server: 'https://API.prod.example.com:443/', "),
		"apps/stage.yaml":   argo("stage", "server: 'https://stage.example.com', name: stage-admin, "),
		"apps/twice.yaml":   argo("twice", "server: 'https://stage.example.com', "),
		"apps/wrong.yaml":   argo("wrong", "server: 'https://stage.example.com', name: prod, "),
		"apps/none.yaml":    argo("none", "server: 'https://dev.example.com', "),
	}
	clusters := map[string]string{"prod": "https://api.prod.example.com", "stage-admin": "https://stage.example.com/", "stage-ro": "https://stage.example.com"}
	res := discoverWith(t, files, source.Options{Clusters: clusters})
	for name, ctx := range map[string]string{"prod": "prod", "stage": "stage-admin"} {
		a, ok := res.Find(name)
		if !ok || a.Spec.Destination.Context != ctx {
			t.Errorf("%s: context %q, want %q (%+v)", name, a.Spec.Destination.Context, ctx, res.Invalid)
		}
	}
	for name, want := range map[string]string{
		"twice": "spec.destination.server: server https://stage.example.com is the cluster of several kubeconfig contexts: stage-admin, stage-ro; set spec.destination.name",
		"wrong": `spec.destination.name: context "prod" is not one whose cluster is server https://stage.example.com (contexts of that server: stage-admin, stage-ro)`,
		"none":  "spec.destination.server: server https://dev.example.com is the cluster of no kubeconfig context, and kdrift reaches clusters through contexts; add one: kubectl config set-cluster NAME --server=https://dev.example.com",
	} {
		in, ok := res.FindInvalid(name)
		if !ok || !strings.Contains(in.Err.Error(), want) {
			t.Errorf("%s: %+v, want %q", name, in, want)
		}
	}
	res = discoverWith(t, files, source.Options{ClustersErr: errors.New("kubeconfig /nowhere: cannot load it")})
	if in, ok := res.FindInvalid("none"); !ok || !strings.Contains(in.Err.Error(), "no kubeconfig context (kubeconfig /nowhere: cannot load it)") {
		t.Errorf("unreadable kubeconfig: %+v", in)
	}
}

// discoverWith discovers the apps of a repository holding files, opened
// with opts.
func discoverWith(t *testing.T, files map[string]string, opts source.Options) app.LoadResult {
	t.Helper()
	return snapshotOf(t, files, opts).Apps()
}

// snapshotOf commits files to a new repository whose origin is
// github.com/example/gitops and opens its snapshot with opts.
func snapshotOf(t *testing.T, files map[string]string, opts source.Options) *source.Snapshot {
	t.Helper()
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", "https://github.com/example/gitops.git")
	hash := repo.Commit("apps", files)
	opts.Location = repo.Dir
	r, err := source.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := r.Snapshot(hash)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}
