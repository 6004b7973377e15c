package cli

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
