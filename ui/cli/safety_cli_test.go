package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// TestSyncConfirmPrune: after a commit empties the app's folder, `kdrift
// sync --prune` refuses (exit 2, saying how to confirm), the dry-run plan
// says it would be refused, and --confirm-prune deletes.
func TestSyncConfirmPrune(t *testing.T) {
	ctx := context.Background()
	const ns = "cli-confirm-prune"
	cs := enginetest.Clientset(t)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  a: \"1\"\n"
	}
	repo := gitRepo(t, map[string]string{
		".kdrift/app.yaml":          "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: " + ns + "\nspec:\n  path: deploy\n  destination:\n    namespace: " + ns + "\n  syncPolicy:\n    prune: true\n",
		"deploy/kustomization.yaml": "resources: [a.yaml, b.yaml]\n",
		"deploy/a.yaml":             cm("a"),
		"deploy/b.yaml":             cm("b"),
	})
	g := []string{"--repo", repo, "--kubeconfig", enginetest.Kubeconfig()}
	if code, out, errOut := kdrift(t, ctx, append([]string{"sync", ns}, g...)...); code != exitOK {
		t.Fatalf("sync: %d\n%s\n%s", code, out, errOut)
	}
	git(t, repo, "rm", "-q", "deploy/a.yaml", "deploy/b.yaml")
	if err := writeText(filepath.Join(repo, "deploy/kustomization.yaml"), "resources: []\n"); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "commit", "-qam", "empty the overlay")

	alive := func() int {
		n := 0
		for _, name := range []string{"a", "b"} {
			c, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
			if err == nil && c.DeletionTimestamp == nil {
				n++
			} else if err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
		return n
	}
	code, out, errOut := kdrift(t, ctx, append([]string{"sync", ns, "--prune"}, g...)...)
	if code != exitError || !strings.Contains(errOut, "prune refused") || !strings.Contains(errOut, "2 of the 2") || !strings.Contains(errOut, "--confirm-prune") || alive() != 2 {
		t.Fatalf("sync --prune of an emptied overlay: code %d, %d alive\n%s\n%s", code, alive(), out, errOut)
	}
	code, out, errOut = kdrift(t, ctx, append([]string{"sync", ns, "--prune", "--dry-run"}, g...)...)
	if code != exitOK || !strings.Contains(out, "prune refused") {
		t.Fatalf("sync --prune --dry-run: code %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = kdrift(t, ctx, append([]string{"sync", ns, "--prune", "--confirm-prune"}, g...)...)
	if code != exitOK || alive() != 0 {
		t.Fatalf("sync --prune --confirm-prune: code %d, %d alive\n%s\n%s", code, alive(), out, errOut)
	}
}

// TestFreezeAgainstAHangingRemote runs the real binary: the remote accepts
// the connection and never answers; `kdrift freeze` finishes after
// KDRIFT_GIT_TIMEOUT, exits 0 with the commit kept locally, and says so.
func TestFreezeAgainstAHangingRemote(t *testing.T) {
	skipSlow(t)
	bin := kdriftBinary(t)
	env := isolatedEnv(t, bin)
	root := t.TempDir()
	remote := filepath.Join(root, "remote.git")
	git(t, root, "init", "-q", "--bare", "-b", "main", remote)
	dir := filepath.Join(root, "clone")
	git(t, root, "clone", "-q", remote, dir)
	if err := writeText(filepath.Join(dir, ".kdrift/app.yaml"), "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: render-prod\nspec:\n  path: deploy\n"); err != nil {
		t.Fatal(err)
	}
	if err := writeText(filepath.Join(dir, "deploy/cm.yaml"), "kind: ConfigMap\n"); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "app")
	git(t, dir, "push", "-q", "-u", "origin", "main")
	git(t, dir, "remote", "set-url", "origin", gittest.BlackHole(t))

	cmd := exec.Command(bin, "freeze", "render-prod", "--reason", "INC-15 remote hangs", "--repo", dir)
	cmd.Env = append(env, "KDRIFT_GIT_TIMEOUT=1s")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("kdrift freeze: %v\n%s", err, out.String())
		}
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("kdrift freeze against a hanging remote did not finish: no Git timeout\n%s", out.String())
	}
	if s := out.String(); !strings.Contains(s, "committed locally as") || !strings.Contains(s, "timed out after 1s") || !strings.Contains(s, "kdrift push") {
		t.Fatalf("kdrift freeze must say the commit stays local and why:\n%s", s)
	}
	if subj := git(t, dir, "log", "-1", "--format=%s"); !strings.HasPrefix(subj, "freeze(render-prod): INC-15") {
		t.Fatalf("the freeze is not committed locally: %q", subj)
	}
}

// writeText writes a file, making its folder.
func writeText(p, content string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), 0o644)
}
