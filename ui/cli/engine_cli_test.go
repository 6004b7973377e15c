package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/internal/enginetest"
)

// TestUIReadOnly: the --readonly flag and `readonly: true` in the config
// file both make the UI's engine read-only; a broken config file is an
// error naming it.
func TestUIReadOnly(t *testing.T) {
	dir := t.TempDir()
	on := filepath.Join(dir, "on.yaml")
	off := filepath.Join(dir, "off.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	for p, body := range map[string]string{on: "readonly: true\n", off: "keys: {}\n", bad: "readonly: [\n"} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		flag bool
		path string
		want bool
	}{{false, on, true}, {false, off, false}, {true, off, true}, {false, filepath.Join(dir, "missing.yaml"), false}} {
		if got, err := uiReadOnly(c.flag, c.path); err != nil || got != c.want {
			t.Errorf("uiReadOnly(%v, %s) = %v, %v; want %v", c.flag, filepath.Base(c.path), got, err, c.want)
		}
	}
	if _, err := uiReadOnly(false, bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("a broken config file: %v, want an error naming it", err)
	}
}

// TestE2EReadonlyConfigReachesEngine: the real binary's UI, with
// `readonly: true` in its config file and no flag, shows a self-heal app's
// drift and never heals it: the Deployment's resourceVersion and
// managedFields stay as the person's scale left them.
func TestE2EReadonlyConfigReachesEngine(t *testing.T) {
	skipSlow(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is not installed: install tmux (e.g. apt-get install tmux) to run kdrift's end-to-end test: %v", err)
	}
	ctx := context.Background()
	ns := "e2e-readonly"
	cs := enginetest.Clientset(t)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	repo := gitRepo(t, map[string]string{
		".kdrift/app.yaml": fmt.Sprintf("apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: %[1]s\nspec:\n  path: deploy\n  destination:\n    namespace: %[1]s\n  syncPolicy:\n    selfHeal: true\n", ns),
		"deploy/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: conf\ndata:\n  replicas: \"6\"\n",
	})
	if code, out, errOut := kdrift(t, ctx, "sync", ns, "--repo", repo, "--kubeconfig", enginetest.Kubeconfig()); code != exitOK {
		t.Fatalf("sync: exit %d\n%s%s", code, out, errOut)
	}
	cms := cs.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, "conf", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["replicas"] = "2"
	if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("readonly: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	u := startTmuxUI(t, kdriftBinary(t), repo, "--config", cfg)
	u.waitFor("the app OutOfSync", func(s string) bool { return strings.Contains(lineWith(s, ns), "OutOfSync") })
	time.Sleep(time.Second) // what a wrongful heal would need
	after, err := cms.Get(ctx, "conf", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != cm.ResourceVersion || len(after.ManagedFields) != len(cm.ManagedFields) || after.Data["replicas"] != "2" {
		t.Fatalf("the read-only UI wrote to the cluster: resourceVersion %s -> %s, data %v", cm.ResourceVersion, after.ResourceVersion, after.Data)
	}
	u.keys("q")
	u.poll("kdrift to exit 0 after q", func() bool { return u.exitStatus() == "0" }, u.lingering)
}
