package keymap

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

func press(s string) tea.KeyPressMsg {
	switch s {
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "ctrl+s":
		return tea.KeyPressMsg{Code: 's', Mod: tea.ModCtrl}
	}
	r := []rune(s)
	return tea.KeyPressMsg{Code: r[0], Text: s}
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaultKeyMapHasNoDuplicates(t *testing.T) {
	t.Parallel()
	if _, err := (Config{}).Apply(DefaultKeyMap()); err != nil {
		t.Fatalf("defaults conflict: %v", err)
	}
}

func TestLoadConfigOverrides(t *testing.T) {
	t.Parallel()
	p := writeConfig(t, "readonly: true\nkeys:\n  sync: [\"Z\", \"ctrl+s\"]\n  revert: []\n")
	c, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Readonly {
		t.Errorf("readonly not read")
	}
	km, err := c.Apply(DefaultKeyMap())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key  string
		b    key.Binding
		want bool
	}{
		{"Z", km.Binding(ActSync), true},
		{"ctrl+s", km.Binding(ActSync), true},
		{"s", km.Binding(ActSync), false},
		{"r", km.Binding(ActRevert), false},
		{"f", km.Binding(ActFreeze), true},
	}
	for _, tt := range tests {
		if got := key.Matches(press(tt.key), tt.b); got != tt.want {
			t.Errorf("%q matches %v = %v, want %v", tt.key, tt.b.Help(), got, tt.want)
		}
	}
	if km.Binding(ActSync).Help().Key != "Z/ctrl+s" || km.Binding(ActSync).Help().Desc != "sync" {
		t.Errorf("help not relabelled: %+v", km.Binding(ActSync).Help())
	}
}

func TestLoadConfigMissingFileIsDefault(t *testing.T) {
	t.Parallel()
	c, err := LoadConfig(filepath.Join(t.TempDir(), "nope.yaml"))
	if err != nil || c.Readonly || len(c.Keys) != 0 {
		t.Fatalf("got %+v, %v", c, err)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, want string
	}{
		{"unknown action", "keys:\n  synk: [x]\n", "keys.synk: unknown action"},
		{"duplicate", "keys:\n  sync: [f]\n", `"f" is bound to both`},
		{"bad yaml", "keys: [\n", "not valid YAML"},
		{"empty key", "keys:\n  sync: [\"\"]\n", "empty key name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := LoadConfig(writeConfig(t, tt.body))
			if err == nil {
				_, err = c.Apply(DefaultKeyMap())
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestConfigPathRespectsXDG(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "/x/cfg")
	p, err := ConfigPath()
	if err != nil || p != "/x/cfg/kdrift/config.yaml" {
		t.Fatalf("got %q, %v", p, err)
	}
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("HOME", "/home/lao")
	p, err = ConfigPath()
	if err != nil || p != "/home/lao/.config/kdrift/config.yaml" {
		t.Fatalf("got %q, %v", p, err)
	}
}

func TestHelpGroupsCoverEveryBinding(t *testing.T) {
	t.Parallel()
	km := DefaultKeyMap()
	seen := map[Action]bool{}
	for _, v := range Views() {
		for _, g := range km.FullHelp(v) {
			for _, b := range g {
				a := km.Lookup(v, press(b.Keys()[0]))
				if a == ActNone {
					t.Errorf("view %d help lists %v, which does nothing there", v, b.Help())
				}
				seen[a] = true
			}
		}
	}
	for a := ActNone + 1; a < actionCount; a++ {
		if !seen[a] {
			t.Errorf("%v is in no view's help", a)
		}
	}
}

// TestEveryActionHasOneRow keeps the table whole: every action has exactly
// one row, with a config name, default keys, help text, a help column and
// the views it works in named by View values.
func TestEveryActionHasOneRow(t *testing.T) {
	t.Parallel()
	rows := map[Action]int{}
	names := map[string]bool{}
	for _, r := range Rows() {
		rows[r.Action]++
		if r.Name == "" || len(r.Keys) == 0 || r.Help == "" {
			t.Errorf("row of %d lacks a name, keys or help: %+v", r.Action, r)
		}
		if names[r.Name] {
			t.Errorf("config name %q used twice", r.Name)
		}
		names[r.Name] = true
		if r.Group < 0 || r.Group >= groupCount {
			t.Errorf("%s: help group %d unknown", r.Name, r.Group)
		}
		for _, v := range r.Views {
			if v < 0 || v >= viewCount {
				t.Errorf("%s: view %d unknown", r.Name, v)
			}
		}
		for v := range r.ViewHelp {
			if !r.WorksIn(v) {
				t.Errorf("%s: relabelled for view %d, where it does nothing", r.Name, v)
			}
		}
	}
	for a := ActNone + 1; a < actionCount; a++ {
		if rows[a] != 1 {
			t.Errorf("action %d has %d rows, want 1", a, rows[a])
		}
	}
	if rows[ActNone] != 0 {
		t.Errorf("ActNone has a row")
	}
}

// TestHelpListsOnlyTheViewsKeys: `?` in a view shows the keys of that view,
// not the global list.
func TestHelpListsOnlyTheViewsKeys(t *testing.T) {
	t.Parallel()
	km := DefaultKeyMap()
	descs := func(v View) string {
		var out []string
		for _, g := range km.FullHelp(v) {
			for _, b := range g {
				out = append(out, b.Help().Desc)
			}
		}
		return strings.Join(out, "|")
	}
	tests := []struct {
		v        View
		has, not []string
	}{
		{ViewApps, []string{"sort by next column", "unfreeze", "history", "open"}, []string{"previous drifted field", "revert commit", "ignore field"}},
		{ViewApp, []string{"diff", "ownership", "sync"}, []string{"filter (!x inverts)", "revert commit"}},
		{ViewDiff, []string{"next drifted field", "show/hide defaults", "unified/side-by-side", "ignore field"}, []string{"open", "revert commit", "mark"}},
		{ViewOwners, []string{"next flagged", "prev flagged", "diff"}, []string{"next drifted field", "unified/side-by-side"}},
		{ViewHistory, []string{"show commit", "revert commit"}, []string{"sync", "freeze", "ignore field"}},
	}
	for _, tt := range tests {
		got := "|" + descs(tt.v) + "|"
		for _, h := range tt.has {
			if !strings.Contains(got, "|"+h+"|") {
				t.Errorf("view %d help lacks %q: %s", tt.v, h, got)
			}
		}
		for _, n := range tt.not {
			if strings.Contains(got, "|"+n+"|") {
				t.Errorf("view %d help lists %q: %s", tt.v, n, got)
			}
		}
	}
}

func TestShortHelpDropsKeysOfOtherViews(t *testing.T) {
	t.Parallel()
	km := DefaultKeyMap()
	got := km.Short(ViewHistory, ActEnter, ActSync, ActRevert)
	if len(got) != 2 || got[0].Help().Desc != "show commit" || got[1].Help().Desc != "revert commit" {
		t.Fatalf("short help = %+v", got)
	}
}
