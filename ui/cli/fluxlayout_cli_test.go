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

// TestStatusClusterPath: on a repository in Flux's reference layout,
// `status` without a cluster folder says to pass --cluster-path and lists
// the folders; with --cluster-path it says which folder it follows and
// lists that cluster's Kustomizations and HelmRelease.
func TestStatusClusterPath(t *testing.T) {
	ctx := context.Background()
	const ns = "cli-flux-layout"
	if _, err := enginetest.Clientset(t).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const url = "https://git.example.com/team/fleet"
	repo := gitRepo(t, fluxtest.ReferenceLayout(url, ns))
	git(t, repo, "remote", "add", "origin", url)
	g := []string{"--repo", repo, "--kubeconfig", enginetest.Kubeconfig()}

	_, out, errOut := kdrift(t, ctx, append([]string{"status"}, g...)...)
	if !strings.Contains(out+errOut, "pass --cluster-path with the folder of the cluster to compare: clusters/production, clusters/staging") {
		t.Fatalf("status without a cluster folder:\n%s\n%s", out, errOut)
	}
	_, out, errOut = kdrift(t, ctx, append([]string{"status", "--cluster-path", "clusters/staging"}, g...)...)
	if !strings.Contains(errOut, "kdrift: Flux cluster folder clusters/staging (from --cluster-path)") {
		t.Fatalf("the cluster folder is not said:\n%s", errOut)
	}
	for _, want := range []string{"(Flux Kustomization flux-system/apps)", "(Flux Kustomization flux-system/infra-configs)", "(Flux HelmRelease " + ns + "/podinfo)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("status --cluster-path lacks %q:\n%s\n%s", want, out, errOut)
		}
	}
	if strings.Contains(out, "declared 2 times") {
		t.Fatalf("a name of two cluster folders is an error with a cluster folder:\n%s", out)
	}
}

// TestStatusLiveKustomization: a Kustomization made with `flux create
// kustomization` (in no file) that reads this repository is listed by
// `status`, which says on stderr where it came from.
func TestStatusLiveKustomization(t *testing.T) {
	ctx := context.Background()
	const ns = "cli-flux-live"
	cs := enginetest.Clientset(t)
	for _, n := range []string{ns, "flux-system"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	const url = "https://git.example.com/team/cli-flux-live"
	repo := gitRepo(t, map[string]string{
		"clusters/prod/flux-system/gotk-sync.yaml": fluxtest.BootstrapSync(url, "clusters/prod"),
		"apps/web/cm.yaml":                         "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: b}\n",
	})
	git(t, repo, "remote", "add", "origin", url)
	enginetest.InstallCRDs(t, "gitrepositories.source.toolkit.fluxcd.io.yaml", "kustomizations.kustomize.toolkit.fluxcd.io.yaml", "helmreleases.helm.toolkit.fluxcd.io.yaml")
	for _, o := range []map[string]any{
		{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository", "metadata": map[string]any{"name": "flux-system", "namespace": "flux-system"},
			"spec": map[string]any{"url": url, "interval": "1m0s", "ref": map[string]any{"branch": "main"}}},
		{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "metadata": map[string]any{"name": "flux-system", "namespace": "flux-system"},
			"spec": map[string]any{"path": "./clusters/prod", "interval": "10m0s", "prune": true, "sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"}}},
		{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "metadata": map[string]any{"name": "cli-live-web", "namespace": "flux-system"},
			"spec": map[string]any{"path": "./apps/web", "interval": "10m0s", "prune": true, "targetNamespace": ns, "sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"}}},
	} {
		u := &unstructured.Unstructured{Object: o}
		gvr := schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
		if u.GetKind() == "GitRepository" {
			gvr = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
		}
		c := enginetest.Dynamic(t).Resource(gvr).Namespace("flux-system")
		if _, err := c.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), u.GetName(), metav1.DeleteOptions{}) })
	}
	_, out, errOut := kdrift(t, ctx, "status", "--repo", repo, "--kubeconfig", enginetest.Kubeconfig())
	if !strings.Contains(out, "cli-live-web") || !strings.Contains(out, "(Flux Kustomization flux-system/cli-live-web)") {
		t.Fatalf("the live Kustomization must be listed:\n%s\n%s", out, errOut)
	}
	if !strings.Contains(errOut, "1 live Flux Kustomization on context") {
		t.Fatalf("stderr must say where the list came from:\n%s", errOut)
	}
}
