package live

import (
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// compactDoc is a ConfigMap as kdrift applied it, co-owned by kubectl,
// with kubectl's last-applied annotation written by its client-side
// apply.
func compactDoc(name, rv string) string {
	return `
apiVersion: v1
kind: ConfigMap
metadata:
  name: ` + name + `
  namespace: ns
  resourceVersion: "` + rv + `"
  labels: {app.kubernetes.io/managed-by: kdrift}
  annotations:
    kdrift.dev/app: web
    kubectl.kubernetes.io/last-applied-configuration: '{"apiVersion":"v1","kind":"ConfigMap"}'
  managedFields:
  - manager: kdrift
    operation: Apply
    apiVersion: v1
    time: "2026-01-02T03:04:05Z"
    fieldsType: FieldsV1
    fieldsV1:
      f:data: {f:key: {}}
      f:metadata:
        f:annotations: {f:kdrift.dev/app: {}}
        f:labels: {f:app.kubernetes.io/managed-by: {}}
  - manager: kubectl-client-side-apply
    operation: Update
    apiVersion: v1
    time: "2026-01-02T03:04:06Z"
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata:
        f:annotations:
          .: {}
          f:kubectl.kubernetes.io/last-applied-configuration: {}
data:
  key: value
`
}

func newTestCompactor() *compactor {
	c := newCompactor()
	c.drop = compactAnnotations([]string{"deployment.kubernetes.io/revision", LastAppliedAnnotation})
	return c
}

func TestCompactSharesOneCopyPerVersion(t *testing.T) {
	c := newTestCompactor()
	a := c.object(configMaps, decodeU(t, compactDoc("a", "1")))
	// The other informer's copy of the same version is the first one.
	if b := c.object(configMaps, decodeU(t, compactDoc("a", "1"))); b != a {
		t.Fatal("the same version of an object is stored twice")
	}
	// Passing the stored object again changes nothing (idempotent).
	if b := c.object(configMaps, a); b != a {
		t.Fatal("the stored object was replaced by itself")
	}
	if b := c.object(configMaps, decodeU(t, compactDoc("a", "2"))); b == a {
		t.Fatal("a new version got the old one")
	}
	other := schema.GroupVersionResource{Group: "other", Version: "v1", Resource: "configmaps"}
	if b := c.object(other, decodeU(t, compactDoc("a", "2"))); b == a {
		t.Fatal("another resource's object got this one")
	}
	runtime.KeepAlive(a)
}

func TestCompactForgetsObjectsNoCacheHolds(t *testing.T) {
	c := newTestCompactor()
	for _, n := range []string{"a", "b", "c"} {
		c.object(configMaps, decodeU(t, compactDoc(n, "1")))
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		runtime.GC()
		c.mu.Lock()
		left := len(c.objects)
		c.mu.Unlock()
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d entries left after their objects were collected", left)
		}
	}
}

func TestCompactSharesFieldSets(t *testing.T) {
	c := newTestCompactor()
	a := c.object(configMaps, decodeU(t, compactDoc("a", "1")))
	b := c.object(configMaps, decodeU(t, compactDoc("b", "1")))
	ea, eb := a.Object["metadata"].(map[string]any)["managedFields"].([]any), b.Object["metadata"].(map[string]any)["managedFields"].([]any)
	for i := range ea {
		sa, sb := ea[i].(map[string]any)["fieldsV1"], eb[i].(map[string]any)["fieldsV1"]
		if reflect.ValueOf(sa).UnsafePointer() != reflect.ValueOf(sb).UnsafePointer() {
			t.Errorf("entry %d: equal field sets are two maps", i)
		}
	}
	// The entries read as before.
	want := decodeU(t, compactDoc("b", "1")).GetManagedFields()
	if got := b.GetManagedFields(); !reflect.DeepEqual(got, want) {
		t.Errorf("managedFields changed:\n got %v\nwant %v", got, want)
	}
	// A different set is not shared.
	d := decodeU(t, compactDoc("d", "1"))
	d.Object["metadata"].(map[string]any)["managedFields"].([]any)[0].(map[string]any)["fieldsV1"].(map[string]any)["f:data"].(map[string]any)["f:other"] = map[string]any{}
	d = c.object(configMaps, d)
	sa := ea[0].(map[string]any)["fieldsV1"]
	sd := d.Object["metadata"].(map[string]any)["managedFields"].([]any)[0].(map[string]any)["fieldsV1"]
	if reflect.ValueOf(sa).UnsafePointer() == reflect.ValueOf(sd).UnsafePointer() {
		t.Error("different field sets are shared")
	}
}

func TestCompactDropsLastApplied(t *testing.T) {
	c := newTestCompactor()
	u := c.object(configMaps, decodeU(t, compactDoc("a", "1")))
	ann := u.GetAnnotations()
	if _, has := ann[LastAppliedAnnotation]; has {
		t.Error("kubectl's last-applied annotation is cached")
	}
	if ann["kdrift.dev/app"] != "web" {
		t.Errorf("other annotations changed: %v", ann)
	}

	// Owned by kdrift (Git sets it): kept, it is compared and applied.
	owned := decodeU(t, compactDoc("b", "1"))
	set := owned.Object["metadata"].(map[string]any)["managedFields"].([]any)[0].(map[string]any)["fieldsV1"].(map[string]any)
	set["f:metadata"].(map[string]any)["f:annotations"].(map[string]any)["f:"+LastAppliedAnnotation] = map[string]any{}
	owned = c.object(configMaps, owned)
	if _, has := owned.GetAnnotations()[LastAppliedAnnotation]; !has {
		t.Error("a last-applied annotation kdrift owns was dropped")
	}

	// Its only annotation: no empty map is left.
	only := decodeU(t, compactDoc("c", "1"))
	delete(only.Object["metadata"].(map[string]any)["annotations"].(map[string]any), "kdrift.dev/app")
	only = c.object(configMaps, only)
	if _, has := only.Object["metadata"].(map[string]any)["annotations"]; has {
		t.Error("an empty annotations map is left")
	}

	// Comparisons that do not ignore it keep it.
	keep := newCompactor()
	keep.drop = compactAnnotations([]string{"deployment.kubernetes.io/revision"})
	if u := keep.object(configMaps, decodeU(t, compactDoc("a", "1"))); u.GetAnnotations()[LastAppliedAnnotation] == "" {
		t.Error("dropped although comparisons do not ignore it")
	}
}

func TestSetText(t *testing.T) {
	text := func(m map[string]any) (string, bool) {
		var b strings.Builder
		ok := setText(&b, m)
		return b.String(), ok
	}
	a, _ := text(map[string]any{"f:a": map[string]any{}, "f:b": map[string]any{"f:c": map[string]any{}}})
	b, _ := text(map[string]any{"f:a": map[string]any{"f:b": map[string]any{}}, "f:c": map[string]any{}})
	if a == b {
		t.Errorf("different sets have the same text %q", a)
	}
	// Keys holding the separators cannot make two sets collide.
	c, _ := text(map[string]any{"1:x{}": map[string]any{}})
	d, _ := text(map[string]any{"1:x": map[string]any{}, "": map[string]any{}})
	if c == d {
		t.Errorf("different sets have the same text %q", c)
	}
	if _, ok := text(map[string]any{"f:a": "value"}); ok {
		t.Error("a set holding a value was taken for a field set")
	}
}
