package cli

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/fluxtest"
)

// liveFlux creates Flux GitRepositories and Kustomizations (as a Flux
// bootstrap would) in the local cluster, deleted when the test ends.
func liveFlux(t *testing.T, objs ...map[string]any) {
	t.Helper()
	ctx := context.Background()
	enginetest.InstallCRDs(t, "gitrepositories.source.toolkit.fluxcd.io.yaml", "kustomizations.kustomize.toolkit.fluxcd.io.yaml", "helmreleases.helm.toolkit.fluxcd.io.yaml")
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: o}
		if _, err := enginetest.Clientset(t).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: u.GetNamespace()}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		gvr := schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
		if u.GetKind() == "GitRepository" {
			gvr = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
		}
		c := enginetest.Dynamic(t).Resource(gvr).Namespace(u.GetNamespace())
		if _, err := c.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), u.GetName(), metav1.DeleteOptions{}) })
	}
}

// fluxBootstrap is the live GitRepository and Kustomization flux-system
// that `flux bootstrap` makes for url, branch and the cluster folder
// path.
func fluxBootstrap(url, branch, path string) []map[string]any {
	return []map[string]any{
		{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository", "metadata": map[string]any{"name": "flux-system", "namespace": "flux-system"},
			"spec": map[string]any{"url": url, "interval": "1m0s", "ref": map[string]any{"branch": branch}}},
		{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "metadata": map[string]any{"name": "flux-system", "namespace": "flux-system"},
			"spec": map[string]any{"path": path, "interval": "10m0s", "prune": true, "sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"}}},
	}
}

// TestStatusSameAnswerAnyCache: on flux2-multi-tenancy, `status` with
// the cluster folder spelled clusters/production or
// ./clusters/production, and with no flag while the live bootstrap
// names the folder, gives the same table on an empty cache folder and on
// the one the other runs left, in both orders; that table is the
// production cluster's, with no declaration counted twice.
func TestStatusSameAnswerAnyCache(t *testing.T) {
	ctx := context.Background()
	repo := gitRepo(t, fluxtest.Public(t, fluxtest.MultiTenancy))
	git(t, repo, "remote", "add", "origin", fluxtest.MultiTenancyURL)
	g := []string{"--repo", repo, "--kubeconfig", enginetest.Kubeconfig()}
	status := func(args ...string) string {
		t.Helper()
		_, out, errOut := kdrift(t, ctx, append(append([]string{"status"}, args...), g...)...)
		if strings.Contains(out, "declared") || !strings.Contains(out, "kyverno-policies") {
			t.Fatalf("status %v is not the production cluster's:\n%s\n%s", args, out, errOut)
		}
		return out
	}
	runs := [][]string{{"--cluster-path", "clusters/production"}, {"--cluster-path", "./clusters/production"}}
	check := func(runs [][]string) {
		t.Helper()
		for _, order := range [][][]string{runs, {runs[1], runs[0]}} {
			t.Setenv("XDG_CACHE_HOME", t.TempDir())
			want := status(order[0]...)
			for _, args := range [][]string{order[1], order[0], order[1]} {
				if got := status(args...); got != want {
					t.Fatalf("status %v on the cache %v left:\n%s\nand cold:\n%s", args, order[0], got, want)
				}
			}
		}
	}
	check(runs)
	liveFlux(t, fluxBootstrap(fluxtest.MultiTenancyURL, "main", "./clusters/production")...)
	check([][]string{nil, runs[0]})
}

// TestStatusOtherBootstrapNotAdopted: with another repository's
// bootstrap live in the cluster (flux2-monitoring-example's flux-system
// GitRepository and its Kustomizations), `status --cluster-path
// clusters/production` on flux2-kustomize-helm-example lists none of
// that repository's Kustomizations.
func TestStatusOtherBootstrapNotAdopted(t *testing.T) {
	ctx := context.Background()
	repo := gitRepo(t, fluxtest.Public(t, fluxtest.KustomizeHelm))
	git(t, repo, "remote", "add", "origin", fluxtest.KustomizeHelmURL)
	objs := fluxBootstrap(fluxtest.MonitoringURL, "main", "./clusters/test")
	for _, p := range []string{"controllers", "configs"} {
		objs = append(objs, map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
			"metadata": map[string]any{"name": "monitoring-" + p, "namespace": "flux-system"},
			"spec":     map[string]any{"path": "./monitoring/" + p, "interval": "1h", "prune": true, "sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"}}})
	}
	liveFlux(t, objs...)
	_, out, errOut := kdrift(t, ctx, "status", "--cluster-path", "clusters/production", "--repo", repo, "--kubeconfig", enginetest.Kubeconfig())
	if strings.Contains(out, "monitoring-") || strings.Contains(errOut, "live Flux Kustomization") {
		t.Fatalf("another repository's Kustomizations were adopted:\n%s\n%s", out, errOut)
	}
	if !strings.Contains(out, "infra-controllers") {
		t.Fatalf("status lacks the cluster's own Kustomizations:\n%s\n%s", out, errOut)
	}
}

// TestStatusBootstrapOfAnotherBranch: a live bootstrap that reads this
// repository's URL on another branch does not name this cluster's
// folder; status says why.
func TestStatusBootstrapOfAnotherBranch(t *testing.T) {
	ctx := context.Background()
	repo := gitRepo(t, fluxtest.Public(t, fluxtest.MultiTenancy))
	git(t, repo, "remote", "add", "origin", fluxtest.MultiTenancyURL)
	liveFlux(t, fluxBootstrap(fluxtest.MultiTenancyURL, "dev-team", "./clusters/production")...)
	_, out, errOut := kdrift(t, ctx, "status", "--repo", repo, "--kubeconfig", enginetest.Kubeconfig())
	if strings.Contains(errOut, "Flux cluster folder clusters/production") {
		t.Fatalf("the bootstrap of branch dev-team chose the cluster folder:\n%s\n%s", out, errOut)
	}
	if !strings.Contains(errOut, "no live Kustomization reads branch main of this repository (flux-system/flux-system (branch dev-team) read other refs of it)") {
		t.Fatalf("status does not say why no live folder was taken:\n%s\n%s", out, errOut)
	}
}
