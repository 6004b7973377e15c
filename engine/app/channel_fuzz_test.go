package app

import (
	"reflect"
	"testing"
	"time"
)

// FuzzChannelFreezes: whatever a channel commit makes of an App file,
// FreezeOnlyChange answers (no panic) and is deterministic; a change it
// accepts leaves every App as it was but for its freezes; and the
// channel's freezes merged into the branch's App never change anything
// but freezes, nor lift the branch's own freeze.
func FuzzChannelFreezes(f *testing.F) {
	base := "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata: {name: a}\nspec:\n  path: x\n  destination: {namespace: a}\n"
	f.Add(base, base+"  freeze: {reason: r, by: b, at: \"2026-12-02T15:00:00Z\", until: \"2026-12-02T19:00:00Z\"}\n")
	f.Add(base, base+"  freezes:\n  - {resource: {kind: Deployment, name: web}, reason: r, by: b, at: \"2026-12-02T15:00:00Z\"}\n")
	f.Add(base, "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata: {name: a}\nspec: {path: y}\n")
	f.Add(base, "")
	f.Add(base+"---\n"+base, base)
	now := time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, before, after string) {
		err := FreezeOnlyChange(".kdrift/f.yaml", []byte(before), []byte(after))
		again := FreezeOnlyChange(".kdrift/f.yaml", []byte(before), []byte(after))
		if (err == nil) != (again == nil) {
			t.Fatalf("not deterministic: %v then %v", err, again)
		}
		ba, _ := Parse(".kdrift/f.yaml", []byte(before))
		aa, _ := Parse(".kdrift/f.yaml", []byte(after))
		if err == nil && len(ba) != len(aa) {
			t.Fatalf("accepted a change of the Apps declared: %d -> %d", len(ba), len(aa))
		}
		for i := range aa {
			if i >= len(ba) {
				break
			}
			merged, _ := ChannelFreezes(ba[i], ChannelOnly(aa[i], ba[i]), now)
			if ba[i].Spec.Freeze.ActiveAt(now) && merged.Spec.Freeze != ba[i].Spec.Freeze {
				t.Fatal("the channel replaced the branch's own freeze")
			}
			if !equalButFreezes(merged, ba[i]) {
				t.Fatal("merging the channel's freezes changed more than freezes")
			}
		}
	})
}

// equalButFreezes says a and b are the same App but for their freezes.
func equalButFreezes(a, b App) bool {
	return reflect.DeepEqual(withoutFreezes(a), withoutFreezes(b))
}
