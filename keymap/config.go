package keymap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Config is the user's config file, ~/.config/kdrift/config.yaml:
//
//	readonly: true          # like --readonly: every mutating key is refused
//	keys:                   # action name -> the keys that trigger it
//	  sync: ["S", "ctrl+s"]
//	  freeze: ["z"]
//
// Key names are Bubble Tea's (e.g. "ctrl+r", "space", "enter", "esc",
// "pgdown"). A listed action's keys replace its defaults; an empty list
// disables the action.
type Config struct {
	Readonly bool                `yaml:"readonly"`
	Keys     map[string][]string `yaml:"keys"`
}

// ConfigPath is where the config file lives: $XDG_CONFIG_HOME/kdrift/
// config.yaml, else ~/.config/kdrift/config.yaml.
func ConfigPath() (string, error) {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "kdrift", "config.yaml"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("config file: cannot find the home folder: %w; set XDG_CONFIG_HOME", err)
	}
	return filepath.Join(home, ".config", "kdrift", "config.yaml"), nil
}

// LoadConfig reads the config file at path. A missing file is not an
// error: it yields the zero Config (default keys, read-write).
func LoadConfig(path string) (Config, error) {
	var c Config
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("config %s is not valid YAML: %w", path, err)
	}
	return c, nil
}

// Apply returns km with the config's key overrides, by the names of the
// key table's rows. An unknown action name or a key bound to two actions is
// an error naming them, so a typo does not silently leave the default in
// place.
func (c Config) Apply(km KeyMap) (KeyMap, error) {
	byName := map[string]Action{}
	for _, r := range table {
		byName[r.Name] = r.Action
	}
	names := make([]string, 0, len(c.Keys))
	for n := range c.Keys {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a, ok := byName[n]
		if !ok {
			return km, fmt.Errorf("config keys.%s: unknown action; known actions: %s", n, strings.Join(actionNames(), ", "))
		}
		bind := &km.b[a]
		keys := c.Keys[n]
		if len(keys) == 0 {
			bind.Unbind()
			continue
		}
		for _, k := range keys {
			if strings.TrimSpace(k) == "" {
				return km, fmt.Errorf("config keys.%s: empty key name", n)
			}
		}
		bind.SetKeys(keys...)
		bind.SetHelp(strings.Join(keys, "/"), bind.Help().Desc)
	}
	seen := map[string]string{}
	for _, n := range actionNames() {
		for _, k := range km.b[byName[n]].Keys() {
			if other, dup := seen[k]; dup {
				return km, fmt.Errorf("config keys: %q is bound to both %s and %s; give one of them another key", k, other, n)
			}
			seen[k] = n
		}
	}
	return km, nil
}

// actionNames is every config name of the key table, sorted.
func actionNames() []string {
	out := make([]string, 0, len(table))
	for _, r := range table {
		out = append(out, r.Name)
	}
	sort.Strings(out)
	return out
}
