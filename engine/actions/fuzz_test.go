package actions

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/app"
)

// FuzzYAMLEdit: on any App file, an edit that succeeds leaves a file that
// parses, holds what was written and keeps the other Apps as they were;
// freezing an unfrozen App and unfreezing it restores the bytes.
func FuzzYAMLEdit(f *testing.F) {
	f.Add(appsFile, "INC-1 \"quoted\"\nsecond line")
	f.Add(appsFile+"\n", "r")
	f.Add(strings.ReplaceAll(appsFile+"\n", "\n", "\r\n"), "crlf")
	f.Add("kind: App\nmetadata:\n  name: a\nspec:\n  path: p\n  notes: |\n    line one\n\n    line three\n# top comment\nstatus: {}\n", "block scalar")
	f.Add("kind: App\nmetadata: {name: a}\nspec:\n  path: p\n      # deep comment\n  syncPolicy:\n    selfHeal: true\nextra: 1\n", "# not a comment")
	f.Add("kind: App\nmetadata:\n  name: a\nspec:\n  ignoreDifferences: []\n  path: p\n", ": colon")
	f.Add("kind: App\nmetadata:\n  name: a\nspec:\n  freeze:\n    reason: old\n    by: x\n  path: p # keep\n", "replace")
	f.Add("kind: App\nmetadata: {name: a}\nspec: &s {path: *s}\n", "recursive")
	f.Fuzz(func(t *testing.T, src, reason string) {
		apps, err := parseApps("fuzz.yaml", []byte(src))
		if err != nil || len(src) > 4096 {
			return
		}
		at := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
		until := at.Add(time.Hour)
		fr := app.Freeze{Reason: reason, By: "A <a@example.com>", At: at, Until: &until}
		rule := app.IgnoreRule{Group: "apps", Kind: "Deployment", Name: strings.ToValidUTF8(reason, "\uFFFD"), JSONPointers: []string{"/spec/replicas"}}
		for _, a := range apps {
			name := a.Metadata.Name
			if countApps(apps, name) != 1 {
				continue
			}
			if out, err := setFreeze([]byte(src), name, fr); err == nil {
				got := mustParse(t, out)
				b := find(got, name)
				if b == nil || b.Spec.Freeze == nil || b.Spec.Freeze.Reason != strings.ToValidUTF8(reason, "\uFFFD") || !b.Spec.Freeze.Until.Equal(until) {
					t.Fatalf("freeze of %s not read back from\n%q", name, out)
				}
				sameOthers(t, apps, got, name, out)
				if a.Spec.Freeze == nil {
					back, err := removeFreeze(out, name)
					if err != nil {
						t.Fatalf("unfreeze: %v\n%q", err, out)
					}
					if !bytes.Equal(back, []byte(src)) {
						t.Fatalf("freeze round trip changed the file:\n%q\n%q", src, back)
					}
				}
			}
			if out, err := appendIgnoreRule([]byte(src), name, rule); err == nil {
				got := mustParse(t, out)
				b := find(got, name)
				if b == nil || len(b.Spec.IgnoreDifferences) != len(a.Spec.IgnoreDifferences)+1 ||
					!reflect.DeepEqual(b.Spec.IgnoreDifferences[len(b.Spec.IgnoreDifferences)-1], rule) {
					t.Fatalf("rule of %s not read back from\n%q", name, out)
				}
				sameOthers(t, apps, got, name, out)
			}
		}
	})
}

func countApps(apps []app.App, name string) int {
	n := 0
	for _, a := range apps {
		if a.Metadata.Name == name {
			n++
		}
	}
	return n
}

func find(apps []app.App, name string) *app.App {
	for i := range apps {
		if apps[i].Metadata.Name == name {
			return &apps[i]
		}
	}
	return nil
}

func mustParse(t *testing.T, out []byte) []app.App {
	t.Helper()
	got, err := parseApps("fuzz.yaml", out)
	if err != nil {
		t.Fatalf("edited file does not parse: %v\n%q", err, out)
	}
	return got
}

// sameOthers checks that an edit of App name left every other App alone.
func sameOthers(t *testing.T, before, after []app.App, name string, out []byte) {
	t.Helper()
	if len(before) != len(after) {
		t.Fatalf("edit of %s changed the number of Apps (%d to %d):\n%q", name, len(before), len(after), out)
	}
	for i := range before {
		if before[i].Metadata.Name != name && !reflect.DeepEqual(before[i].Spec, after[i].Spec) {
			t.Fatalf("edit of %s changed App %s:\n%q", name, before[i].Metadata.Name, out)
		}
	}
}

// FuzzMerge3: the line merge behind revert takes one side's change when
// the other side made none, takes a change made on both sides once, and a
// diff of two texts rebuilds the second from the first.
func FuzzMerge3(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nB\nc\n", "a\nb\nC\n")
	f.Add("a\nb\nc\nd\n", "a\nB\nc\nd\n", "a\nb\nC\nd\n")
	f.Add("1\n2\n3\n4\n5\n6\n", "0\n1\n2\n3\n4\n5\n6\n", "1\n2\n3\n4\n6\n")
	f.Add("a\nb\nc", "A\nb\nc", "a\nb\nC")
	f.Add("", "", "x\n")
	f.Add("x\r\ny\r\n", "x\r\nY\r\n", "x\r\ny\r\nz")
	f.Fuzz(func(t *testing.T, base, ours, theirs string) {
		if len(base)+len(ours)+len(theirs) > 8192 {
			return
		}
		if got, conf := merge3([]byte(base), []byte(base), []byte(theirs)); len(conf) > 0 || string(got) != theirs {
			t.Fatalf("only theirs changed: got %q (conflicts %v), want %q", got, conf, theirs)
		}
		if got, conf := merge3([]byte(base), []byte(ours), []byte(base)); len(conf) > 0 || string(got) != ours {
			t.Fatalf("only ours changed: got %q (conflicts %v), want %q", got, conf, ours)
		}
		if got, conf := merge3([]byte(base), []byte(ours), []byte(ours)); len(conf) > 0 || string(got) != ours {
			t.Fatalf("same change on both sides: got %q (conflicts %v), want %q", got, conf, ours)
		}
		merge3([]byte(base), []byte(ours), []byte(theirs))
		a, b := splitLines([]byte(base)), splitLines([]byte(ours))
		var rebuilt []string
		i := 0
		for _, h := range diffLines(a, b) {
			rebuilt = append(rebuilt, a[i:h.A0]...)
			rebuilt = append(rebuilt, b[h.B0:h.B1]...)
			i = h.A1
		}
		rebuilt = append(rebuilt, a[i:]...)
		if strings.Join(rebuilt, "") != ours {
			t.Fatalf("diff of %q and %q rebuilds %q", base, ours, strings.Join(rebuilt, ""))
		}
		_ = unifiedDiff("a", "b", []byte(base), []byte(ours))
	})
}
