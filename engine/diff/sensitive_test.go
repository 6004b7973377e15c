package diff_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/status"
)

// TestMaskSensitive: a value a render took from a Secret is masked in
// fields and objects wherever it appears, inside a longer string too;
// short values and other fields are left alone.
func TestMaskSensitive(t *testing.T) {
	values := []string{"s3cr3t", "1"}
	res := []status.ResourceStatus{{Fields: []status.FieldChange{
		{Path: "/spec/template/spec/containers/0/env/0/value", Desired: "token=s3cr3t", Live: "old"},
		{Path: "/spec/replicas", Desired: int64(1), Live: int64(2)},
		{Path: "/metadata/annotations", Desired: map[string]any{"a": "s3cr3t"}},
	}}}
	diff.MaskSensitive(res, values)
	f := res[0].Fields
	if !f[0].Masked || f[0].Desired != diff.MaskedValue || f[0].Live != diff.MaskedValue {
		t.Fatalf("a value holding the secret: %+v", f[0])
	}
	if f[1].Masked || f[1].Desired != int64(1) {
		t.Fatalf("a short value must not mask: %+v", f[1])
	}
	if !f[2].Masked {
		t.Fatalf("a map holding the secret: %+v", f[2])
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"kind": "ConfigMap", "data": map[string]any{"url": "https://u:s3cr3t@h", "n": "x"}}}
	out := diff.MaskSensitiveObject(obj, values)
	if out == obj || strings.Contains(out.Object["data"].(map[string]any)["url"].(string), "s3cr3t") || out.Object["data"].(map[string]any)["n"] != "x" {
		t.Fatalf("object: %v", out.Object)
	}
	if obj.Object["data"].(map[string]any)["url"] != "https://u:s3cr3t@h" {
		t.Fatal("the original object was changed")
	}
}
