package app

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

func TestParseSettings(t *testing.T) {
	ok := "apiVersion: kdrift.dev/v1alpha1\nkind: Settings\nspec:\n  freezes:\n    channel: oncall/freezes\n    always: true\n"
	s, err := ParseSettings(SettingsFile, []byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if s.ChannelBranch() != "oncall/freezes" || !s.Spec.Freezes.Always {
		t.Fatalf("%+v", s)
	}
	if (Settings{}).ChannelBranch() != DefaultChannel {
		t.Fatal("default channel")
	}
	for _, c := range []struct{ doc, want string }{
		{"apiVersion: kdrift.dev/v1alpha1\nkind: App\n", "kind"},
		{"apiVersion: v1\nkind: Settings\n", "apiVersion"},
		{"apiVersion: kdrift.dev/v1alpha1\nkind: Settings\nspec:\n  freezes:\n    chanel: x\n", "field chanel not found"},
		{"apiVersion: kdrift.dev/v1alpha1\nkind: Settings\nspec:\n  freezes:\n    channel: ../main\n", "spec.freezes.channel"},
		{"apiVersion: kdrift.dev/v1alpha1\nkind: Settings\nspec:\n  freezes:\n    channel: refs/heads/x\n", "drop refs/heads/"},
		{"apiVersion: kdrift.dev/v1alpha1\nkind: Settings\n---\nkind: Settings\n", "more than one document"},
	} {
		_, err := ParseSettings(SettingsFile, []byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), SettingsFile) {
			t.Errorf("%q: got %v, want %q", c.doc, err, c.want)
		}
	}
}

func TestSettingsFileIsNotAnApp(t *testing.T) {
	fsys := fstest.MapFS{
		SettingsFile:        {Data: []byte("apiVersion: kdrift.dev/v1alpha1\nkind: Settings\n")},
		".kdrift/apps.yaml": {Data: []byte("apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata: {name: web}\nspec:\n  path: deploy\n  destination: {namespace: web}\n")},
		"deploy/cm.yaml":    {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")},
	}
	res := Load(fsys, ".")
	if len(res.Invalid) != 0 || len(res.Apps) != 1 {
		t.Fatalf("%+v", res)
	}
	if _, err := ReadSettings(fsys); err != nil {
		t.Fatal(err)
	}
}

func TestFreezeOnlyChange(t *testing.T) {
	base := "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata: {name: web}\nspec:\n  path: deploy\n  destination: {namespace: web}\n"
	frozen := base + "  freeze:\n    reason: INC-1 hold\n    by: A <a@example.com>\n    at: 2026-12-02T15:00:00Z\n"
	if err := FreezeOnlyChange(".kdrift/apps.yaml", []byte(base), []byte(frozen)); err != nil {
		t.Fatal(err)
	}
	moved := strings.Replace(frozen, "path: deploy", "path: other", 1)
	if err := FreezeOnlyChange(".kdrift/apps.yaml", []byte(base), []byte(moved)); err == nil || !strings.Contains(err.Error(), "App web") {
		t.Fatalf("a changed path passed: %v", err)
	}
	if err := FreezeOnlyChange(".kdrift/apps.yaml", nil, []byte(base)); err == nil {
		t.Fatal("an added App file passed")
	}
}

func TestChannelFreezesOnlyAdd(t *testing.T) {
	now := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	past := now.Add(-time.Minute)
	main := App{Metadata: Metadata{Name: "web"}}
	ch := main
	ch.Spec.Freeze = &Freeze{Reason: "INC-2", By: "B", At: now.Add(-time.Hour)}
	got, from := ChannelFreezes(main, ch, now)
	if !from || got.Spec.Freeze == nil || got.Spec.Freeze.Reason != "INC-2" {
		t.Fatalf("%+v", got.Spec)
	}
	ch.Spec.Freeze.Until = &past
	if got, from := ChannelFreezes(main, ch, now); from || got.Spec.Freeze != nil {
		t.Fatal("an expired channel freeze holds")
	}
	// The channel's unfreeze (no freeze there) never lifts main's.
	main.Spec.Freeze = &Freeze{Reason: "INC-1", By: "A", At: now.Add(-time.Hour)}
	if got, _ := ChannelFreezes(main, App{}, now); got.Spec.Freeze == nil || got.Spec.Freeze.Reason != "INC-1" {
		t.Fatal("main's freeze was lifted")
	}
}

func FuzzParseSettings(f *testing.F) {
	f.Add([]byte("apiVersion: kdrift.dev/v1alpha1\nkind: Settings\nspec:\n  freezes:\n    channel: x\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSettings(SettingsFile, data)
		if err == nil && ValidChannel(s.ChannelBranch()) != nil {
			t.Fatalf("accepted channel %q", s.ChannelBranch())
		}
	})
}
