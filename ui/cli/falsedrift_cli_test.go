package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/internal/enginetest"
)

// guestbookUI is argocd-example-apps' guestbook-ui Deployment: its port
// names containerPort alone.
const guestbookUI = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook-ui
spec:
  replicas: 1
  revisionHistoryLimit: 3
  selector:
    matchLabels:
      app: guestbook-ui
  template:
    metadata:
      labels:
        app: guestbook-ui
    spec:
      containers:
      - image: gcr.io/heptio-images/ks-guestbook-demo:0.2
        name: guestbook-ui
        ports:
        - containerPort: 80
`

// TestOneScaleIsOneDriftedFieldCLI: Git applied by Argo CD's manager,
// with Server-Side Apply and with client-side apply, then one kubectl
// scale: kdrift diff lists /spec/replicas alone, owned by kubectl, and
// status JSON counts one drifted field.
func TestOneScaleIsOneDriftedFieldCLI(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ ns, mode string }{{"cli-fd-ssa", "--server-side"}, {"cli-fd-csa", "--server-side=false"}} {
		t.Run(c.mode, func(t *testing.T) {
			if _, err := enginetest.Clientset(t).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			repo := gitRepo(t, map[string]string{
				"argocd/guestbook.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: guestbook\n  namespace: argocd\nspec:\n  source:\n    repoURL: https://git.example.com/team/gitops.git\n    path: guestbook\n  destination:\n    namespace: " + c.ns + "\n",
				"guestbook/deploy.yaml": guestbookUI,
			})
			git(t, repo, "remote", "add", "origin", "https://git.example.com/team/gitops")
			manifest := filepath.Join(t.TempDir(), "deploy.yaml")
			if err := os.WriteFile(manifest, []byte(guestbookUI), 0o600); err != nil {
				t.Fatal(err)
			}
			kubectl := func(args ...string) {
				t.Helper()
				if out, err := exec.Command("kubectl", append(args, "--kubeconfig", enginetest.Kubeconfig(), "-n", c.ns)...).CombinedOutput(); err != nil {
					t.Fatalf("kubectl %v: %v\n%s", args, err, out)
				}
			}
			kubectl("apply", c.mode, "--field-manager=argocd-controller", "-f", manifest)
			kubectl("scale", "deployment/guestbook-ui", "--replicas=2")
			g := []string{"--repo", repo, "--kubeconfig", enginetest.Kubeconfig()}

			_, out, errOut := kdrift(t, ctx, append([]string{"diff", "guestbook"}, g...)...)
			var paths []string
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "  /") {
					paths = append(paths, strings.TrimSpace(l))
				}
			}
			if strings.Join(paths, ",") != "/spec/replicas" || !strings.Contains(out, "owner:   kubectl") {
				t.Fatalf("diff: want /spec/replicas alone, owned by kubectl; got %v\n%s\n%s", paths, out, errOut)
			}

			_, out, errOut = kdrift(t, ctx, append([]string{"status", "guestbook", "-o", "json"}, g...)...)
			var st struct {
				Apps []struct {
					Name          string `json:"name"`
					DriftedFields int    `json:"driftedFields"`
				} `json:"apps"`
			}
			if err := json.Unmarshal([]byte(out), &st); err != nil {
				t.Fatalf("status -o json: %v\n%s\n%s", err, out, errOut)
			}
			if len(st.Apps) != 1 || st.Apps[0].DriftedFields != 1 {
				t.Fatalf("status -o json: want one app with 1 drifted field, got %+v\n%s", st.Apps, out)
			}
		})
	}
}
