package app

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	yaml3 "gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/internal/gitobj"
)

// SettingsKind is the kind of the repository's kdrift settings document.
const SettingsKind = "Settings"

// SettingsFile is where a repository keeps its kdrift settings. It is read
// on the desired branch only (main), so that only a reviewed change can
// move what it names, such as the incident channel.
var SettingsFile = path.Join(Dir, "settings.yaml")

// DefaultChannel is the incident channel when the settings name none: the
// branch freezes go to when the desired branch refuses them.
const DefaultChannel = "kdrift/freezes"

// Settings is the repository's kdrift settings document.
type Settings struct {
	APIVersion string       `yaml:"apiVersion"`
	Kind       string       `yaml:"kind"`
	Spec       SettingsSpec `yaml:"spec"`
}

// SettingsSpec holds the settings.
type SettingsSpec struct {
	// Freezes says where freezes go when the desired branch is protected.
	Freezes FreezeSettings `yaml:"freezes"`
	// Health holds CEL health checks for every App of the repository; an
	// App's own check for a kind takes precedence over the one given here.
	Health *HealthSpec `yaml:"health"`
	// Namespaces are the namespaces kdrift's controller writes in, in the
	// namespaced mode deploy/ defaults to: `kdrift rbac` binds its write
	// role in each. Empty: the Apps' destination namespaces.
	Namespaces []string `yaml:"namespaces"`
}

// MaxSettingsNamespaces bounds spec.namespaces.
const MaxSettingsNamespaces = 1000

// FreezeSettings name the incident channel.
type FreezeSettings struct {
	// Channel is the branch freeze records go to when the desired branch
	// refuses them; DefaultChannel when empty.
	Channel string `yaml:"channel"`
	// Always sends every freeze to the channel without trying the desired
	// branch first.
	Always bool `yaml:"always"`
}

// ChannelBranch is the incident channel's branch name.
func (s Settings) ChannelBranch() string {
	if s.Spec.Freezes.Channel == "" {
		return DefaultChannel
	}
	return s.Spec.Freezes.Channel
}

// ReadSettings reads SettingsFile from the repository tree fsys; a
// repository without one has the default settings.
func ReadSettings(fsys fs.FS) (Settings, error) {
	// Bounded from the object's header before it is read: a 1 GiB blob is
	// refused unread.
	data, err := gitobj.ReadFile(fsys, SettingsFile, render.DefaultMaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return Settings{}, nil
	}
	if tl := (*gitobj.TooLargeError)(nil); errors.As(err, &tl) {
		return Settings{}, &Error{File: SettingsFile, Problem: fmt.Sprintf("is %d bytes, more than the %d a settings file may have", tl.Size, tl.Max), Fix: "keep only the settings in it"}
	}
	if err != nil {
		return Settings{}, &Error{File: SettingsFile, Problem: "cannot read: " + err.Error(), Fix: "check the file in Git"}
	}
	return ParseSettings(SettingsFile, data)
}

// ParseSettings reads a settings document: one document, kind Settings,
// known fields only, a channel that is a valid branch name.
func ParseSettings(file string, data []byte) (Settings, error) {
	var s Settings
	if len(data) > render.DefaultMaxFileBytes {
		return s, &Error{File: file, Problem: fmt.Sprintf("is %d bytes, more than the %d a settings file may have", len(data), render.DefaultMaxFileBytes), Fix: "keep only the settings in it"}
	}
	if err := render.CheckYAML(file, data, render.DefaultOptions()); err != nil {
		return s, &Error{File: file, Problem: strings.TrimPrefix(err.Error(), file+": "), Fix: "write the settings as plain YAML"}
	}
	dec := yaml3.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return Settings{}, &Error{File: file, Problem: "cannot parse: " + err.Error(),
			Fix: "write apiVersion: " + APIVersion + ", kind: " + SettingsKind + " and spec.freezes (channel, always), spec.health.checks and spec.namespaces only"}
	}
	var extra yaml3.Node
	if err := dec.Decode(&extra); err == nil {
		return Settings{}, &Error{File: file, Doc: 2, Problem: "holds more than one document", Fix: "keep one Settings document in " + file}
	}
	if s.APIVersion != APIVersion {
		return Settings{}, &Error{File: file, Field: "apiVersion", Problem: fmt.Sprintf("is %q", s.APIVersion), Fix: "set apiVersion: " + APIVersion}
	}
	if s.Kind != SettingsKind {
		return Settings{}, &Error{File: file, Field: "kind", Problem: fmt.Sprintf("is %q", s.Kind), Fix: "set kind: " + SettingsKind}
	}
	if c := s.Spec.Freezes.Channel; c != "" {
		if err := ValidChannel(c); err != nil {
			return Settings{}, &Error{File: file, Field: "spec.freezes.channel", Problem: err.Error(), Fix: "name a branch such as " + DefaultChannel}
		}
	}
	mk := func(field, problem, fix string) error {
		return &Error{File: file, Field: field, Problem: problem, Fix: fix}
	}
	if err := validNamespaces(s.Spec.Namespaces, mk); err != nil {
		return Settings{}, err
	}
	if errs := validateHealth(s.Spec.Health, "spec.health", mk); len(errs) > 0 {
		return Settings{}, errors.Join(errs...)
	}
	return s, nil
}

