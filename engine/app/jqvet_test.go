package app

import (
	"strings"
	"testing"
)

func TestJQPathVetting(t *testing.T) {
	// Expressions as Argo CD's documentation and its users write them.
	for _, ok := range []string{
		`.spec.replicas`,
		`.metadata.annotations."foo.bar"`,
		`.metadata.annotations["a/b"]`,
		`.spec.template.spec.initContainers[] | select(.name == "injected-init-container")`,
		`.spec.rules[]?.http.paths[]? | select(.backend.service.name != "x" and (.path | startswith("/api")))`,
		`.spec.containers[-1].env[]? | select(.name | endswith("_TOKEN") or contains("SECRET"))`,
		`.. | select(type == "object" and has("caBundle")) | .caBundle`,
		`.spec.template.metadata.labels | .["app.kubernetes.io/version"] // .version`,
		`if .kind == "Job" then .spec.template else .spec end | .metadata`,
		`try .spec.a catch .spec.b`,
		`.spec.ports[0:2][] | .nodePort`,
		`first(.spec.containers[]) | .image`,
	} {
		if err := CheckJQPath(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, c := range []struct{ expr, want string }{
		{`("x" * 2000000000) as $b | .data`, "variable binding"},
		{`("x" * 2000000000) | .data`, `operator "*"`},
		{`.data | select(("x" * 2000000000) | length > 0)`, `operator "*"`},
		{`.a + .a | .b`, `operator "+"`},
		{`. as $x | .data`, "variable binding"},
		{`$__loc__ | .x`, "variable $__loc__"},
		{`def f: f; f`, "function definition"},
		{`[range(0; 100000000)] | .[0]`, "array construction"},
		{`range(0; 100000000) as $i | .`, "variable binding"},
		{`.spec | limit(1000000000; repeat(.))`, "function limit"},
		{`.a | select(until(. > 1e9; . + 1))`, "function until"},
		{`{a: .} | .a`, "object construction"},
		{`.["\(.a)\(.a)"]`, "interpolation"},
		{`.data[@base64 "x"]`, "format"},
		{`reduce .[] as $x (.; .) | .a`, "reduce"},
		{`.a | tostring`, "function tostring"},
		{`.a | ascii_downcase(1)`, "with 1 arguments"},
		{`.[-(.a)]`, "sign"},
		{`label $f | .a`, "label"},
		{`getpath(["a"])`, "function getpath"},
	} {
		err := CheckJQPath(c.expr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.expr, err, c.want)
		}
	}
}
