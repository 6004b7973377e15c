package cli

import (
	"context"
	"os/exec"
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

// TestActionsTakeTheAppsStatusLists: on a repository in Flux's reference
// layout whose cluster folder comes from the live bootstrap Kustomization
// (no --cluster-path), `status` lists apps, and `freeze apps` freezes the
// production folder's declaration (never "not found"); a Kustomization
// that only lives in the cluster is refused, saying why, not "not found".
func TestActionsTakeTheAppsStatusLists(t *testing.T) {
	ctx := context.Background()
	const ns = "cli-resolve"
	cs := enginetest.Clientset(t)
	for _, n := range []string{ns, "flux-system"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	const url = "https://git.example.com/team/cli-resolve"
	repo := gitRepo(t, fluxtest.ReferenceLayout(url, ns))
	git(t, repo, "remote", "add", "origin", url)
	enginetest.InstallCRDs(t, "gitrepositories.source.toolkit.fluxcd.io.yaml", "kustomizations.kustomize.toolkit.fluxcd.io.yaml", "helmreleases.helm.toolkit.fluxcd.io.yaml")
	for _, o := range []map[string]any{
		{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository", "metadata": map[string]any{"name": "flux-system", "namespace": "flux-system"},
			"spec": map[string]any{"url": url, "interval": "1m0s", "ref": map[string]any{"branch": "main"}}},
		{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "metadata": map[string]any{"name": "flux-system", "namespace": "flux-system"},
			"spec": map[string]any{"path": "./clusters/production", "interval": "10m0s", "prune": true, "sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"}}},
		{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "metadata": map[string]any{"name": "cli-resolve-live", "namespace": "flux-system"},
			"spec": map[string]any{"path": "./apps/base/podinfo", "interval": "10m0s", "prune": true, "targetNamespace": ns, "sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"}}},
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
	g := []string{"--repo", repo, "--kubeconfig", enginetest.Kubeconfig()}
	_, out, errOut := kdrift(t, ctx, append([]string{"status"}, g...)...)
	for _, want := range []string{"(Flux Kustomization flux-system/apps)", "cli-resolve-live"} {
		if !strings.Contains(out, want) {
			t.Fatalf("status lacks %q:\n%s\n%s", want, out, errOut)
		}
	}
	t.Setenv("KDRIFT_AUTHOR", "Lao Li <lao.li@example.com>")
	code, out, errOut := kdrift(t, ctx, append([]string{"freeze", "apps", "--reason", "INC-9 hold apps"}, g...)...)
	if code != exitOK || strings.Contains(errOut, "not found") {
		t.Fatalf("freeze apps: exit %d\n%s\n%s", code, out, errOut)
	}
	show := func(p string) string {
		b, err := exec.Command("git", "-C", repo, "show", "HEAD:"+p).CombinedOutput()
		if err != nil {
			t.Fatalf("git show %s: %v\n%s", p, err, b)
		}
		return string(b)
	}
	if prod, staging := show("clusters/production/apps.yaml"), show("clusters/staging/apps.yaml"); !strings.Contains(prod, "suspend: true") || !strings.Contains(prod, "INC-9 hold apps") || strings.Contains(staging, "INC-9") {
		t.Fatalf("the production folder's apps must be frozen, not staging's:\n%s\n---\n%s", prod, staging)
	}
	code, out, errOut = kdrift(t, ctx, append([]string{"freeze", "cli-resolve-live", "--reason", "INC-9 hold live"}, g...)...)
	if code != exitError || strings.Contains(errOut, "not found") || !strings.Contains(errOut, "live in the cluster") || !strings.Contains(errOut, "no document to commit the change to") {
		t.Fatalf("freeze of a live-only app: exit %d\n%s\n%s", code, out, errOut)
	}
}
