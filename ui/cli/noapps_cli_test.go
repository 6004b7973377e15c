package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/internal/enginetest"
)

// TestStatusNoAppsSaysWhy: a service repository with plain kustomize
// folders and no declaration gives no app; status says why (no App
// file, no Argo CD or Flux declaration) and what to do, in text and in
// JSON, and exits 0: nothing failed and nothing drifted.
func TestStatusNoAppsSaysWhy(t *testing.T) {
	ctx := context.Background()
	repo := gitRepo(t, map[string]string{
		"deploy/base/kustomization.yaml":          "resources: [cm.yaml]\n",
		"deploy/base/cm.yaml":                     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  color: blue\n",
		"deploy/overlays/prod/kustomization.yaml": "resources: [../../base]\nnamespace: web-prod\n",
	})
	g := []string{"--repo", repo, "--kubeconfig", enginetest.Kubeconfig()}
	code, out, errOut := kdrift(t, ctx, append([]string{"status"}, g...)...)
	for _, want := range []string{
		"no app found:",
		"no App file: " + git(t, repo, "rev-parse", "--short=7", "HEAD") + " has no .kdrift/ folder at the repository root",
		"no Argo CD Application or Flux Kustomization declared in Git",
		"write an App file for each folder kustomize, Helm or plain YAML renders, e.g. .kdrift/my-app.yaml:",
		"    kind: App",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("status lacks %q: %d\n%s\n%s", want, code, out, errOut)
		}
	}
	if code != exitOK {
		t.Fatalf("status exit %d, want %d\n%s", code, exitOK, errOut)
	}
	code, out, errOut = kdrift(t, ctx, append([]string{"status", "-o", "json"}, g...)...)
	var doc struct {
		Apps   []any `json:"apps"`
		NoApps *struct {
			Why    []string `json:"why"`
			Next   []string `json:"next"`
			Detail struct {
				AppDir bool `json:"appDir"`
			} `json:"detail"`
		} `json:"noApps"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitOK {
		t.Fatalf("status -o json: %d %v\n%s\n%s", code, err, out, errOut)
	}
	if doc.NoApps == nil || len(doc.NoApps.Why) < 2 || len(doc.NoApps.Next) == 0 || doc.NoApps.Detail.AppDir || len(doc.Apps) != 0 {
		t.Fatalf("status -o json without the reason:\n%s", out)
	}
	for _, args := range [][]string{{"owners", "-o", "json"}, {"owners", "--orphans"}} {
		code, out, errOut = kdrift(t, ctx, append(args, g...)...)
		if code != exitOK || !strings.Contains(errOut, "no Argo CD Application or Flux Kustomization declared in Git") || strings.Contains(out, "no app found") {
			t.Fatalf("%v: %d\n%s\n%s", args, code, out, errOut)
		}
	}
}

// TestStatusNoAppsNamesLiveApplicationsOfOtherRepositories: the cluster
// runs Argo CD Applications that read another repository; status on a
// repository none of them reads names them with the URL they read, and
// the note on stderr no longer says they are all declared in Git.
func TestStatusNoAppsNamesLiveApplicationsOfOtherRepositories(t *testing.T) {
	ctx := context.Background()
	const ns = "cli-noapps-argo"
	if _, err := enginetest.Clientset(t).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	enginetest.InstallCRDs(t, "applications.argoproj.io.yaml")
	dyn := enginetest.Dynamic(t)
	for _, name := range []string{"billing", "guestbook"} {
		applyYAMLAs(t, argoApplicationsGVR, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: `+name+`
  namespace: `+ns+`
spec:
  project: default
  source:
    repoURL: https://github.com/other/apps.git
    path: `+name+`
  destination:
    server: https://kubernetes.default.svc
    namespace: `+name+`
`, "argocd-server", nil, nil)
		t.Cleanup(func() {
			if err := dyn.Resource(argoApplicationsGVR).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
				t.Errorf("delete Application %s: %v", name, err)
			}
		})
	}
	repo := gitRepo(t, map[string]string{
		"deploy/kustomization.yaml": "resources: [cm.yaml]\n",
		"deploy/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n",
	})
	git(t, repo, "remote", "add", "origin", "https://git.example.com/team/service")
	g := []string{"--repo", repo, "--kubeconfig", enginetest.Kubeconfig()}
	code, out, errOut := kdrift(t, ctx, append([]string{"status"}, g...)...)
	if code != exitOK || !strings.Contains(out, "which read other repositories: ") ||
		!strings.Contains(out, ns+"/billing (https://github.com/other/apps.git billing), "+ns+"/guestbook (https://github.com/other/apps.git guestbook)") ||
		!strings.Contains(out, "or run kdrift in a clone of the repository the live objects above read (--repo)") {
		t.Fatalf("status: %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(errOut, "none that Git does not declare") || !strings.Contains(errOut, "none reads this repository") {
		t.Fatalf("stderr note on the live Applications:\n%s", errOut)
	}
}
