package publish

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
)

func TestDecodeRoundTrip(t *testing.T) {
	now := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	until := now.Add(time.Hour)
	st := status.AppStatus{Name: "web", Sync: status.SyncOutOfSync, OutOfSyncSince: &now, Freeze: &app.Freeze{Reason: "r", By: "b", At: now, Until: &until},
		Resources: []status.ResourceStatus{{Ref: status.ObjectRef{Kind: "Deployment", Name: "w"}, Status: status.ResourceOutOfSync, Fields: []status.FieldChange{{Path: "/spec/replicas", Desired: int64(2), Live: int64(7), Owners: []status.Owner{{Manager: "kubectl", Time: &now}}}}}}}
	p := Bound("id", st)
	b, _ := json.Marshal(p)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	got, err := Decode(&unstructured.Unstructured{Object: map[string]any{"status": m}})
	if err != nil {
		t.Fatal(err)
	}
	var want Published
	_ = json.Unmarshal(b, &want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

// TestTrustedHash: the content hash an AppStatus's annotation claims is
// trusted only when its status has that content, so a leader killed
// between the metadata write and the status write does not leave a status
// no later leader rewrites.
func TestTrustedHash(t *testing.T) {
	object := func(st status.AppStatus, claimed string) (*unstructured.Unstructured, Published, error) {
		b, _ := json.Marshal(Bound("id", st))
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		obj := &unstructured.Unstructured{Object: map[string]any{"status": m}}
		obj.SetAnnotations(map[string]string{AnnotationContent: claimed})
		pub, err := Decode(obj)
		return obj, pub, err
	}
	oldSt := status.AppStatus{Name: "app-02", Sync: status.SyncSynced, Revision: "601fd97"}
	newSt := status.AppStatus{Name: "app-02", Sync: status.SyncSynced, Revision: "209a802"}
	newHash, _, _ := contentHash(Bound("id", newSt))
	if got := trustedHash(object(newSt, newHash)); got != newHash {
		t.Fatalf("a consistent object: %q, want %q", got, newHash)
	}
	if got := trustedHash(object(oldSt, newHash)); got != "" {
		t.Fatalf("the new hash over the old status is trusted: %q", got)
	}
	if got := trustedHash(object(newSt, "")); got != "" {
		t.Fatalf("no annotation: %q", got)
	}
}
