// Package app defines the App: one unit of desired state declared in Git, in
// YAML documents under .kdrift/ at the repository root.
package app

import "time"

// APIVersion is the apiVersion every App document carries.
const APIVersion = "kdrift.dev/v1alpha1"

// Kind is the kind every App document carries.
const Kind = "App"

// Dir is the folder, relative to the repository root, that holds App files.
const Dir = ".kdrift"

// App is one unit of desired state: a path in Git and where it goes.
type App struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	Spec       Spec     `json:"spec"`

	// File is the App file's path relative to the repository root; it is
	// not part of the document.
	File string `json:"-"`
}

// Metadata names an App and carries labels that selectors match.
type Metadata struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
}

// Spec is what an App asks for.
type Spec struct {
	// Path is a kustomization folder or a plain YAML folder, relative to
	// the repository root.
	Path              string       `json:"path"`
	Destination       Destination  `json:"destination"`
	SyncPolicy        SyncPolicy   `json:"syncPolicy"`
	IgnoreDifferences []IgnoreRule `json:"ignoreDifferences,omitempty"`
	// Freeze is written only by `kdrift freeze` and removed by `unfreeze`.
	Freeze *Freeze `json:"freeze,omitempty"`
}

// Destination is where an App's objects live.
type Destination struct {
	// Context is a kubeconfig context; empty means the current context.
	Context string `json:"context,omitempty"`
	// Namespace is used for namespaced objects that name none.
	Namespace string `json:"namespace,omitempty"`
}

// SyncPolicy says what kdrift may do on its own.
type SyncPolicy struct {
	// SelfHeal puts drifted fields back automatically.
	SelfHeal bool `json:"selfHeal"`
	// Prune deletes tracked objects that left Git.
	Prune bool `json:"prune"`
	// PruneNamespaces lets prune delete a Namespace (and so everything
	// in it); off by default.
	PruneNamespaces bool `json:"pruneNamespaces,omitempty"`
	// PrunePersistentVolumeClaims lets prune delete a
	// PersistentVolumeClaim (and perhaps its data); off by default.
	PrunePersistentVolumeClaims bool `json:"prunePersistentVolumeClaims,omitempty"`
}

// IgnoreRule names fields Git does not own. An empty Group, Kind, Name or
// Namespace matches any; a rule matches a field when it is under one of
// JSONPointers, or when one of ManagedFieldsManagers owns it.
type IgnoreRule struct {
	Group                 string   `json:"group,omitempty"`
	Kind                  string   `json:"kind,omitempty"`
	Name                  string   `json:"name,omitempty"`
	Namespace             string   `json:"namespace,omitempty"`
	JSONPointers          []string `json:"jsonPointers,omitempty"`
	ManagedFieldsManagers []string `json:"managedFieldsManagers,omitempty"`
}

// Freeze stops self-heal and prune, with an audited reason.
type Freeze struct {
	Reason string     `json:"reason"`
	By     string     `json:"by"`
	At     time.Time  `json:"at"`
	Until  *time.Time `json:"until,omitempty"`
}

// ActiveAt reports whether the freeze still holds at t: a freeze whose
// Until has passed no longer counts.
func (f *Freeze) ActiveAt(t time.Time) bool {
	if f == nil {
		return false
	}
	return f.Until == nil || t.Before(*f.Until)
}
