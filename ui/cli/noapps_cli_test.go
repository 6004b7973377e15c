package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
	if code != exitOK || !strings.Contains(out, "live Argo CD Applications of other repositories: ") ||
		!strings.Contains(out, ns+"/billing (https://github.com/other/apps.git billing), "+ns+"/guestbook (https://github.com/other/apps.git guestbook)") ||
		!strings.Contains(out, "or run kdrift in a clone of the repository the live objects above read (--repo)") {
		t.Fatalf("status: %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(errOut, "none that Git does not declare") || !strings.Contains(errOut, "none reads this repository") {
		t.Fatalf("stderr note on the live Applications:\n%s", errOut)
	}
}

// TestStatusNoAppsNamesLiveKustomizations: Git declares no Flux object;
// the cluster runs a Kustomization made with `flux create kustomization`
// that reads this repository and one that reads another. status names
// both with the URL and folder they read, and the App file it proposes
// takes the folder the first one reads.
func TestStatusNoAppsNamesLiveKustomizations(t *testing.T) {
	ctx := context.Background()
	// The namespace sorts first so that the few objects named are these,
	// whatever other tests of the package left in the cluster.
	const ns = "a-cli-noapps-flux"
	if _, err := enginetest.Clientset(t).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	enginetest.InstallCRDs(t, "gitrepositories.source.toolkit.fluxcd.io.yaml", "kustomizations.kustomize.toolkit.fluxcd.io.yaml")
	gitRepos := schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
	for name, url := range map[string]string{"service": "https://git.example.com/noapps/service", "fleet": "https://github.com/other/fleet"} {
		applyYAMLAs(t, gitRepos, `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: `+name+`, namespace: `+ns+`}
spec: {url: "`+url+`", interval: 1m, ref: {branch: main}}
`, "flux", nil, nil)
		applyYAMLAs(t, kustomizationsGVR, `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: `+name+`, namespace: `+ns+`}
spec: {interval: 10m, path: ./deploy/`+name+`, prune: true, sourceRef: {kind: GitRepository, name: `+name+`}}
`, "flux", nil, nil)
		t.Cleanup(func() {
			for _, gvr := range []schema.GroupVersionResource{kustomizationsGVR, gitRepos} {
				if err := enginetest.Dynamic(t).Resource(gvr).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
					t.Errorf("delete %s %s: %v", gvr.Resource, name, err)
				}
			}
		})
	}
	repo := gitRepo(t, map[string]string{
		"deploy/service/kustomization.yaml": "resources: [cm.yaml]\n",
		"deploy/service/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n",
	})
	git(t, repo, "remote", "add", "origin", "https://git.example.com/noapps/service")
	g := []string{"--repo", repo, "--kubeconfig", enginetest.Kubeconfig()}
	code, out, errOut := kdrift(t, ctx, append([]string{"status"}, g...)...)
	for _, want := range []string{
		" of other repositories: " + ns + "/fleet (https://github.com/other/fleet ./deploy/fleet)",
		": 1 live Flux Kustomization of this repository that no declaration in Git gives: " + ns + "/service (https://git.example.com/noapps/service ./deploy/service)",
		"      path: deploy/service",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("status lacks %q: %d\n%s\n%s", want, code, out, errOut)
		}
	}
}
