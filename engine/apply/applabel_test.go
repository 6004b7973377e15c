package apply_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/engine/live"
)

// TestAppLabelValue: an App name that is a label value is its own
// label; one that is not (too long, a NAMESPACE/NAME) is hashed into a
// valid one, the same each time and different for different names; Track
// writes it under the key live's selectors ask for.
func TestAppLabelValue(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, name := range []string{"web", "web.prod-1", long, "argocd/guestbook", strings.Repeat("b", 253)} {
		v := apply.AppLabelValue(name)
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Fatalf("AppLabelValue(%q) = %q: %v", name, v, errs)
		}
		short := len(name) <= 63 && !strings.Contains(name, "/")
		if short != (v == name) {
			t.Fatalf("AppLabelValue(%q) = %q", name, v)
		}
		if v != apply.AppLabelValue(name) {
			t.Fatalf("AppLabelValue(%q) is not stable", name)
		}
	}
	if apply.AppLabelValue(long) == apply.AppLabelValue(long+"a") {
		t.Fatal("two long names share a label value")
	}
	if apply.LabelApp != live.AppLabel {
		t.Fatalf("apply.LabelApp %q != live.AppLabel %q", apply.LabelApp, live.AppLabel)
	}
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}}}
	if got := apply.Track(o, "argocd/guestbook", "repo").GetLabels()[apply.LabelApp]; got != apply.AppLabelValue("argocd/guestbook") {
		t.Fatalf("Track wrote %q", got)
	}
}
