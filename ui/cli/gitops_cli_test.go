package cli

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/internal/enginetest"
)

// TestArgoRepositoryWithoutKdriftFolder: a repository that holds only an
// Argo CD Application (no .kdrift/) shows it as an app owned by Argo CD;
// sync is refused naming the owner until --owned; freeze writes into the
// Application.
func TestArgoRepositoryWithoutKdriftFolder(t *testing.T) {
	ctx := context.Background()
	const ns = "cli-argo"
	cs := enginetest.Clientset(t)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KDRIFT_AUTHOR", "Lao Li <lao.li@example.com>")
	repo := gitRepo(t, map[string]string{
		"argocd/guestbook.yaml": `# Argo CD deploys the guestbook.
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook
  namespace: argocd
spec:
  source:
    repoURL: https://git.example.com/team/gitops.git
    path: guestbook
  destination:
    name: in-cluster
    namespace: ` + ns + `
  syncPolicy:
    automated:
      selfHeal: true   # Argo CD heals
`,
		"guestbook/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: guestbook\ndata:\n  color: blue\n",
	})
	git(t, repo, "remote", "add", "origin", "https://git.example.com/team/gitops")
	g := []string{"--repo", repo, "--kubeconfig", enginetest.Kubeconfig()}

	code, out, errOut := kdrift(t, ctx, append([]string{"status"}, g...)...)
	if !strings.Contains(out, "guestbook") || !strings.Contains(out, "(Argo CD Application argocd/guestbook)") {
		t.Fatalf("status: %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = kdrift(t, ctx, append([]string{"sync", "argocd/guestbook"}, g...)...)
	if code == exitOK || !strings.Contains(errOut, "owned by Argo CD Application argocd/guestbook (argocd/guestbook.yaml)") || !strings.Contains(errOut, "--owned") {
		t.Fatalf("sync without --owned: %d\n%s", code, errOut)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "guestbook", metav1.GetOptions{}); err == nil {
		t.Fatal("a refused sync applied")
	}
	if code, out, errOut := kdrift(t, ctx, append([]string{"sync", "guestbook", "--owned"}, g...)...); code != exitOK {
		t.Fatalf("sync --owned: %d\n%s\n%s", code, out, errOut)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "guestbook", metav1.GetOptions{}); err != nil {
		t.Fatalf("sync --owned did not apply: %v", err)
	}
	if code, out, errOut := kdrift(t, ctx, "freeze", "guestbook", "--reason", "INC-9 hold", "--repo", repo); code != exitOK {
		t.Fatalf("freeze: %d\n%s\n%s", code, out, errOut)
	}
	show := git(t, repo, "show", "HEAD:argocd/guestbook.yaml")
	if !strings.Contains(show, "      selfHeal: false   # Argo CD heals") || !strings.Contains(show, `kdrift.dev/freeze-reason: "INC-9 hold"`) || !strings.HasPrefix(show, "# Argo CD deploys the guestbook.") {
		t.Fatalf("frozen Application:\n%s", show)
	}
	if log := git(t, repo, "log", "-1", "--format=%(trailers:key=Kdrift-App,valueonly)"); log != "guestbook" {
		t.Fatalf("trailer: %q", log)
	}
}