// validNamespaces checks spec.namespaces: namespace names, each once,
// within MaxSettingsNamespaces.
func validNamespaces(nss []string, mk func(field, problem, fix string) error) error {
	if len(nss) > MaxSettingsNamespaces {
		return mk("spec.namespaces", fmt.Sprintf("lists %d namespaces, more than %d", len(nss), MaxSettingsNamespaces), "bind kdrift cluster-wide instead (deploy/components/cluster-wide)")
	}
	seen := map[string]bool{}
	for i, ns := range nss {
		field := fmt.Sprintf("spec.namespaces[%d]", i)
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return mk(field, fmt.Sprintf("%q is not a namespace name: %s", ns, strings.Join(errs, "; ")), "list namespace names such as shop-prod")
		}
		if seen[ns] {
			return mk(field, fmt.Sprintf("lists %s twice", ns), "list each namespace once")
		}
		seen[ns] = true
	}
	return nil
}

// WithHealth gives every App of res the repository's health checks for
// the kinds the App does not judge itself. A settings file that could not
// be read (err) makes every App invalid with that error: kdrift cannot
// tell the health rules or the incident channel the repository chose, so
// it neither judges nor heals any App until the file is fixed.
func WithHealth(res LoadResult, s Settings, err error) LoadResult {
	if err != nil {
		out := LoadResult{Invalid: slices.Clone(res.Invalid)}
		for _, a := range res.Apps {
			out.Invalid = append(out.Invalid, Invalid{Name: a.Metadata.Name, File: a.File,
				Err: fmt.Errorf("not compared while %s is invalid (it gives the health rules and the incident channel of every App): %w", SettingsFile, err)})
		}
		sort.SliceStable(out.Invalid, func(i, j int) bool {
			if out.Invalid[i].Name != out.Invalid[j].Name {
				return out.Invalid[i].Name < out.Invalid[j].Name
			}
			return out.Invalid[i].File < out.Invalid[j].File
		})
		return out
	}
	if s.Spec.Health == nil || len(s.Spec.Health.Checks) == 0 {
		return res
	}
	apps := make([]App, len(res.Apps))
	for i, a := range res.Apps {
		apps[i] = a.withChecks(s.Spec.Health.Checks)
	}
	res.Apps = apps
	return res
}

// withChecks is a with the checks of repo added for kinds a has no check
// of its own for. The App's Health is copied, never shared.
func (a App) withChecks(repo []HealthCheck) App {
	own := map[schema.GroupKind]bool{}
	var checks []HealthCheck
	if a.Spec.Health != nil {
		checks = append(checks, a.Spec.Health.Checks...)
		for _, c := range a.Spec.Health.Checks {
			own[checkKind(c)] = true
		}
	}
	for _, c := range repo {
		if !own[checkKind(c)] {
			checks = append(checks, c)
		}
	}
	h := HealthSpec{Checks: checks}
	if a.Spec.Health != nil {
		h = *a.Spec.Health
		h.Checks = checks
	}
	a.Spec.Health = &h
	return a
}

// checkKind is the group and kind a check judges.
func checkKind(c HealthCheck) schema.GroupKind {
	gv, _ := schema.ParseGroupVersion(c.APIVersion)
	return schema.GroupKind{Group: gv.Group, Kind: c.Kind}
}

// ValidChannel checks that name is a branch name Git accepts and that a
// person can read: no "..", no control bytes or spaces, no leading "-" or
// "/", no ".lock" component, at most 200 bytes.
func ValidChannel(name string) error {
	switch {
	case name == "" || len(name) > 200:
		return fmt.Errorf("%q is not a branch name of 1 to 200 bytes", name)
	case strings.HasPrefix(name, "-") || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.HasSuffix(name, "."):
		return fmt.Errorf("%q may not start with - or /, nor end with / or .", name)
	case strings.Contains(name, "..") || strings.Contains(name, "//") || strings.Contains(name, "@{"):
		return fmt.Errorf("%q may not contain .., // or @{", name)
	case strings.HasPrefix(name, "refs/"):
		return fmt.Errorf("%q: give the branch name, not a ref (drop refs/heads/)", name)
	}
	for _, r := range name {
		if r <= ' ' || r == 0x7f || strings.ContainsRune("~^:?*[\\", r) {
			return fmt.Errorf("%q holds %q, which a branch name may not", name, r)
		}
	}
	for _, part := range strings.Split(name, "/") {
		if strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return fmt.Errorf("%q: a component may not start with . or end with .lock", name)
		}
	}
	return nil
}
