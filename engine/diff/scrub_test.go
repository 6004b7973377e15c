package diff

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestScrubSecrets(t *testing.T) {
	s := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"data": map[string]any{"password": "aHVudGVyMi14eXo="}, "stringData": map[string]any{"token": "tok-123456"}}}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"color": "blue-ish"}}}
	got := ScrubSecrets(`refused: hunter2-xyz, aHVudGVyMi14eXo=, tok-123456, blue-ish`, s, cm, nil)
	if strings.Contains(got, "hunter2") || strings.Contains(got, "aHVudGVy") || strings.Contains(got, "tok-123456") || !strings.Contains(got, "blue-ish") {
		t.Fatalf("ScrubSecrets = %q", got)
	}
}
