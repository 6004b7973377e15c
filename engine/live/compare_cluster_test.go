package live_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/status"
)

func deploymentDoc(ns, name string) string {
	return fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[2]s
  namespace: %[1]s
  labels: {app.kubernetes.io/managed-by: kdrift}
  annotations: {kdrift.dev/app: render-prod}
spec:
  replicas: 3
  selector: {matchLabels: {app: %[2]s}}
  template:
    metadata: {labels: {app: %[2]s}}
    spec:
      containers:
      - name: render
        image: registry.example/render:1.0
        env:
        - {name: MODE, value: prod}
        resources:
          requests: {cpu: 500m, memory: 1Gi}
`, ns, name)
}

func field(r status.ResourceStatus, path string) *status.FieldChange {
	for i := range r.Fields {
		if r.Fields[i].Path == path {
			return &r.Fields[i]
		}
	}
	return nil
}

// TestKubectlScaleIsPersonDrift: fact 1 and 5 on the real apiserver; the
// scale through the subresource shows as kubectl/Update/scale, person.
func TestKubectlScaleIsPersonDrift(t *testing.T) {
	cs := clientSet(t)
	ns := namespace(t, cs)
	desired := decode(t, deploymentDoc(ns, "render"))
	applyAs(t, cs, desired, "kdrift")
	if r := compare(t, cs, desired); r.Status != status.ResourceSynced || len(r.Fields) != 0 {
		t.Fatalf("right after apply: %s", describe(r))
	}

	kubectl(t, nil, "-n", ns, "scale", "deployment/render", "--replicas=6")

	r := compare(t, cs, desired)
	if r.Status != status.ResourceOutOfSync || len(r.Fields) != 1 {
		t.Fatalf("after kubectl scale: %s", describe(r))
	}
	f := r.Fields[0]
	if f.Path != "/spec/replicas" || f.Desired != int64(3) || f.Live != int64(6) || f.Class != status.OwnerPerson {
		t.Fatalf("field = %+v", f)
	}
	if len(f.Owners) != 1 || f.Owners[0].Manager != "kubectl" || f.Owners[0].Operation != "Update" || f.Owners[0].Subresource != "scale" {
		t.Fatalf("owners = %+v, want kubectl/Update/scale", f.Owners)
	}
	if f.Owners[0].Time != nil {
		t.Logf("fact 1 says the scale entry has no time; this apiserver wrote %s", f.Owners[0].Time)
	}

	t.Run("detail lines carry live owners", func(t *testing.T) {
		l, err := cs.Get(context.Background(), live.RefOf(desired))
		if err != nil {
			t.Fatal(err)
		}
		d := diff.Detail("render-prod", desired, l, r)
		owners := map[string]string{}
		for _, line := range d.Live {
			var names []string
			for _, o := range line.Owners {
				names = append(names, o.Manager)
			}
			owners[line.Path] = strings.Join(names, ",")
		}
		for ptr, want := range map[string]string{
			"/spec/replicas":                              "kubectl",
			"/spec/template/spec/containers/0/image":      "kdrift",
			"/spec/progressDeadlineSeconds":               "",
			"/spec/template/spec/containers/0/env/0/name": "kdrift",
		} {
			if got, ok := owners[ptr]; !ok || got != want {
				t.Errorf("live line %s owners = %q (present %v), want %q", ptr, got, ok, want)
			}
		}
		if len(d.Desired) == 0 || d.Desired[0].Text != "apiVersion: apps/v1" {
			t.Errorf("desired lines = %+v", d.Desired)
		}
	})
	t.Run("ignored by pointer", func(t *testing.T) {
		r := compare(t, cs, desired, app.IgnoreRule{Group: "apps", Kind: "Deployment", Name: "render", Namespace: ns, JSONPointers: []string{"/spec/replicas"}})
		if r.Status != status.ResourceIgnored || r.Drifted() != 0 || !r.Fields[0].Ignored {
			t.Fatalf("%s", describe(r))
		}
	})
	t.Run("ignored by manager", func(t *testing.T) {
		r := compare(t, cs, desired, app.IgnoreRule{ManagedFieldsManagers: []string{"kubectl"}})
		if r.Status != status.ResourceIgnored || r.Drifted() != 0 {
			t.Fatalf("%s", describe(r))
		}
	})
	t.Run("a rule for another kind does not apply", func(t *testing.T) {
		r := compare(t, cs, desired, app.IgnoreRule{Kind: "StatefulSet", JSONPointers: []string{"/spec/replicas"}})
		if r.Status != status.ResourceOutOfSync {
			t.Fatalf("%s", describe(r))
		}
	})

	// A forced apply takes the field back (fact 1): Synced again.
	applyAs(t, cs, desired, "kdrift")
	if r := compare(t, cs, desired); r.Status != status.ResourceSynced || len(r.Fields) != 0 {
		t.Fatalf("after heal: %s", describe(r))
	}
}

// TestPersonAddedFieldsAreExtraDrift: fact 2. A real `kubectl edit` adds an
// env var and `kubectl patch` a ConfigMap key; the dry-run still carries
// both, and Compare reports them from managedFields.
func TestPersonAddedFieldsAreExtraDrift(t *testing.T) {
	cs := clientSet(t)
	ns := namespace(t, cs)
	desired := decode(t, deploymentDoc(ns, "render"))
	applyAs(t, cs, desired, "kdrift")

	editor := filepath.Join(t.TempDir(), "editor.sh")
	script := `#!/bin/sh
sed -i 's/^  \( *\)value: prod$/&\n\1- name: DEBUG\n\1  value: "1"/' "$1"
`
	if err := os.WriteFile(editor, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	kubectl(t, []string{"KUBE_EDITOR=" + editor}, "-n", ns, "edit", "deployment/render")

	dry, err := cs.DryRunApply(context.Background(), desired)
	if err != nil {
		t.Fatal(err)
	}
	r := compare(t, cs, desired)
	f := field(r, "/spec/template/spec/containers/0/env/1")
	if r.Status != status.ResourceOutOfSync || f == nil || !f.Extra || f.Class != status.OwnerPerson || f.Owners[0].Manager != "kubectl-edit" {
		t.Fatalf("after kubectl edit: %s", describe(r))
	}
	if m, ok := f.Live.(map[string]any); !ok || m["name"] != "DEBUG" {
		t.Fatalf("extra env live value = %#v", f.Live)
	}
	if !strings.Contains(fmt.Sprint(dry.Object["spec"]), "DEBUG") {
		t.Fatalf("fact 2 changed: the forced dry-run no longer keeps DEBUG")
	}

	cm := decode(t, fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: %s, labels: {app.kubernetes.io/managed-by: kdrift}}, data: {mode: prod}}`, ns))
	applyAs(t, cs, cm, "kdrift")
	kubectl(t, nil, "-n", ns, "patch", "configmap/settings", "--type", "merge", "-p", `{"data":{"hotfix":"true"}}`)
	r = compare(t, cs, cm)
	f = field(r, "/data/hotfix")
	if r.Status != status.ResourceOutOfSync || len(r.Fields) != 1 || f == nil || !f.Extra || f.Live != "true" || f.Owners[0].Manager != "kubectl-patch" || f.Class != status.OwnerPerson {
		t.Fatalf("after kubectl patch: %s", describe(r))
	}
}

