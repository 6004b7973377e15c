package diff

import (
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/status"
)

// A pod-like object whose managedFields use every list key form: k: with
// one and two fields, v: for a set of strings, i: for an indexed list.
const keyedLive = `
apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: prod
  finalizers: [example.com/a, example.com/b]
  managedFields:
  - manager: kdrift
    operation: Apply
    apiVersion: v1
    time: "2026-12-01T10:00:00Z"
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:containers:
          k:{"name":"web"}:
            .: {}
            f:name: {}
            f:ports:
              k:{"containerPort":80,"protocol":"TCP"}:
                .: {}
                f:containerPort: {}
                f:protocol: {}
        f:tolerations: {}
  - manager: finalizer-operator
    operation: Update
    apiVersion: v1
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata:
        f:finalizers:
          .: {}
          v:"example.com/b": {}
  - manager: kubectl-patch
    operation: Update
    apiVersion: v1
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:containers:
          k:{"name":"web"}:
            f:ports:
              k:{"containerPort":9090,"protocol":"TCP"}:
                .: {}
                f:containerPort: {}
                f:name: {}
                f:protocol: {}
        f:hostAliases:
          i:1:
            f:ip: {}
spec:
  containers:
  - name: web
    ports:
    - {containerPort: 80, protocol: TCP}
    - {containerPort: 9090, protocol: TCP, name: metrics}
  tolerations: [{key: a, operator: Exists}]
  hostAliases: [{ip: 10.0.0.1}, {ip: 10.0.0.2}]
`

func TestOwnershipListKeys(t *testing.T) {
	t.Parallel()
	own, err := NewOwnership(obj(t, keyedLive), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ ptr, want string }{
		{"/spec/containers/0/name", "kdrift/Apply/kdrift"},
		{"/spec/containers/0/ports/0/containerPort", "kdrift/Apply/kdrift"},
		{"/spec/containers/0/ports/1", "kubectl-patch/Update/person"},
		{"/spec/containers/0/ports/1/name", "kubectl-patch/Update/person"},
		{"/metadata/finalizers/1", "finalizer-operator/Update/controller"},
		{"/metadata/finalizers/0", ""},
		{"/spec/hostAliases/1/ip", "kubectl-patch/Update/person"},
		{"/spec/hostAliases/0/ip", ""},
		// tolerations is atomic: its insides belong to its owner.
		{"/spec/tolerations/0/operator", "kdrift/Apply/kdrift"},
		{"/spec/nothing", ""},
	}
	for _, tc := range cases {
		var got []string
		for _, o := range own.Of(tc.ptr) {
			got = append(got, o.Manager+"/"+o.Operation+"/"+string(o.Class))
		}
		if strings.Join(got, ",") != tc.want {
			t.Errorf("Of(%s) = %q, want %q", tc.ptr, got, tc.want)
		}
	}
	within := own.Within("/spec/containers/0/ports")
	if len(within) != 2 || TopClass(within) != status.OwnerPerson {
		t.Errorf("Within(ports) = %+v", within)
	}
	if got := own.FieldsOf(status.Owner{Manager: "finalizer-operator", Operation: "Update"}); strings.Join(got, ",") != "/metadata/finalizers,/metadata/finalizers/1" {
		t.Errorf("FieldsOf(finalizer-operator) = %q", got)
	}
	if n := len(own.Managers()); n != 3 {
		t.Errorf("Managers() = %d entries, want 3", n)
	}
	if tm := own.Of("/spec/containers/0/name")[0].Time; tm == nil || tm.Year() != 2026 {
		t.Errorf("time = %v", tm)
	}
}

func TestOwnershipBadFieldsV1(t *testing.T) {
	t.Parallel()
	bad := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, managedFields: [{manager: broken, operation: Update, fieldsType: FieldsV1, fieldsV1: {"k:{bad": {}}}]}}`)
	if _, err := NewOwnership(bad, DefaultOptions()); err == nil || !strings.Contains(err.Error(), `"broken"`) {
		t.Errorf("err = %v, want one naming the manager", err)
	}
	got := Compare(Input{Desired: bad, DryRun: bad, Live: bad, Options: DefaultOptions()})
	if got.Status != status.ResourceError || !strings.Contains(got.Message, "ConfigMap/c") {
		t.Errorf("compare with bad managedFields = %s %q", got.Status, got.Message)
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	o := DefaultOptions()
	o.PersonManagers = []string{"lens"}
	for m, want := range map[string]status.OwnerClass{
		"kubectl": status.OwnerPerson, "kubectl-edit": status.OwnerPerson, "kubectl-client-side-apply": status.OwnerPerson,
		"kubectl-scale": status.OwnerPerson, "kubectl-patch": status.OwnerPerson, "lens": status.OwnerPerson,
		"kdrift": status.OwnerKdrift, "kdrift-handover": status.OwnerKdrift,
		"horizontal-pod-autoscaler": status.OwnerController, "cloud-controller": status.OwnerController, "kube-controller-manager": status.OwnerController,
	} {
		if got := o.Classify(m); got != want {
			t.Errorf("Classify(%s) = %s, want %s", m, got, want)
		}
	}
	if TopClass(nil) != status.OwnerDefaulted {
		t.Error("no owners must be defaulted")
	}
}

func TestPointers(t *testing.T) {
	t.Parallel()
	o := obj(t, `{apiVersion: v1, kind: X, metadata: {annotations: {a/b: "1", "c~d": "2"}}, spec: {l: [{x: 1}, {x: 2}, {x: 3}], m: {k: v}}}`)
	if v, ok := ValueAt(o.Object, "/metadata/annotations/a~1b"); !ok || v != "1" {
		t.Errorf("a~1b = %v %v", v, ok)
	}
	if v, ok := ValueAt(o.Object, "/metadata/annotations/c~0d"); !ok || v != "2" {
		t.Errorf("c~0d = %v %v", v, ok)
	}
	if _, ok := ValueAt(o.Object, "/spec/l/3"); ok {
		t.Error("index past the end must not exist")
	}
	w := WithoutPointers(o, []string{"/spec/l/0", "/spec/l/2", "/spec/m/k", "/spec/absent"})
	if l := w.Object["spec"].(map[string]any)["l"].([]any); len(l) != 1 || l[0].(map[string]any)["x"] != int64(2) {
		t.Errorf("after removal l = %v", l)
	}
	if len(o.Object["spec"].(map[string]any)["l"].([]any)) != 3 {
		t.Error("WithoutPointers changed its input")
	}
	for p, want := range map[string]bool{"": true, "/a/b": true, "/a~1b": true, "a": false, "/a~2": false, "/a~": false} {
		if ValidPointer(p) != want {
			t.Errorf("ValidPointer(%q) != %v", p, want)
		}
	}
	if comparePointers("/a/2", "/a/10") >= 0 || comparePointers("/a/b", "/a") <= 0 {
		t.Error("pointer order")
	}
}
