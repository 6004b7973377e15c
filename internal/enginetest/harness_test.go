package enginetest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"kdrift.dev/kdrift/internal/enginetest"
)

func TestMain(m *testing.M) {
	if os.Getenv("ENGINETEST_PANIC_CHILD") != "" {
		panicChild()
		return
	}
	enginetest.Main(m, enginetest.Options{})
}

const deployment = `{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {"name": "render", "namespace": "default",
    "labels": {"app.kubernetes.io/managed-by": "kdrift"},
    "annotations": {"kdrift.dev/app": "harness"}},
  "spec": {
    "replicas": 6,
    "selector": {"matchLabels": {"app": "render"}},
    "template": {
      "metadata": {"labels": {"app": "render"}},
      "spec": {"containers": [{"name": "render", "image": "registry.example/render:1.0"}]}
    }
  }
}`

// TestFieldOwnershipRoundTrip proves the harness is a real apiserver: a
// Server-Side Apply as kdrift, a scale by another manager through the scale
// subresource, managedFields read back, and a forced re-apply taking the
// field back (ARCHITECTURE.md, "Facts checked on a real kube-apiserver", fact 1).
func TestFieldOwnershipRoundTrip(t *testing.T) {
	ctx := context.Background()
	cs := enginetest.Clientset(t)
	deps := cs.AppsV1().Deployments("default")
	force := true

	if _, err := deps.Patch(ctx, "render", types.ApplyPatchType, []byte(deployment),
		metav1.PatchOptions{FieldManager: "kdrift", Force: &force}); err != nil {
		t.Fatalf("server-side apply as kdrift: %v", err)
	}
	t.Cleanup(func() { _ = deps.Delete(context.Background(), "render", metav1.DeleteOptions{}) })

	scale := &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: "render", Namespace: "default"},
		Spec:       autoscalingv1.ScaleSpec{Replicas: 12},
	}
	if _, err := deps.UpdateScale(ctx, "render", scale, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatalf("scale as kubectl: %v", err)
	}

	got := getDeployment(t, cs)
	if *got.Spec.Replicas != 12 {
		t.Fatalf("replicas after scale = %d, want 12", *got.Spec.Replicas)
	}
	if owner := replicasOwner(t, got); owner != "kubectl/Update/scale" {
		t.Fatalf("spec.replicas owner after scale = %q, want kubectl/Update/scale; managedFields: %s", owner, describe(got))
	}
	if !hasManager(got, "kdrift") {
		t.Fatalf("kdrift's own managedFields entry vanished after the scale: %s", describe(got))
	}

	// A non-forced apply of the old value conflicts with kubectl's scale.
	noForce := false
	_, err := deps.Patch(ctx, "render", types.ApplyPatchType, []byte(deployment),
		metav1.PatchOptions{FieldManager: "kdrift", Force: &noForce})
	if err == nil || !strings.Contains(err.Error(), "conflict") || !strings.Contains(err.Error(), ".spec.replicas") {
		t.Fatalf("non-forced apply after scale: err = %v, want a conflict on .spec.replicas", err)
	}

	if _, err := deps.Patch(ctx, "render", types.ApplyPatchType, []byte(deployment),
		metav1.PatchOptions{FieldManager: "kdrift", Force: &force}); err != nil {
		t.Fatalf("forced re-apply as kdrift: %v", err)
	}
	got = getDeployment(t, cs)
	if *got.Spec.Replicas != 6 {
		t.Fatalf("replicas after forced re-apply = %d, want 6", *got.Spec.Replicas)
	}
	if owner := replicasOwner(t, got); owner != "kdrift/Apply/" {
		t.Fatalf("spec.replicas owner after forced re-apply = %q, want kdrift/Apply/; managedFields: %s", owner, describe(got))
	}
	if hasManager(got, "kubectl") {
		t.Fatalf("kubectl's managedFields entry should be gone after kdrift took its only field back: %s", describe(got))
	}
}

func getDeployment(t *testing.T, cs kubernetes.Interface) *appsv1.Deployment {
	t.Helper()
	d, err := cs.AppsV1().Deployments("default").Get(context.Background(), "render", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get deployment: %v", err)
	}
	return d
}

// replicasOwner returns manager/operation/subresource of the entries owning
// f:spec.f:replicas, joined with commas.
func replicasOwner(t *testing.T, d *appsv1.Deployment) string {
	t.Helper()
	var owners []string
	for _, mf := range d.ManagedFields {
		if mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]map[string]any
		if err := json.Unmarshal(mf.FieldsV1.GetRawBytes(), &fields); err != nil {
			t.Fatalf("fieldsV1 of %s: %v", mf.Manager, err)
		}
		if _, ok := fields["f:spec"]["f:replicas"]; ok {
			owners = append(owners, fmt.Sprintf("%s/%s/%s", mf.Manager, mf.Operation, mf.Subresource))
		}
	}
	return strings.Join(owners, ",")
}

func hasManager(d *appsv1.Deployment, name string) bool {
	for _, mf := range d.ManagedFields {
		if mf.Manager == name {
			return true
		}
	}
	return false
}

func describe(d *appsv1.Deployment) string {
	var parts []string
	for _, mf := range d.ManagedFields {
		parts = append(parts, fmt.Sprintf("%s/%s/%s %s", mf.Manager, mf.Operation, mf.Subresource, mf.FieldsV1.GetRawString()))
	}
	return strings.Join(parts, "; ")
}

// TestNothingLeftBehindAfterPanic runs this test binary again as a child
// that starts its own control plane and panics. The kernel then ends the
// control plane (Pdeathsig), which must remove every file it made.
func TestNothingLeftBehindAfterPanic(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a second control plane")
	}
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "ENGINETEST_PANIC_CHILD=1", "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("child should have panicked; output:\n%s", out)
	}
	var pid int
	var kubeconfig string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "child-control-plane-pid="); ok {
			pid, _ = strconv.Atoi(v)
		}
		if v, ok := strings.CutPrefix(line, "child-kubeconfig="); ok {
			kubeconfig = v
		}
	}
	if pid == 0 || kubeconfig == "" {
		t.Fatalf("child did not report its control plane; output:\n%s", out)
	}
	deadline := time.Now().Add(60 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("control plane (pid %d) outlived its panicking parent by 60s", pid)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := os.Stat(kubeconfig); !os.IsNotExist(err) {
		t.Errorf("kubeconfig %s left behind (stat err %v)", kubeconfig, err)
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "*"))
	if len(left) != 0 {
		t.Errorf("files left behind in the control plane's temp folder: %v", left)
	}
}

func panicChild() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cp, err := enginetest.Start(ctx, enginetest.Options{})
	if err != nil {
		fmt.Println("child start failed:", err)
		os.Exit(3)
	}
	fmt.Printf("child-control-plane-pid=%d\nchild-kubeconfig=%s\n", cp.Pid(), cp.Kubeconfig)
	panic("deliberate panic: the control plane must not outlive this process")
}
