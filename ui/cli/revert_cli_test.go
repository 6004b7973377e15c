package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/internal/enginetest"
)

// imagesOverlay is an nginx base and an overlay that sets its tag with
// kustomize's images: field.
func imagesOverlay(ns, tag string) map[string]string {
	return map[string]string{
		".kdrift/app.yaml":                        fmt.Sprintf("apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: web\nspec:\n  path: deploy/overlays/prod\n  destination:\n    namespace: %s\n  syncPolicy:\n    selfHeal: false\n", ns),
		"deploy/base/kustomization.yaml":          "resources:\n- dep.yaml\n",
		"deploy/base/dep.yaml":                    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: nginx\n        image: nginx:1.0\n",
		"deploy/overlays/prod/kustomization.yaml": "resources:\n- ../../base\nimages:\n- name: nginx\n  newTag: \"" + tag + "\"\n",
	}
}

// TestRevertPreviewShowsClusterCLI: `kdrift revert --preview` of a commit
// that moved an overlay's images: tag, synced live, shows under the Git
// diff the Deployment and its image live → after the revert, in text and
// in -o json; without a cluster the Git diff still shows, with a line
// saying why the cluster part is missing. Nothing is committed.
func TestRevertPreviewShowsClusterCLI(t *testing.T) {
	ctx := context.Background()
	ns := "revert-cli"
	if _, err := enginetest.Clientset(t).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	repo := gitRepo(t, imagesOverlay(ns, "1.27"))
	for p, c := range imagesOverlay(ns, "1.28") {
		if err := os.WriteFile(filepath.Join(repo, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, "commit", "-qam", "web: nginx 1.28")
	bad := git(t, repo, "rev-parse", "HEAD")
	g := []string{"--repo", repo, "--kubeconfig", enginetest.Kubeconfig()}
	if code, out, errOut := kdrift(t, ctx, append([]string{"sync", "web"}, g...)...); code != exitOK {
		t.Fatalf("sync: code %d\n%s\n%s", code, out, errOut)
	}

	code, out, errOut := kdrift(t, ctx, append([]string{"revert", bad, "--preview"}, g...)...)
	want := "-  newTag: \"1.28\"\n+  newTag: \"1.27\"\n\nCluster (live → after the revert):\n" +
		"  app web (self-heal off: a sync applies it; prune off)\n" +
		"    update Deployment/" + ns + "/web\n" +
		"      /spec/template/spec/containers/0/image\n" +
		"        nginx:1.28 → nginx:1.27\n"
	if code != exitOK || !strings.HasSuffix(out, want) {
		t.Fatalf("preview: code %d, want it to end in\n%s\ngot:\n%s\n%s", code, want, out, errOut)
	}

	code, out, errOut = kdrift(t, ctx, append([]string{"revert", bad, "--preview", "-o", "json"}, g...)...)
	var doc struct {
		Files []struct {
			Path string `json:"path"`
		} `json:"files"`
		Cluster struct {
			Apps []struct {
				App     string `json:"app"`
				Objects []struct {
					Ref struct {
						Kind, Namespace, Name string
					} `json:"ref"`
					Change string `json:"change"`
					Fields []struct {
						Path    string `json:"path"`
						Live    string `json:"live"`
						Desired string `json:"desired"`
					} `json:"fields"`
				} `json:"objects"`
			} `json:"apps"`
		} `json:"cluster"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitOK {
		t.Fatalf("-o json: code %d err %v\n%s\n%s", code, err, out, errOut)
	}
	if len(doc.Files) != 1 || doc.Files[0].Path != "deploy/overlays/prod/kustomization.yaml" || len(doc.Cluster.Apps) != 1 || len(doc.Cluster.Apps[0].Objects) != 1 {
		t.Fatalf("-o json:\n%s", out)
	}
	o := doc.Cluster.Apps[0].Objects[0]
	if o.Ref.Kind != "Deployment" || o.Ref.Name != "web" || o.Change != "update" || len(o.Fields) != 1 || o.Fields[0].Live != "nginx:1.28" || o.Fields[0].Desired != "nginx:1.27" {
		t.Fatalf("-o json object: %+v", o)
	}

	// No cluster: the Git diff, then why the cluster part is missing.
	noCluster := []string{"--repo", repo, "--kubeconfig", filepath.Join(t.TempDir(), "missing")}
	code, out, errOut = kdrift(t, ctx, append([]string{"revert", bad, "--preview"}, noCluster...)...)
	if code != exitOK || !strings.Contains(out, "+  newTag: \"1.27\"\n") || !strings.Contains(out, "\n\nCluster: not compared: kubeconfig ") || !strings.Contains(out, "missing") {
		t.Fatalf("preview without a cluster: code %d\n%s\n%s", code, out, errOut)
	}
	if head := git(t, repo, "rev-parse", "HEAD"); head != bad {
		t.Fatalf("the preview moved HEAD to %s", head)
	}
	if st := git(t, repo, "status", "--porcelain"); st != "" {
		t.Fatalf("the preview changed the working tree: %q", st)
	}
}
