package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// overlayFiles is an nginx base and a prod overlay that sets its image
// tag with kustomize's images: field, plus what extra adds to the
// overlay's resources.
func overlayFiles(ns, tag, extra, secret string) map[string]string {
	return map[string]string{
		".kdrift/apps.yaml":              appYAML("web", "deploy/overlays/prod", ns, true, true, ""),
		"deploy/base/kustomization.yaml": "resources:\n- dep.yaml\n",
		"deploy/base/dep.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.0
`,
		"deploy/overlays/prod/kustomization.yaml": "resources:\n- ../../base\n- secret.yaml\n" + extra + "images:\n- name: nginx\n  newTag: \"" + tag + "\"\n",
		"deploy/overlays/prod/secret.yaml":        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  password: " + secret + "\n",
		"deploy/overlays/prod/extra.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  k: v\n",
	}
}

// previewRevert is what reverting commit would change in the cluster:
// the revert's stored tree (engine/actions) against the branch head.
func previewRevert(t *testing.T, e *engine.Engine, repo *gittest.Repo, commit string) engine.TreePreview {
	t.Helper()
	ctx := context.Background()
	r, err := actions.Open(ctx, actions.RepoOptions{Repo: repo.Dir})
	if err != nil {
		t.Fatal(err)
	}
	rd, err := r.RevertPreview(ctx, actions.RevertRequest{Commit: commit})
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.PreviewTree(ctx, rd.Head, rd.Tree)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPreviewTreeOfRevert: a commit moved an overlay's images: tag from
// 1.27 to 1.28, added a ConfigMap and changed a Secret, and was synced.
// The preview of its revert names the Deployment and the image field with
// its live and reverted values, says the ConfigMap would be pruned (the
// App prunes), shows the Secret's field masked, and lists nothing of an
// app the revert does not touch.
func TestPreviewTreeOfRevert(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "revert-preview")
	repo := gittest.Init(t)
	files := overlayFiles(ns, "1.27", "", "old-password")
	files[".kdrift/other.yaml"] = appYAML("other", "deploy/other", ns, false, false, "")
	files["deploy/other/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\ndata:\n  k: v\n"
	repo.Commit("web at 1.27", files)
	bad := repo.Commit("web at 1.28", overlayFiles(ns, "1.28", "- extra.yaml\n", "new-password"))
	e := newEngine(t, repo, nil)
	for _, a := range []string{"web", "other"} {
		if _, err := e.Sync(ctx, a, engine.SyncOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p := previewRevert(t, e, repo, bad)
	dump, _ := json.MarshalIndent(p, "", "  ")
	if len(p.Apps) != 1 || p.Apps[0].App != "web" || !p.Apps[0].Prune {
		t.Fatalf("apps: want web alone:\n%s", dump)
	}
	byName := map[string]engine.ObjectPreview{}
	for _, o := range p.Apps[0].Objects {
		byName[o.Ref.Kind+"/"+o.Ref.Name] = o
	}
	dep, ok := byName["Deployment/web"]
	if !ok || dep.Change != engine.PreviewUpdate || dep.Ref.Namespace != ns || len(dep.Fields) != 1 {
		t.Fatalf("Deployment: want one field updated:\n%s", dump)
	}
	if f := dep.Fields[0]; f.Path != "/spec/template/spec/containers/0/image" || f.Live != "nginx:1.28" || f.Desired != "nginx:1.27" {
		t.Fatalf("image field: %+v", f)
	}
	if cm := byName["ConfigMap/extra"]; cm.Change != engine.PreviewPrune {
		t.Fatalf("ConfigMap: want prune:\n%s", dump)
	}
	sec := byName["Secret/creds"]
	if sec.Change != engine.PreviewUpdate || len(sec.Fields) == 0 || !sec.Fields[0].Masked {
		t.Fatalf("Secret: want a masked update:\n%s", dump)
	}
	if strings.Contains(string(dump), "password\"") && (strings.Contains(string(dump), "old-password") || strings.Contains(string(dump), "new-password")) {
		t.Fatalf("a Secret value shows:\n%s", dump)
	}
	t.Logf("%s", dump)
	if len(byName) != 3 {
		t.Fatalf("want exactly the Deployment, the ConfigMap and the Secret:\n%s", dump)
	}
	// Nothing was written: the cluster still runs 1.28, the branch did
	// not move.
	if head := repo.Git("rev-parse", "HEAD"); head != bad {
		t.Fatalf("HEAD moved to %s", head)
	}
	st := appStatus(t, e, "web")
	if st.Revision != bad {
		t.Fatalf("the engine's status moved: %+v", st.Revision)
	}
}

// TestPreviewTreeRenderFails: a revert that leaves an overlay that no
// longer renders says so for the app instead of failing the preview.
func TestPreviewTreeRenderFails(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "revert-preview-broken")
	repo := gittest.Init(t)
	files := overlayFiles(ns, "1.27", "- missing.yaml\n", "pw")
	repo.Commit("broken", files)
	fix := repo.Commit("fix", overlayFiles(ns, "1.27", "", "pw"))
	e := newEngine(t, repo, nil)
	if _, err := e.Sync(ctx, "web", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	p := previewRevert(t, e, repo, fix)
	if len(p.Apps) != 1 || !strings.Contains(p.Apps[0].RenderError, "missing.yaml") {
		t.Fatalf("want web's render error naming missing.yaml: %+v", p.Apps)
	}
}

// TestPreviewTreeNoCluster: without a cluster, the preview names the app
// whose render the revert changes, with why it was not compared, and no
// other app.
func TestPreviewTreeNoCluster(t *testing.T) {
	repo := gittest.Init(t)
	files := overlayFiles("nowhere", "1.27", "", "pw")
	files[".kdrift/other.yaml"] = appYAML("other", "deploy/other", "nowhere", false, false, "")
	files["deploy/other/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\ndata:\n  k: v\n"
	repo.Commit("web at 1.27", files)
	bad := repo.Commit("web at 1.28", overlayFiles("nowhere", "1.28", "", "pw"))
	e := newEngine(t, repo, func(o *engine.Options) { o.Kubeconfig = filepath.Join(t.TempDir(), "missing") })
	p := previewRevert(t, e, repo, bad)
	if len(p.Apps) != 1 || p.Apps[0].App != "web" || p.Apps[0].ClusterError == "" {
		t.Fatalf("want web alone, with why the cluster was not compared: %+v", p.Apps)
	}
}

// TestPreviewTreeOfFreezeRevert: reverting the commit that froze an app
// renders nothing new, yet lifts the freeze: the preview shows the
// hand-scaled replicas self-heal would then put back.
func TestPreviewTreeOfFreezeRevert(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "revert-preview-freeze")
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/apps.yaml":      appYAML("render", "deploy/render", ns, true, false, ""),
		"deploy/render/dep.yaml": deploymentYAML("render", 6),
	})
	e := newEngine(t, repo, nil)
	if _, err := e.Sync(ctx, "render", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	freeze := repo.Commit("freeze", map[string]string{".kdrift/apps.yaml": appYAML("render", "deploy/render", ns, true, false, "  freeze:\n    reason: INC-1234 render workers 6->12\n    by: Lao Li <lao.li@example.com>\n    at: \"2026-01-01T00:00:00Z\"\n")})
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "render", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 12}}
	if _, err := enginetest.Clientset(t).AppsV1().Deployments(ns).UpdateScale(ctx, "render", s, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	p := previewRevert(t, e, repo, freeze)
	dump, _ := json.MarshalIndent(p, "", "  ")
	if len(p.Apps) != 1 || p.Apps[0].Frozen != nil || len(p.Apps[0].Objects) != 1 {
		t.Fatalf("want render, unfrozen, with one object:\n%s", dump)
	}
	o := p.Apps[0].Objects[0]
	if o.Ref.Kind != "Deployment" || o.Change != engine.PreviewUpdate || len(o.Fields) != 1 || o.Fields[0].Path != "/spec/replicas" {
		t.Fatalf("want /spec/replicas put back:\n%s", dump)
	}
	if live, git := fmt.Sprint(o.Fields[0].Live), fmt.Sprint(o.Fields[0].Desired); live != "12" || git != "6" {
		t.Fatalf("replicas %s → %s, want 12 → 6", live, git)
	}
}
