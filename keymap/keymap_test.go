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
	if _, err := (Config{}).Apply(DefaultKeyMap()); err != nil {
		t.Fatalf("defaults conflict: %v", err)
	}
}

func TestLoadConfigOverrides(t *testing.T) {
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
		{"Z", km.Sync, true},
		{"ctrl+s", km.Sync, true},
		{"s", km.Sync, false},
		{"r", km.Revert, false},
		{"f", km.Freeze, true},
	}
	for _, tt := range tests {
		if got := key.Matches(press(tt.key), tt.b); got != tt.want {
			t.Errorf("%q matches %v = %v, want %v", tt.key, tt.b.Help(), got, tt.want)
		}
	}
	if km.Sync.Help().Key != "Z/ctrl+s" || km.Sync.Help().Desc != "sync" {
		t.Errorf("help not relabelled: %+v", km.Sync.Help())
	}
}

func TestLoadConfigMissingFileIsDefault(t *testing.T) {
	c, err := LoadConfig(filepath.Join(t.TempDir(), "nope.yaml"))
	if err != nil || c.Readonly || len(c.Keys) != 0 {
		t.Fatalf("got %+v, %v", c, err)
	}
}

func TestLoadConfigErrors(t *testing.T) {
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
	km := DefaultKeyMap()
	n := 0
	for _, g := range km.FullHelp() {
		n += len(g)
	}
	if n != len(km.bindings()) {
		t.Fatalf("full help lists %d bindings, keymap has %d", n, len(km.bindings()))
	}
}
