package app_test

import (
	"strings"
	"testing"
)

// TestLoadHealthChecks: a bad CEL expression makes its App an Error that
// names the file, line and field, with a fix; a good one loads.
func TestLoadHealthChecks(t *testing.T) {
	t.Parallel()
	checks := func(current string) string {
		return "  path: deploy/good\n  health:\n    checks:\n    - apiVersion: example.com/v1\n      kind: Widget\n      current: " + current + "\n"
	}
	res := loadFromGit(t, map[string]string{
		".kdrift/good.yaml":    bad("fine", checks(`"status.phase == 'Running'"`)) + "  delegation:\n    disabled: true\n",
		".kdrift/bad.yaml":     bad("broken", checks(`"status.phase =="`)),
		".kdrift/notbool.yaml": bad("notbool", checks(`"1 + 1"`)),
		".kdrift/nokind.yaml":  bad("nokind", "  path: deploy/good\n  health:\n    checks:\n    - apiVersion: example.com/v1\n      current: 'true'\n"),
	})
	if len(res.Apps) != 1 || res.Apps[0].Metadata.Name != "fine" || res.Apps[0].Spec.Delegates() {
		t.Fatalf("valid Apps = %+v, want fine with delegation off", res.Apps)
	}
	want := map[string]string{
		"broken":  `.kdrift/bad.yaml:11: App "broken": spec.health.checks[0].current: CEL expression ERROR: <input>:1:16: Syntax error`,
		"notbool": `.kdrift/notbool.yaml:11: App "notbool": spec.health.checks[0].current: CEL expression gives int, not a bool; write a CEL expression`,
		"nokind":  `App "nokind": spec.health.checks[0].kind: is missing; name the kind`,
	}
	for _, in := range res.Invalid {
		if w, ok := want[in.Name]; !ok || !strings.Contains(in.Err.Error(), w) {
			t.Errorf("%s: %v\nwant %q", in.Name, in.Err, w)
		}
		delete(want, in.Name)
	}
	if len(want) > 0 {
		t.Errorf("not reported: %v", want)
	}
}
