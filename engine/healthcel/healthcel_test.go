package healthcel

import (
	"strings"
	"testing"
)

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ src, want string }{
		{"", "is empty"},
		{"status.phase ==", "Syntax error"},
		{"status.phase", ""}, // dyn: checked when evaluated
		{"1 + 2", "gives int, not a bool"},
		{"nosuchvar == 1", "undeclared reference"},
		{strings.Repeat("a", MaxLength+1), "more than the 4096"},
	} {
		_, err := Compile(tc.src)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%.30q: %v", tc.src, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%.30q: error %v, want %q", tc.src, err, tc.want)
		}
	}
}

func TestCompiledOnce(t *testing.T) {
	t.Parallel()
	a, err := Compile("status.ready == true")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Compile("status.ready == true")
	if a != b {
		t.Error("the same expression compiled twice")
	}
}

func TestEval(t *testing.T) {
	t.Parallel()
	e, err := Compile("status.conditions.exists(c, c.type == 'Ready' && c.status == 'True') && self.kind == 'Widget'")
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{"kind": "Widget", "status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}}
	if ok, err := e.Eval(obj); !ok || err != nil {
		t.Errorf("Eval = %v, %v", ok, err)
	}
	if _, err := e.Eval(map[string]any{"kind": "Widget"}); err == nil {
		t.Error("a missing field must be an evaluation error")
	}
	dyn, _ := Compile("status.phase")
	if _, err := dyn.Eval(map[string]any{"status": map[string]any{"phase": "Running"}}); err == nil || !strings.Contains(err.Error(), "not a bool") {
		t.Errorf("a string result: %v", err)
	}
}

// TestCostBounded: an expression that would run for minutes over a
// committed object is stopped, by the cost limit or by the time bound
// (whichever cel-go checks first).
func TestCostBounded(t *testing.T) {
	t.Parallel()
	e, err := Compile("status.items.all(a, status.items.all(b, status.items.all(c, a + b + c >= 0)))")
	if err != nil {
		t.Fatal(err)
	}
	items := make([]any, 500)
	for i := range items {
		items[i] = int64(i)
	}
	_, err = e.Eval(map[string]any{"status": map[string]any{"items": items}})
	if err == nil || !(strings.Contains(err.Error(), "cost limit") || strings.Contains(err.Error(), "interrupted")) {
		t.Errorf("want the cost limit or the interrupt, got %v", err)
	}
}

func FuzzCompile(f *testing.F) {
	f.Add("status.phase == 'Running'")
	f.Add("status.conditions.filter(c, c.type == 'Ready').all(c, c.status == 'True')")
	f.Fuzz(func(t *testing.T, src string) {
		e, err := Compile(src)
		if err != nil {
			return
		}
		_, _ = e.Eval(map[string]any{"status": map[string]any{"phase": "Running", "conditions": []any{}}})
	})
}
