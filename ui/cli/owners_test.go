package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"kdrift.dev/kdrift/internal/enginetest"
)

// ownersRepo is an app of two Deployments, a Service and a ConfigMap in
// namespace ns.
func ownersRepo(t *testing.T, ns string) string {
	t.Helper()
	if _, err := enginetest.Clientset(t).CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deploy := func(name string) string {
		return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: 2
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      containers:
      - name: web
        image: registry.example/%[1]s:1.0
`, name)
	}
	return gitRepo(t, map[string]string{
		".kdrift/app.yaml":   fmt.Sprintf("apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: %[1]s\nspec:\n  path: deploy\n  destination:\n    namespace: %[1]s\n  syncPolicy:\n    selfHeal: false\n  ignoreDifferences:\n  - kind: Service\n    managedFieldsManagers: [kubectl-annotate]\n", ns),
		"deploy/web.yaml":    deploy("web"),
		"deploy/worker.yaml": deploy("worker"),
		"deploy/svc.yaml":    "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector: {app: web}\n  ports:\n  - port: 80\n",
		"deploy/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: prod\n",
		"CODEOWNERS":         "* @platform\n/deploy/ @sre-team\n",
	})
}

// TestOwnersCLI: an autoscaler's scale, a person's annotation and a
// ConfigMap made by hand show in owners, --orphans and --check; -o json
// is stable.
func TestOwnersCLI(t *testing.T) {
	ctx := context.Background()
	const ns = "owners"
	repo := ownersRepo(t, ns)
	g := []string{"--repo", repo, "--kubeconfig", enginetest.Kubeconfig()}
	if code, out, errOut := kdrift(t, ctx, append([]string{"sync", ns}, g...)...); code != exitOK {
		t.Fatalf("sync: code %d\n%s\n%s", code, out, errOut)
	}
	cs := enginetest.Clientset(t)
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}}
	if _, err := cs.AppsV1().Deployments(ns).UpdateScale(ctx, "web", s, metav1.UpdateOptions{FieldManager: "horizontal-pod-autoscaler"}); err != nil {
		t.Fatal(err)
	}
	// managedFields times have a resolution of one second: the person's
	// annotation must land in a later second than the sync to be "after
	// the last sync".
	time.Sleep(1100 * time.Millisecond)
	if _, err := cs.CoreV1().Services(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"metadata":{"annotations":{"example.com/oncall":"team-a"}}}`), metav1.PatchOptions{FieldManager: "kubectl-annotate"}); err != nil {
		t.Fatal(err)
	}
	hand := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hotfix", Namespace: ns}, Data: map[string]string{"flag": "on"}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, hand, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatal(err)
	}

	// The table: each writer with its count, the contested replicas row
	// with its ignore rule, the person's annotation.
	code, out, errOut := kdrift(t, ctx, append([]string{"owners", ns}, g...)...)
	if code != exitOK {
		t.Fatalf("owners: code %d\n%s\n%s", code, out, errOut)
	}
	replicas := lineWith(out, "spec.replicas")
	for _, want := range []string{"Deployment.apps", "horizontal-pod-autoscaler (controller) 1 of 2", "kdrift (git) 1 of 2", "yes: 2 writers"} {
		if !strings.Contains(replicas, want) {
			t.Errorf("replicas row lacks %q:\n%s", want, out)
		}
	}
	if l := lineWith(out, `metadata.annotations["example.com/oncall"]`); !strings.Contains(l, "kubectl-annotate (person) 1 of 1") || !strings.Contains(l, "owners: Service manager=kubectl-annotate") || !strings.Contains(l, "yes: kubectl-annotate wrote it after the last sync") || !strings.HasPrefix(l, "Service ") {
		t.Errorf("annotation row: %q\n%s", l, out)
	}
	if l := lineWith(out, "fields only Git writes"); !strings.HasPrefix(l, "ConfigMap ") {
		t.Errorf("ConfigMap's fields are not folded: %q\n%s", l, out)
	}
	if strings.Contains(out, "hotfix") || strings.Contains(out, ".image") {
		t.Errorf("owners shows a hand-made object or a Git-only field:\n%s", out)
	}

	// Orphans: the hand-made ConfigMap and nothing Git renders.
	code, out, errOut = kdrift(t, ctx, append([]string{"owners", "--orphans", ns}, g...)...)
	if code != exitOK {
		t.Fatalf("owners --orphans: code %d\n%s\n%s", code, out, errOut)
	}
	if l := lineWith(out, "owners/hotfix"); !strings.HasPrefix(l, "ConfigMap ") || !strings.Contains(l, "kubectl-create Update (person)") {
		t.Errorf("orphans lack the hand-made ConfigMap:\n%s", out)
	}
	for _, rendered := range []string{"owners/web", "owners/worker", "owners/settings", "kube-root-ca.crt"} {
		if strings.Contains(out, rendered) {
			t.Errorf("orphans list %s:\n%s", rendered, out)
		}
	}

	// JSON: stable apart from the write times.
	code, out, errOut = kdrift(t, ctx, append([]string{"owners", ns, "-o", "json"}, g...)...)
	var m struct {
		Kinds []struct {
			Kind string `json:"kind"`
		} `json:"kinds"`
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil || code != exitOK || len(m.Kinds) != 3 {
		t.Fatalf("owners -o json: code %d err %v\n%s\n%s", code, err, out, errOut)
	}
	times := regexp.MustCompile(`"newest": "[^"]+"`)
	golden.RequireEqual(t, times.ReplaceAllString(out, `"newest": "TIME"`))

	// The document, checked: it matches, then a person's new image does
	// not.
	code, doc, errOut := kdrift(t, ctx, append([]string{"owners", ns, "-o", "markdown"}, g...)...)
	if code != exitOK || !strings.Contains(doc, "| Deployment.apps | `spec.replicas` |") {
		t.Fatalf("owners -o markdown: code %d\n%s\n%s", code, doc, errOut)
	}
	file := filepath.Join(t.TempDir(), "OWNERSHIP.md")
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := kdrift(t, ctx, append([]string{"owners", ns, "--check", file}, g...)...); code != exitOK || out != "" {
		t.Fatalf("--check of the fresh document: code %d\n%s\n%s", code, out, errOut)
	}
	// Reviewed by: the code owners of the App's files (its App file and
	// its folder), beside who writes the field; the check reads it.
	code, reviewed, errOut := kdrift(t, ctx, append([]string{"owners", ns, "-o", "markdown", "--reviewed-by"}, g...)...)
	if l := lineWith(reviewed, "| Deployment.apps | `spec.replicas` |"); code != exitOK || !strings.HasSuffix(l, "| @platform, @sre-team |") {
		t.Fatalf("owners -o markdown --reviewed-by: code %d, replicas row %q\n%s\n%s", code, l, reviewed, errOut)
	}
	if err := os.WriteFile(file, []byte(reviewed), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := kdrift(t, ctx, append([]string{"owners", ns, "--check", file}, g...)...); code != exitOK || out != "" {
		t.Fatalf("--check of the document with Reviewed by: code %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := kdrift(t, ctx, append([]string{"owners", ns, "--reviewed-by"}, g...)...); code != exitError || !strings.Contains(errOut, "add -o markdown") {
		t.Fatalf("--reviewed-by without markdown: code %d\n%s", code, errOut)
	}
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"registry.example/worker:hotfix"}]}}}}`
	if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, "worker", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = kdrift(t, ctx, append([]string{"owners", ns, "--check", file}, g...)...)
	if code != exitDrift || !strings.Contains(out, "Deployment.apps spec.template.spec.containers[name=web].image: new writer kubectl (person, Update)") || !strings.Contains(out, ns+":Deployment/"+ns+"/worker") {
		t.Fatalf("--check after a person's image: code %d\n%s\n%s", code, out, errOut)
	}
	// Accepting the field lets any writer pass.
	var accepted []string
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(l, "| Deployment.apps | (fields only Git writes)") {
			continue
		}
		accepted = append(accepted, l)
	}
	accepted = append(accepted[:len(accepted)-1], "| Deployment.apps | `spec.template.spec.containers[name=web].image` | `kdrift` git 2/2 | | no | yes |", "")
	if err := os.WriteFile(file, []byte(strings.Join(accepted, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := kdrift(t, ctx, append([]string{"owners", ns, "--check", file}, g...)...); code != exitOK {
		t.Fatalf("--check with the image accepted: code %d\n%s\n%s", code, out, errOut)
	}
	// A file that is not an ownership document is an error.
	if err := os.WriteFile(file, []byte("# notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := kdrift(t, ctx, append([]string{"owners", ns, "--check", file}, g...)...); code != exitError || !strings.Contains(errOut, "not a document") {
		t.Fatalf("--check of a foreign file: code %d\n%s", code, errOut)
	}
}
