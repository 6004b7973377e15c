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
