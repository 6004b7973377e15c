package apply_test

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
)

func TestExtrasPatchOrder(t *testing.T) {
	raw, err := apply.ExtrasPatch([]apply.Extra{
		{Path: "/spec/env/1", Live: map[string]any{"name": "A"}},
		{Path: "/data/k", Live: nil},
		{Path: "/spec/env/10", Live: "x"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var ops []map[string]any
	if err := json.Unmarshal(raw, &ops); err != nil {
		t.Fatal(err)
	}
	want := []string{"test /spec/env/10", "test /spec/env/1", "test /data/k", "remove /spec/env/10", "remove /spec/env/1", "remove /data/k"}
	if len(ops) != len(want) {
		t.Fatalf("ops = %s", raw)
	}
	for i, w := range want {
		if got := ops[i]["op"].(string) + " " + ops[i]["path"].(string); got != w {
			t.Fatalf("op %d = %q, want %q (all: %s)", i, got, w, raw)
		}
	}
	if _, has := ops[2]["value"]; !has {
		t.Fatalf("a test of null must still carry value: %s", raw)
	}
}

func TestExtrasOf(t *testing.T) {
	r := status.ResourceStatus{Fields: []status.FieldChange{
		{Path: "/data/a", Extra: true, Class: status.OwnerPerson, Live: "1"},
		{Path: "/data/b", Extra: true, Class: status.OwnerController, Live: "2"},
		{Path: "/data/c", Extra: true, Class: status.OwnerPerson, Ignored: true},
		{Path: "/data/d", Class: status.OwnerPerson},
	}}
	got := apply.ExtrasOf(r, nil)
	if len(got) != 1 || got[0].Path != "/data/a" || got[0].Live != "1" {
		t.Fatalf("ExtrasOf = %+v", got)
	}
}

// TestExtrasOfMaskedSecret: a Secret's values are masked in the result, so
// the patch's guard must take the real value from the live object.
func TestExtrasOfMaskedSecret(t *testing.T) {
	live := obj(t, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default"},"data":{"token":"c2VjcmV0"}}`)
	r := status.ResourceStatus{Fields: []status.FieldChange{
		{Path: "/data/token", Extra: true, Class: status.OwnerPerson, Live: "*** (masked)", Masked: true},
	}}
	got := apply.ExtrasOf(r, live)
	if len(got) != 1 || got[0].Live != "c2VjcmV0" {
		t.Fatalf("ExtrasOf = %+v, want the live (unmasked) value as the guard", got)
	}
}

// TestRemoveExtras is facts 2 and 3: a key added by hand survives a forced
// apply; the guarded JSON patch removes it, and refuses when the value
// changed since it was seen.
func TestRemoveExtras(t *testing.T) {
	ctx := context.Background()
	a := newApplier(t)
	cleanup(t, "configmaps", "extras")
	cm := apply.Track(obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"extras","namespace":"default"},"data":{"a":"1"}}`), "a", "repo-1")
	if _, err := a.Apply(ctx, cm, false); err != nil {
		t.Fatal(err)
	}
	cms := enginetest.Clientset(t).CoreV1().ConfigMaps("default")
	edit := func(key, val string) *corev1.ConfigMap {
		t.Helper()
		c, err := cms.Get(ctx, "extras", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c.Data[key] = val
		c, err = cms.Update(ctx, c, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	edit("hotfix", "on")
	live, err := a.Apply(ctx, cm, false)
	if err != nil {
		t.Fatal(err)
	}
	if live.Object["data"].(map[string]any)["hotfix"] != "on" {
		t.Fatal("fact 2: a forced apply omitting the key should leave it; the apiserver changed behaviour")
	}

	// The person changes the value after kdrift looked: nothing is removed.
	edit("hotfix", "changed")
	err = a.RemoveExtras(ctx, live, []apply.Extra{{Path: "/data/hotfix", Live: "on"}}, false)
	if err == nil {
		t.Fatal("the guarded patch must fail when the value changed")
	}
	if c, _ := cms.Get(ctx, "extras", metav1.GetOptions{}); c.Data["hotfix"] != "changed" {
		t.Fatalf("hotfix = %q, want changed (kept)", c.Data["hotfix"])
	}

	if err := a.RemoveExtras(ctx, live, []apply.Extra{{Path: "/data/hotfix", Live: "changed"}}, false); err != nil {
		t.Fatal(err)
	}
	c, err := cms.Get(ctx, "extras", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, has := c.Data["hotfix"]; has || c.Data["a"] != "1" {
		t.Fatalf("data = %v, want only a=1", c.Data)
	}
	for _, e := range c.ManagedFields {
		if e.Manager == "kubectl-edit" {
			t.Fatalf("the person's managedFields entry should be gone: %+v", c.ManagedFields)
		}
	}
}
