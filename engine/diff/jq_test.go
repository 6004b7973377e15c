package diff

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/app"
)

func TestJQPointers(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
		map[string]any{"name": "app", "image": "a:1"},
		map[string]any{"name": "side/car", "image": "s:1"},
	}}}}, "metadata": map[string]any{"name": "x", "generation": int64(3)}}
	cases := []struct {
		expr string
		want []string
	}{
		{`.spec.template.spec.containers[] | select(.name == "app") | .image`, []string{"/spec/template/spec/containers/0/image"}},
		{`.spec.template.spec.containers[] | select(.name | startswith("side")) | .name`, []string{"/spec/template/spec/containers/1/name"}},
		{`.metadata.annotations["a/b~c"]`, []string{"/metadata/annotations/a~1b~0c"}},
		{`.metadata | select(.generation > 2) | .name`, []string{"/metadata/name"}},
	}
	for _, c := range cases {
		got, err := JQPointers(c.expr, obj)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, %v; want %v", c.expr, got, err, c.want)
		}
	}
	for _, bad := range []string{`.a |`, `env.HOME`, `$ENV.HOME`, `input`, `"x"`, strings.Repeat(".a", 600)} {
		got, err := JQPointers(bad, obj)
		if err == nil && len(got) > 0 {
			t.Errorf("%s: selected %v", bad, got)
		}
	}
	// A runaway expression stops at the time budget.
	if _, err := JQPointers(`def f: f; f`, obj); err == nil {
		t.Error("a runaway expression ran to an end")
	}
	if _, err := JQPointers(`[range(0; 5000)] | .[]`, obj); err == nil {
		t.Error("too many paths were accepted")
	}
}

func TestExpandJQ(t *testing.T) {
	live := &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"cache-a": "1", "keep": "2"}}}
	rules := []app.IgnoreRule{{Kind: "ConfigMap", JSONPointers: []string{"/data/x"}, JQPathExpressions: []string{`.data | to_entries[] | select(.key | startswith("cache")) | .key as $k | $k`}}}
	got := ExpandJQ(rules, nil, live)
	if len(got[0].JSONPointers) != 1 || rules[0].JSONPointers[0] != "/data/x" {
		t.Errorf("expand = %+v", got)
	}
	rules[0].JQPathExpressions = []string{`.data["cache-a"]`}
	got = ExpandJQ(rules, live)
	if !slices.Equal(got[0].JSONPointers, []string{"/data/x", "/data/cache-a"}) || len(rules[0].JSONPointers) != 1 {
		t.Errorf("expand = %+v (rules %+v)", got, rules)
	}
}
