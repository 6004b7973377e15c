package report

import (
	"fmt"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
)

// TestRevertPreviewText: under the Git diff, each app says what its
// objects would do, live value → value after the revert; a Secret's value
// never shows; an app that no longer renders, an app no longer declared
// and a missing cluster are said in words; long lists end in "… and N
// more".
func TestRevertPreviewText(t *testing.T) {
	t.Parallel()
	ref := func(kind, name string) status.ObjectRef {
		return status.ObjectRef{Kind: kind, Namespace: "prod", Name: name}
	}
	var many []engine.ObjectPreview
	for i := range PreviewObjects + 3 {
		many = append(many, engine.ObjectPreview{Ref: ref("ConfigMap", fmt.Sprintf("cm-%02d", i)), Change: engine.PreviewCreate})
	}
	var fields []status.FieldChange
	for i := range PreviewFields + 2 {
		fields = append(fields, status.FieldChange{Path: fmt.Sprintf("/data/k%02d", i), Live: "a", Desired: "b"})
	}
	p := RevertPreview{
		Files: []actions.FileDiff{{Path: "deploy/prod/kustomization.yaml", Status: "modified", Diff: "--- a/x\n+++ b/x\n-  newTag: \"1.28\"\n+  newTag: \"1.27\"\n"}},
		Cluster: engine.TreePreview{Apps: []engine.AppPreview{
			{App: "web", SelfHeal: true, Objects: []engine.ObjectPreview{
				{Ref: ref("Deployment", "web"), Change: engine.PreviewUpdate, Fields: []status.FieldChange{{Path: "/spec/template/spec/containers/0/image", Live: "nginx:1.28", Desired: "nginx:1.27"}}},
				{Ref: ref("Secret", "creds"), Change: engine.PreviewUpdate, Fields: []status.FieldChange{{Path: "/data/password", Live: "*** (masked)", Desired: "*** (masked)", Masked: true}}},
				{Ref: ref("ConfigMap", "big"), Change: engine.PreviewUpdate, Fields: fields},
				{Ref: ref("ConfigMap", "extra"), Change: engine.PreviewLeave},
			}},
			{App: "many", Prune: true, Objects: many, NotCompared: 7},
			{App: "broken", RenderError: "render deploy/broken: missing.yaml: no such file"},
			{App: "gone", Removed: true},
			{App: "held", SelfHeal: true, Frozen: &app.Freeze{By: "Lao Li <lao.li@example.com>", Reason: "INC-1 hold\nmore"}},
		}},
	}
	var b strings.Builder
	if err := WriteRevertPreview(&b, p); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"+  newTag: \"1.27\"\n\nCluster (live → after the revert):\n",
		"  app web (self-heal on: applied once pushed; prune off)\n    update Deployment/prod/web\n      /spec/template/spec/containers/0/image\n        nginx:1.28 → nginx:1.27\n",
		"      /data/password\n        (Secret value, not shown) → changed\n",
		"      … and 2 more fields\n",
		"    leave  ConfigMap/prod/extra (leaves Git; stays in the cluster",
		"  app many (self-heal off: a sync applies it; prune on)\n",
		"    … and 3 more objects (-o json lists them)\n",
		"    … and 7 more objects not compared (a preview compares at most 200)\n",
		"  app broken: does not render after the revert: the app would be in Error: render deploy/broken: missing.yaml: no such file\n",
		"  app gone: no longer declared after the revert",
		"  app held (frozen: self-heal waits for the unfreeze, a sync applies it; prune off)\n    frozen by Lao Li <lao.li@example.com>: INC-1 hold\n    nothing changes live\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("preview lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "masked") {
		t.Errorf("a masked value shows:\n%s", out)
	}

	b.Reset()
	p.Cluster = engine.TreePreview{Unavailable: "kubeconfig: no such file"}
	if err := WriteRevertPreview(&b, p); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(b.String(), "+  newTag: \"1.27\"\n\nCluster: not compared: kubeconfig: no such file\n") {
		t.Errorf("no cluster:\n%s", b.String())
	}
}
