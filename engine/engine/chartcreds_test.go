package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/charttest"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/fluxtest"
	"kdrift.dev/kdrift/internal/gittest"
)

// TestArgoChartCredentialsOnACluster: an Argo CD source.chart from a Helm
// repository that requires a username and password is fetched with those
// of the live Argo CD repository Secret for its URL (or of a repo-creds
// template its URL starts with), renders and compares Synced; wrong ones
// are an Error naming the Secret; the password appears in no status.
func TestArgoChartCredentialsOnACluster(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "argo-creds")
	const user, password = "kdrift-reader", "pw-3b9d0c2e51"
	helmRepo := charttest.HelmRepoWith(t, charttest.RepoOptions{Require: charttest.Credentials{Username: user, Password: password}},
		charttest.Chart{Name: "vault", Version: "2.0.1", Files: fluxtest.RemoteChart("vault", "2.0.1", "nginx:1.27")})
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", "https://git.example.com/team/private.git")
	repo.Commit("an Argo CD chart app from a private repository", map[string]string{
		"argocd/vault.yaml": vaultApplication("vault", helmRepo.URL, ns),
	})
	applyVaultAsArgo(t, ns, "vault")

	cs := enginetest.Clientset(t)
	keepNamespace(t, "argocd")
	put := func(name, secretType string, data map[string]string) {
		t.Helper()
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "argocd", Labels: map[string]string{"argocd.argoproj.io/secret-type": secretType}}, StringData: data}
		_ = cs.CoreV1().Secrets("argocd").Delete(ctx, name, metav1.DeleteOptions{})
		if _, err := cs.CoreV1().Secrets("argocd").Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.CoreV1().Secrets("argocd").Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	check := func(phase string, want status.Sync, says string) status.AppStatus {
		t.Helper()
		e := newEngine(t, repo, nil)
		if err := e.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		c := appStatus(t, e, "vault")
		text := c.Error + "\n" + c.Chart
		t.Logf("%s: %s", phase, text)
		if c.Sync != want || !strings.Contains(text, says) {
			t.Fatalf("%s: want %s saying %q:\n%s\nchart %q", phase, want, says, describe(c), c.Chart)
		}
		js, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if all := fmt.Sprintf("%+v", c) + string(js); strings.Contains(all, password) {
			t.Fatalf("%s: the status holds the password:\n%s", phase, all)
		}
		return c
	}

	// A repository Secret without credentials: the repository asks.
	put("repo-vault", "repository", map[string]string{"type": "helm", "url": helmRepo.URL})
	check("no credentials", status.SyncError, "needs credentials and none were given")

	// Wrong ones: refused, the Secret named.
	put("repo-vault", "repository", map[string]string{"type": "helm", "url": helmRepo.URL, "username": user, "password": "wrong-" + password})
	check("wrong credentials", status.SyncError, "refused the credentials of Argo CD repository Secret argocd/repo-vault")

	// The right ones.
	before := helmRepo.WithAuthorization()
	put("repo-vault", "repository", map[string]string{"type": "helm", "url": helmRepo.URL, "username": user, "password": password})
	c := check("right credentials", status.SyncSynced, "with the credentials of Argo CD repository Secret argocd/repo-vault")
	if len(c.Resources) != 1 || helmRepo.WithAuthorization() != before+2 {
		t.Fatalf("want the Deployment, from 2 requests with credentials (index, archive), got %d:\n%s", helmRepo.WithAuthorization()-before, describe(c))
	}

	// A repository Secret without credentials takes those of the
	// repo-creds template its URL starts with.
	put("repo-vault", "repository", map[string]string{"type": "helm", "url": helmRepo.URL})
	put("creds-local", "repo-creds", map[string]string{"type": "helm", "url": helmRepo.URL, "username": user, "password": password})
	check("template", status.SyncSynced, "with the credentials of Argo CD repository Secret argocd/creds-local")
}

// TestArgoOCIChartCredentialsOnACluster: an Argo CD source.chart from an
// OCI registry that requires a login (repoURL without a scheme, the
// repository Secret's enableOCI) is fetched with the Secret's username
// and password, sent to that registry's host.
func TestArgoOCIChartCredentialsOnACluster(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "argo-oci-creds")
	const user, password = "kdrift-puller", "pw-7e41a9c03d"
	reg := charttest.RegistryWith(t, charttest.Credentials{Username: user, Password: password})
	reg.PushChart(t, "private/charts/vault", charttest.Chart{Name: "vault", Version: "2.0.1", Files: fluxtest.RemoteChart("vault", "2.0.1", "nginx:1.27")})
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", "https://git.example.com/team/private-oci.git")
	repo.Commit("an Argo CD chart app from a private registry", map[string]string{
		"argocd/vault.yaml": vaultApplication("vault-oci", reg.Host+"/private/charts", ns),
	})
	applyVaultAsArgo(t, ns, "vault-oci")
	cs := enginetest.Clientset(t)
	keepNamespace(t, "argocd")
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "repo-vault-oci", Namespace: "argocd", Labels: map[string]string{"argocd.argoproj.io/secret-type": "repository"}},
		StringData: map[string]string{"type": "helm", "enableOCI": "true", "url": reg.Host + "/private/charts", "username": user, "password": password}}
	if _, err := cs.CoreV1().Secrets("argocd").Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Secrets("argocd").Delete(context.Background(), sec.Name, metav1.DeleteOptions{})
	})
	e := newEngine(t, repo, nil)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	c := appStatus(t, e, "vault-oci")
	if c.Sync != status.SyncSynced || !strings.Contains(c.Chart, "with the credentials of Argo CD repository Secret argocd/repo-vault-oci") || reg.WithAuthorization() == 0 {
		t.Fatalf("want Synced with the Secret's credentials (%d requests with some):\n%s\nchart %q", reg.WithAuthorization(), describe(c), c.Chart)
	}
	if strings.Contains(fmt.Sprintf("%+v", c), password) {
		t.Fatal("the status holds the password")
	}
}

// applyVaultAsArgo applies Deployment name in ns as Argo CD leaves the
// vault chart's (image nginx:1.27, environment prod) for Application
// name.
func applyVaultAsArgo(t *testing.T, ns, name string) {
	t.Helper()
	applyAs(t, ns, "argocd-controller", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: `+name+`
spec:
  replicas: 1
  selector:
    matchLabels: {app: vault}
  template:
    metadata:
      labels: {app: vault}
    spec:
      containers:
      - name: vault
        image: nginx:1.27
`, map[string]string{"app": "vault", "env": "prod"}, map[string]string{"argocd.argoproj.io/tracking-id": name + ":apps/Deployment:" + ns + "/" + name})
}

// vaultApplication is an Argo CD Application name of chart vault 2.0.1
// from repoURL, with values, into namespace ns.
func vaultApplication(name, repoURL, ns string) string {
	return `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: ` + name + `, namespace: argocd}
spec:
  project: default
  source:
    repoURL: ` + repoURL + `
    chart: vault
    targetRevision: 2.0.1
    helm: {values: "environment: prod\n"}
  destination: {server: https://kubernetes.default.svc, namespace: ` + ns + `}
`
}