// TestControllerOwnedExtraIsListedNotDrift: a controller's write Git does
// not declare is shown with its owner and does not make the object drift.
func TestControllerOwnedExtraIsListedNotDrift(t *testing.T) {
	cs := clientSet(t)
	ns := namespace(t, cs)
	cm := decode(t, fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: lb, namespace: %s, labels: {app.kubernetes.io/managed-by: kdrift}}, data: {mode: prod}}`, ns))
	applyAs(t, cs, cm, "kdrift")

	ri, _, err := cs.Resource(context.Background(), cm)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := ri.Get(context.Background(), "lb", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.SetAnnotations(map[string]string{"cloud.example/zone": "eu-1a"})
	if _, err := ri.Update(context.Background(), cur, metav1.UpdateOptions{FieldManager: "cloud-controller"}); err != nil {
		t.Fatal(err)
	}
	r := compare(t, cs, cm)
	f := field(r, "/metadata/annotations/cloud.example~1zone")
	if r.Status != status.ResourceSynced || r.Drifted() != 0 || f == nil || f.Class != status.OwnerController || !f.Extra || f.Owners[0].Manager != "cloud-controller" {
		t.Fatalf("%s", describe(r))
	}
	// An App may still ignore that manager: then it is Ignored, not listed as live.
	r = compare(t, cs, cm, app.IgnoreRule{ManagedFieldsManagers: []string{"cloud-controller"}})
	if r.Status != status.ResourceIgnored {
		t.Fatalf("ignored controller: %s", describe(r))
	}
}

// TestImmutableFieldRequiresReplace: a selector change is rejected by the
// dry-run as immutable.
func TestImmutableFieldRequiresReplace(t *testing.T) {
	cs := clientSet(t)
	ns := namespace(t, cs)
	desired := decode(t, deploymentDoc(ns, "render"))
	applyAs(t, cs, desired, "kdrift")
	changed := decode(t, strings.ReplaceAll(deploymentDoc(ns, "render"), "{app: render}", "{app: render2}"))
	r := compare(t, cs, changed)
	if r.Status != status.ResourceRequiresReplace || !strings.Contains(r.Message, "immutable") || !strings.HasPrefix(r.Message, "Deployment/"+ns+"/render") {
		t.Fatalf("%s", describe(r))
	}

	// A StatefulSet's volumeClaimTemplates are refused with other words.
	var sts *unstructured.Unstructured
	for _, o := range renderApp(t, ns) {
		if o.GetKind() == "StatefulSet" {
			sts = o
		}
	}
	applyAs(t, cs, sts, live.FieldManager)
	grown := sts.DeepCopy()
	tpl := grown.Object["spec"].(map[string]any)["volumeClaimTemplates"].([]any)[0].(map[string]any)
	tpl["spec"].(map[string]any)["resources"] = map[string]any{"requests": map[string]any{"storage": "5Gi"}}
	if r := compare(t, cs, grown); r.Status != status.ResourceRequiresReplace {
		t.Fatalf("statefulset storage: %s", describe(r))
	}
}

// TestSecretValuesMasked: a Secret changed by hand shows masked values.
func TestSecretValuesMasked(t *testing.T) {
	cs := clientSet(t)
	ns := namespace(t, cs)
	sec := decode(t, fmt.Sprintf(`{apiVersion: v1, kind: Secret, metadata: {name: db, namespace: %s}, stringData: {password: hunter2}}`, ns))
	applyAs(t, cs, sec, "kdrift")
	if r := compare(t, cs, sec); r.Status != status.ResourceSynced || len(r.Fields) != 0 {
		t.Fatalf("after apply: %s", describe(r))
	}
	kubectl(t, nil, "-n", ns, "patch", "secret/db", "--type", "merge", "-p", `{"stringData":{"password":"swordfish","token":"abc"}}`)
	r := compare(t, cs, sec)
	if r.Status != status.ResourceOutOfSync || len(r.Fields) != 2 {
		t.Fatalf("%s", describe(r))
	}
	for _, f := range r.Fields {
		if !f.Masked || strings.Contains(fmt.Sprint(f.Desired, f.Live), "swordfish") || strings.Contains(fmt.Sprint(f.Live), "c3dvcmRmaXNo") {
			t.Fatalf("not masked: %+v", f)
		}
	}
}

// TestMissingInNamespaceNotYetCreated: an object whose namespace is not
// there yet is Missing, not an error; an object that does not exist in an
// existing namespace is Missing too.
func TestMissingInNamespaceNotYetCreated(t *testing.T) {
	cs := clientSet(t)
	r := compare(t, cs, decode(t, deploymentDoc("not-created-yet", "render")))
	if r.Status != status.ResourceMissing || r.Health != status.HealthMissing {
		t.Fatalf("%s", describe(r))
	}
	ns := namespace(t, cs)
	r = compare(t, cs, decode(t, deploymentDoc(ns, "render")))
	if r.Status != status.ResourceMissing || r.Message != "" {
		t.Fatalf("%s", describe(r))
	}
}

// hpaScale writes replicas the way the HPA controller does: read the
// scale subresource, set replicas, write it back as its manager.
func hpaScale(t *testing.T, cs *live.ClientSet, obj *unstructured.Unstructured, replicas int64) {
	t.Helper()
	ri, _, err := cs.Resource(context.Background(), obj)
	if err != nil {
		t.Fatal(err)
	}
	// The controller-manager writes the Deployment too; like the HPA,
	// retry when the read went stale.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		scale, err := ri.Get(context.Background(), obj.GetName(), metav1.GetOptions{}, "scale")
		if err != nil {
			return err
		}
		scale.Object["spec"] = map[string]any{"replicas": replicas}
		_, err = ri.Update(context.Background(), scale, metav1.UpdateOptions{FieldManager: "horizontal-pod-autoscaler"}, "scale")
		return err
	})
	if err != nil {
		t.Fatalf("scale as the HPA: %v", err)
	}
}

// TestHPAScale: when Git leaves replicas to an HPA, the HPA's writes are
// never drift. When Git declares replicas, the HPA's write is drift owned
// by a controller (the tug of war the fight detector watches).
//
// Found on the real apiserver: a write through the scale subresource to
// a spec.replicas that no manager owns records no managedFields entry at
// all, so the HPA (or a person's kubectl scale) is not visible as an
// owner of undeclared replicas; the field reads as defaulted.
func TestHPAScale(t *testing.T) {
	cs := clientSet(t)
	ns := namespace(t, cs)
	undeclared := decode(t, strings.Replace(deploymentDoc(ns, "hpa"), "  replicas: 3\n", "", 1))
	applyAs(t, cs, undeclared, live.FieldManager)
	hpaScale(t, cs, undeclared, 9)
	r := compare(t, cs, undeclared)
	if r.Status != status.ResourceSynced || r.Drifted() != 0 {
		t.Fatalf("undeclared replicas: %s", describe(r))
	}
	if f := field(r, "/spec/replicas"); f != nil && (f.Class != status.OwnerController || !f.Extra) {
		t.Fatalf("undeclared replicas listed as %+v", f)
	}
	l, err := cs.Get(context.Background(), live.RefOf(undeclared))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok, err := unstructured.NestedInt64(l.Object, "spec", "replicas"); err != nil || !ok || got != 9 {
		t.Fatalf("replicas = %d (present %v, %v), want 9", got, ok, err)
	}

	declared := decode(t, deploymentDoc(ns, "render"))
	applyAs(t, cs, declared, live.FieldManager)
	hpaScale(t, cs, declared, 9)
	r = compare(t, cs, declared)
	f := field(r, "/spec/replicas")
	if r.Status != status.ResourceOutOfSync || f == nil || f.Extra || f.Class != status.OwnerController || f.Owners[0].Manager != "horizontal-pod-autoscaler" || f.Owners[0].Subresource != "scale" {
		t.Fatalf("declared replicas: %s", describe(r))
	}
}

// TestAdoptedObjectDefaultsAreNotDrift: an object first made with kubectl
// create leaves kubectl-create owning every field the apiserver
// defaulted. After kdrift adopts it, a dry-run create tells those
// defaults apart from what the person really set (the app label).
func TestAdoptedObjectDefaultsAreNotDrift(t *testing.T) {
	cs := clientSet(t)
	ns := namespace(t, cs)
	kubectl(t, nil, "-n", ns, "create", "deployment", "render", "--image=registry.example/render:1.0", "--replicas=3")
	desired := decode(t, deploymentDoc(ns, "render"))
	applyAs(t, cs, desired, live.FieldManager)

	first := compare(t, cs, desired)
	if !diff.NeedsDefaults(first) || first.Drifted() < 5 {
		t.Fatalf("before defaults: %s", describe(first))
	}
	ctx := context.Background()
	in := diff.Input{Desired: desired, Options: diff.DefaultOptions()}
	var err error
	if in.Live, err = cs.Get(ctx, live.RefOf(desired)); err != nil {
		t.Fatal(err)
	}
	if in.DryRun, err = cs.DryRunApply(ctx, desired); err != nil {
		t.Fatal(err)
	}
	if in.Defaulted, err = cs.DryRunCreate(ctx, desired); err != nil {
		t.Fatal(err)
	}
	r := diff.Compare(in)
	if r.Status != status.ResourceOutOfSync || len(r.Fields) != 1 || r.Fields[0].Path != "/metadata/labels/app" || r.Fields[0].Owners[0].Manager != "kubectl-create" {
		t.Fatalf("with defaults: %s", describe(r))
	}
	if got, err := cs.Get(ctx, status.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: in.Defaulted.GetName()}); err != nil || got != nil {
		t.Fatalf("the dry-run create stored %s: %v", in.Defaulted.GetName(), err)
	}
}
