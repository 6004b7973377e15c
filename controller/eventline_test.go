package controller

import (
	"bytes"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/status"
)

func TestEventLine(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	ref := status.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "prod", Name: "render"}
	line, err := EventLine(status.Fight{Base: status.Base{App: "render-prod", Time: at}, Ref: ref, Field: "/spec/replicas", Manager: "kubectl", Rewrites: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"app":"render-prod","field":"/spec/replicas","manager":"kubectl","ref":{"group":"apps","kind":"Deployment","name":"render","namespace":"prod","version":"v1"},"rewrites":3,"time":"2026-12-02T15:00:00Z","type":"Fight"}`
	if string(line) != want {
		t.Fatalf("EventLine =\n%s\nwant\n%s", line, want)
	}
	if bytes.Contains(line, []byte("\n")) {
		t.Fatal("one line per event")
	}
}
