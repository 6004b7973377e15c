package diff

import (
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/status"
)

func TestDetailLines(t *testing.T) {
	t.Parallel()
	live := obj(t, liveWith(t, "100", "6", "", scaleEntry, ""))
	live.Object["data"] = map[string]any{"script": "line one\nline two\n", "on": "yes"}
	desired := obj(t, desiredDeploy)
	d := Detail("render-prod", desired, live, status.ResourceStatus{Status: status.ResourceOutOfSync})
	if d.App != "render-prod" || d.Resource.Status != status.ResourceOutOfSync {
		t.Fatalf("detail header = %+v", d)
	}
	text := func(lines []status.Line) string {
		var b strings.Builder
		for _, l := range lines {
			b.WriteString(l.Text + "\n")
		}
		return b.String()
	}
	wantDesired := `apiVersion: apps/v1
kind: Deployment
metadata:
  annotations:
    kdrift.dev/app: render-prod
  labels:
    app.kubernetes.io/managed-by: kdrift
  name: render
  namespace: prod
spec:
  replicas: 3
  selector:
    matchLabels:
      app: render
  template:
    metadata:
      labels:
        app: render
    spec:
      containers:
      - env:
        - name: MODE
          value: prod
        image: render:1.0
        name: render
`
	if got := text(d.Desired); got != wantDesired {
		t.Errorf("desired lines:\n%s\nwant:\n%s", got, wantDesired)
	}
	byPath := map[string]status.Line{}
	for _, l := range d.Live {
		if _, ok := byPath[l.Path]; !ok {
			byPath[l.Path] = l
		}
		if strings.Contains(l.Text, "managedFields") || strings.Contains(l.Text, "resourceVersion") || strings.HasPrefix(l.Text, "status:") {
			t.Errorf("bookkeeping shown on live side: %q", l.Text)
		}
	}
	check := func(ptr, text, owner string) {
		t.Helper()
		l, ok := byPath[ptr]
		if !ok {
			t.Errorf("no live line for %s", ptr)
			return
		}
		var owners []string
		for _, o := range l.Owners {
			owners = append(owners, o.Manager)
		}
		if strings.TrimSpace(l.Text) != text || strings.Join(owners, ",") != owner {
			t.Errorf("line %s = %q owners %q, want %q owners %q", ptr, l.Text, owners, text, owner)
		}
	}
	check("/spec/replicas", "replicas: 6", "kubectl")
	check("/spec/template/spec/containers/0/env/0/name", "- name: MODE", "kdrift")
	check("/spec/template/spec/containers/0/imagePullPolicy", "imagePullPolicy: IfNotPresent", "")
	check("/spec/selector/matchLabels/app", "app: render", "kdrift") // atomic selector
	check("/data/on", `"on": "yes"`, "")
	check("/data/script", "script: |", "")
	for ptr, parent := range map[string]bool{"/spec": true, "/spec/template/spec/containers": true, "/spec/replicas": false, "/data/script": false} {
		if byPath[ptr].Parent != parent {
			t.Errorf("line %s: Parent = %v, want %v", ptr, byPath[ptr].Parent, parent)
		}
	}
	if !strings.Contains(text(d.Live), "  script: |\n    line one\n    line two\n") {
		t.Errorf("block scalar:\n%s", text(d.Live))
	}
}

func TestDetailMasksSecrets(t *testing.T) {
	t.Parallel()
	desired := obj(t, `{apiVersion: v1, kind: Secret, metadata: {name: db}, stringData: {password: hunter2}}`)
	live := obj(t, `{apiVersion: v1, kind: Secret, metadata: {name: db}, data: {password: aHVudGVyMg==}}`)
	d := Detail("a", desired, live, status.ResourceStatus{})
	for _, l := range append(d.Desired, d.Live...) {
		if strings.Contains(l.Text, "hunter2") || strings.Contains(l.Text, "aHVudGVyMg") {
			t.Errorf("secret value shown: %q", l.Text)
		}
	}
	if got := d.Live[len(d.Live)-4].Text; got != "  password: '*** (masked)'" {
		t.Errorf("masked line = %q", got)
	}
	if desired.Object["stringData"].(map[string]any)["password"] != "hunter2" {
		t.Error("Detail changed its input")
	}
}
