package engine_test

import (
	"reflect"
	"slices"
	"testing"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/source"
)

// TestNoRoleHandsOutInternals: no method of an Engine, whichever role it
// comes from, returns the repository or a cluster's clients; a caller
// asks the engine for what it would have done with them.
func TestNoRoleHandsOutInternals(t *testing.T) {
	internals := []reflect.Type{
		reflect.TypeFor[*source.Repo](),
		reflect.TypeFor[*live.ClientSet](),
		reflect.TypeFor[*live.Clients](),
	}
	et := reflect.TypeFor[*engine.Engine]()
	if et.NumMethod() == 0 {
		t.Fatal("an Engine has no methods")
	}
	for i := range et.NumMethod() {
		m := et.Method(i)
		for j := range m.Type.NumOut() {
			if out := m.Type.Out(j); slices.Contains(internals, out) {
				t.Errorf("Engine.%s returns %s: give the engine a method that does what the caller does with it", m.Name, out)
			}
		}
	}
}
