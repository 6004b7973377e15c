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
	ns, err := ParseSettings(SettingsFile, []byte("apiVersion: kdrift.dev/v1alpha1\nkind: Settings\nspec:\n  namespaces: [shop-prod, shop-staging]\n"))
	if err != nil || len(ns.Spec.Namespaces) != 2 {
		t.Fatalf("namespaces: %+v, %v", ns, err)
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
		{"apiVersion: kdrift.dev/v1alpha1\nkind: Settings\nspec:\n  namespaces: [shop, Shop_2]\n", "spec.namespaces[1]"},
		{"apiVersion: kdrift.dev/v1alpha1\nkind: Settings\nspec:\n  namespaces: [shop, shop]\n", "lists shop twice"},
		{"apiVersion: kdrift.dev/v1alpha1\nkind: Settings\nspec:\n  namespaces: [\"a\\n  evil: x\"]\n", "is not a namespace name"},
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

func TestSettingsHealthChecks(t *testing.T) {
	const head = "apiVersion: kdrift.dev/v1alpha1\nkind: Settings\nspec:\n  health:\n    checks:\n"
	s, err := ParseSettings(SettingsFile, []byte(head+
		"    - apiVersion: cert-manager.io/v1\n      kind: Certificate\n      current: status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')\n      failed: status.conditions.exists(c, c.type == 'Issuing' && c.status == 'False')\n"+
		"    - apiVersion: v1\n      kind: ConfigMap\n      current: has(self.data) && self.data.ready == 'yes'\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Spec.Health.Checks) != 2 || s.Spec.Health.Checks[0].Failed == "" {
		t.Fatalf("%+v", s.Spec.Health)
	}
	for _, c := range []struct{ doc, want string }{
		{"    - apiVersion: v1\n      kind: ConfigMap\n      current: self.data.(\n", "spec.health.checks[0].current: CEL expression"},
		{"    - apiVersion: v1\n      kind: ConfigMap\n", "spec.health.checks[0].current: is missing"},
		{"    - apiVersion: v1\n      kind: ConfigMap\n      current: 'true'\n    - apiVersion: v1\n      kind: ConfigMap\n      current: 'true'\n", "spec.health.checks[1].kind: ConfigMap is judged by checks[0] already"},
		{"    - kind: ConfigMap\n      current: 'true'\n", "spec.health.checks[0].apiVersion: is missing"},
		{"    - apiVersion: v1\n      kind: ConfigMap\n      curent: 'true'\n", "field curent not found"},
	} {
		_, err := ParseSettings(SettingsFile, []byte(head+c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), SettingsFile) {
			t.Errorf("%q: got %v, want %q", c.doc, err, c.want)
		}
	}
}

func TestWithHealth(t *testing.T) {
	repo := []HealthCheck{
		{APIVersion: "v1", Kind: "ConfigMap", Current: "true"},
		{APIVersion: "cert-manager.io/v1", Kind: "Certificate", Current: "true"},
	}
	own := App{Metadata: Metadata{Name: "own"}, Spec: Spec{Health: &HealthSpec{Checks: []HealthCheck{{APIVersion: "v1", Kind: "ConfigMap", Current: "false"}}}}}
	bare := App{Metadata: Metadata{Name: "bare"}}
	res := WithHealth(LoadResult{Apps: []App{bare, own}}, Settings{Spec: SettingsSpec{Health: &HealthSpec{Checks: repo}}}, nil)
	if got := res.Apps[0].Spec.Health.Checks; len(got) != 2 {
		t.Fatalf("bare: %+v", got)
	}
	got := res.Apps[1].Spec.Health.Checks
	if len(got) != 2 || got[0].Current != "false" || got[1].Kind != "Certificate" {
		t.Fatalf("own: the App's check for a kind must win: %+v", got)
	}
	if len(own.Spec.Health.Checks) != 1 {
		t.Fatalf("the App's own spec was changed: %+v", own.Spec.Health.Checks)
	}
	_, perr := ParseSettings(SettingsFile, []byte("kind: Settings\n"))
	bare.File = ".kdrift/apps.yaml"
	res = WithHealth(LoadResult{Apps: []App{bare}}, Settings{}, perr)
	if len(res.Apps) != 0 || len(res.Invalid) != 1 || res.Invalid[0].Name != "bare" ||
		!strings.Contains(res.Invalid[0].Err.Error(), "not compared while "+SettingsFile+" is invalid") {
		t.Fatalf("a settings file that cannot be read must make every App invalid, saying why: %+v", res)
	}
}
