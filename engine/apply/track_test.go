package apply_test

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"kdrift.dev/kdrift/engine/apply"
)

// Track changes only a copy of the metadata: the object it was given (the
// render cache's, shared by every pass) is left as it was.
func TestTrackLeavesItsInputAlone(t *testing.T) {
	o := obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":{"a":"1"},"annotations":{"b":"2"}},"data":{"k":"v"}}`)
	before := runtime.DeepCopyJSON(o.Object)
	tr := apply.Track(o, "app", "repo")
	tr.SetNamespace("ns")
	c := apply.CopyMetadata(o)
	c.SetLabels(map[string]string{"c": "3"})
	if !reflect.DeepEqual(o.Object, before) {
		t.Fatalf("Track or CopyMetadata changed its input: %v", o.Object)
	}
	if tr.GetLabels()[apply.LabelManagedBy] != apply.LabelManagedByValue || tr.GetLabels()["a"] != "1" || tr.GetNamespace() != "ns" {
		t.Fatalf("Track's copy: %v", tr.Object)
	}
}
