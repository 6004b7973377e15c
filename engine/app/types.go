// Package app defines the App: one unit of desired state declared in Git, in
// YAML documents under .kdrift/ at the repository root.
package app

import (
	"fmt"
	"path"
	"strings"
	"time"

	"kdrift.dev/kdrift/engine/render"
)

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

	// Origin is set when the App is another GitOps engine's declaration
	// (an Argo CD Application or a Flux Kustomization) that kdrift
	// discovered; nil for a kdrift App. It is not part of the document.
	Origin *Origin `json:"-"`
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
	// Helm sets how a chart at Path (a folder holding Chart.yaml) is
	// rendered; nil renders it with the chart's own values.
	Helm *Helm `json:"helm,omitempty"`
	// Directory says how a plain folder at Path (no kustomization, no
	// Chart.yaml) is read; nil reads every manifest file of it and its
	// subfolders.
	Directory *Directory `json:"directory,omitempty"`
	// Jsonnet sets the external variables, top-level arguments and
	// library folders the .jsonnet files of a plain folder at Path are
	// evaluated with (Argo CD's source.directory.jsonnet).
	Jsonnet *render.Jsonnet `json:"jsonnet,omitempty"`
	// Chart, when set, is a chart kept outside the repository (in a Helm
	// repository or an OCI registry) that the App renders instead of a
	// folder; Path is then RemoteChartPath's mount, which no repository
	// folder is. Set only for a discovered declaration.
	Chart *RemoteChart `json:"-"`
	// Artifact, when set, is the Flux ExternalArtifact the App reads
	// instead of the repository, rebuilt from it by its generator's copy
	// rules; Path is then inside Artifact.Mount(). Set only for a
	// discovered declaration.
	Artifact *Artifact `json:"-"`
	// Overlay is what the declaring GitOps engine applies over Path
	// beyond its kustomization (Argo CD's source.kustomize, a Flux
	// Kustomization's patches, images, postBuild...); set only for a
	// discovered declaration, never read from an App file.
	Overlay *render.Overlay `json:"-"`
	// Freeze is written only by `kdrift freeze` and removed by `unfreeze`.
	Freeze *Freeze `json:"freeze,omitempty"`
	// Freezes hold single resources, or some fields of them, while the
	// rest of the App keeps healing; written by `kdrift freeze
	// --resource` and removed by `kdrift unfreeze --resource`.
	Freezes []ResourceFreeze `json:"freezes,omitempty"`
	// Health adds the team's own health checks, per kind.
	Health *HealthSpec `json:"health,omitempty"`
	// Delegation says whether fields that scaler and delivery controllers
	// write (HPA, KEDA, VPA, Flagger, Argo Rollouts) are left to them;
	// nil leaves them (the default).
	Delegation *Delegation `json:"delegation,omitempty"`
}

// RemoteChart is a chart a declaration takes from a Helm repository or
// an OCI registry: where it is (the Flux source object that names the
// repository, or the repository URL an Argo CD source gives), which chart
// and which version it asks for. It never says on its own where kdrift
// may fetch from: the engine resolves it against the cluster's own
// sources (ARCHITECTURE.md, "Remote charts in the engine").
type RemoteChart struct {
	// SourceKind is the Flux source that names the repository:
	// HelmRepository, OCIRepository or HelmChart; "" for an Argo CD
	// source.chart.
	SourceKind string `json:"sourceKind,omitempty"`
	// SourceNamespace and SourceName name that source object.
	SourceNamespace string `json:"sourceNamespace,omitempty"`
	SourceName      string `json:"sourceName,omitempty"`
	// RepoURL is the repository as the declaration gives it (Argo CD's
	// repoURL); "" when only the cluster's source object knows it.
	RepoURL string `json:"repoURL,omitempty"`
	// Chart is the chart's name; "" for an OCIRepository, whose artifact
	// is the chart.
	Chart string `json:"chart,omitempty"`
	// Version is the version, or semver range, the declaration asks for
	// ("" for the newest, which only the cluster's source can resolve).
	Version string `json:"version,omitempty"`
	// HelmChart is the HelmChart object Flux's source-controller makes
	// for a HelmRelease's chart.spec (NAMESPACE-NAME of the release, in
	// the source's namespace): its status says which version it resolved.
	HelmChart string `json:"helmChart,omitempty"`
	// Committed is the HelmRepository or OCIRepository SourceKind names
	// as Git declares it; zero when Git does not. It never allows a
	// fetch on its own: the engine reads it only when the cluster has no
	// live source of that name, and fetches from it only where
	// --chart-repo allows.
	Committed CommittedSource `json:"committed,omitzero"`
	// ArgoSource is, for a chart among an Argo CD Application's
	// spec.sources, its index there plus one (Argo CD records what it
	// synced per source, at that index of status.sync.revisions); 0 for
	// spec.source and for Flux.
	ArgoSource int `json:"argoSource,omitempty"`
}

// CommittedSource is a Flux HelmRepository or OCIRepository as a commit
// declares it: what a cluster without Flux (or without that source yet)
// would be told to fetch from.
type CommittedSource struct {
	// URL is spec.url.
	URL string `json:"url,omitempty"`
	// Type is a HelmRepository's spec.type ("oci" or "default").
	Type string `json:"type,omitempty"`
	// Tag, SemVer and Digest are an OCIRepository's spec.ref.
	Tag    string `json:"tag,omitempty"`
	SemVer string `json:"semver,omitempty"`
	Digest string `json:"digest,omitempty"`
	// File is where Git declares it: a file, or "generated by APP
	// (PATH)".
	File string `json:"file,omitempty"`
	// Conflict, when set, says Git declares the source more than once
	// with different specs and no declaration wins.
	Conflict string `json:"conflict,omitempty"`
}

// RemoteChartRoot is the folder under which RemoteChartPath mounts remote
// charts for their render; it is not a folder a repository can name in an
// App (it starts with "@").
const RemoteChartRoot = "@charts"

// RemoteChartPath is the render path of the remote chart of the
// declaration kind NAMESPACE/NAME: a folder of its own under
// RemoteChartRoot.
func RemoteChartPath(kind, namespace, name string) string {
	return path.Join(RemoteChartRoot, strings.ToLower(kind), namespace, name)
}

// Where says where the chart is as a person reads it: "chart podinfo
// 6.x from HelmRepository flux-system/podinfo", "chart web 6.5.4 from
// https://charts.example.com (spec.sources[1])".
func (c *RemoteChart) Where() string {
	what := "chart"
	if c.Chart != "" {
		what += " " + c.Chart
	}
	if c.Version != "" {
		what += " " + c.Version
	}
	if c.SourceKind != "" {
		return fmt.Sprintf("%s from %s %s/%s", what, c.SourceKind, c.SourceNamespace, c.SourceName)
	}
	if c.ArgoSource > 0 {
		return fmt.Sprintf("%s from %s (spec.sources[%d])", what, c.RepoURL, c.ArgoSource-1)
	}
	return what + " from " + c.RepoURL
}

// HealthSpec is the team's health checks.
type HealthSpec struct {
	// Checks are CEL expressions per kind, as Flux's healthCheckExprs:
	// for objects of their kind they decide health before kdrift's own
	// rules and kstatus.
	Checks []HealthCheck `json:"checks,omitempty" yaml:"checks,omitempty"`
}

// HealthCheck judges the objects of one kind with CEL expressions that
// see the object as self and its metadata, spec and status. Failed is
// tried first, then InProgress, then Current; when none holds the object
// is Progressing.
type HealthCheck struct {
	// APIVersion is the kind's group/version; the check applies to every
	// version of the group.
	APIVersion string `json:"apiVersion" yaml:"apiVersion"`
	Kind       string `json:"kind" yaml:"kind"`
	// Current is true when the object is healthy (required).
	Current string `json:"current" yaml:"current"`
	// InProgress is true while it is on its way (optional).
	InProgress string `json:"inProgress,omitempty" yaml:"inProgress,omitempty"`
	// Failed is true when it failed (optional).
	Failed string `json:"failed,omitempty" yaml:"failed,omitempty"`
}

// Delegation turns off leaving scaler and delivery controllers' fields to
// them.
type Delegation struct {
	// Disabled makes kdrift heal those fields like any other (and so,
	// with self-heal on, fight those controllers unless an ignore rule
	// says otherwise).
	Disabled bool `json:"disabled,omitempty"`
}

// Delegates reports whether the App leaves scaler and delivery
// controllers' fields to them (on unless spec.delegation.disabled).
func (s Spec) Delegates() bool { return s.Delegation == nil || !s.Delegation.Disabled }

// Helm says how a chart kept in the repository is rendered. Values are
// merged in this order, later winning: the chart's values.yaml,
// ValueFiles in order, Values, ValuesObject, then Parameters.
type Helm struct {
	// ReleaseName is the release the chart renders as; empty means the
	// App's name.
	ReleaseName string `json:"releaseName,omitempty"`
	// ValueFiles are values files, relative to the chart folder, or to
	// the repository root when they start with "/".
	ValueFiles []string `json:"valueFiles,omitempty"`
	// Values is an inline values document (YAML text).
	Values string `json:"values,omitempty"`
	// ValuesObject is inline values as a structured map.
	ValuesObject map[string]any `json:"valuesObject,omitempty"`
	// Parameters are single values set by dotted key, as `--set` does.
	Parameters []HelmParameter `json:"parameters,omitempty"`
	// SkipCRDs leaves the chart's crds/ folder out (a Flux HelmRelease's
	// install.crds: Skip); set only for a discovered declaration.
	SkipCRDs bool `json:"-"`
	// PostRender are kustomize passes over the chart's output (a Flux
	// HelmRelease's postRenderers); set only for a discovered declaration.
	PostRender []render.PostRender `json:"-"`
	// ValuesFrom are values the release takes from ConfigMaps and Secrets
	// in the cluster (a Flux HelmRelease's valuesFrom), merged in order
	// over ValueFiles and under Values; the engine reads them. Set only
	// for a discovered declaration.
	ValuesFrom []ValuesFrom `json:"-"`
}

// ValuesFrom is one ConfigMap or Secret key a release takes values from.
type ValuesFrom struct {
	// Kind is ConfigMap or Secret; Name is the object's, in the release's
	// namespace.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// ValuesKey is the data key (default values.yaml).
	ValuesKey string `json:"valuesKey,omitempty"`
	// TargetPath, when set, is the dotted path the key's whole value is
	// set at, as a string; otherwise the value is a YAML document merged
	// in.
	TargetPath string `json:"targetPath,omitempty"`
	// Optional: a missing object or key is skipped, not an error.
	Optional bool `json:"optional,omitempty"`
}

// RenderHelm is how the App's chart renders, should Path hold one: the
// release (the App's name unless spec.helm names one), the destination
// namespace and spec.helm's values; and, whatever Path holds, the
// overlay its declaring engine applies (Spec.Overlay) and how a plain
// folder is read (Spec.Directory, Spec.Jsonnet).
func (a App) RenderHelm() *render.Helm {
	h := &render.Helm{ReleaseName: a.Metadata.Name, Namespace: a.Spec.Destination.Namespace}
	if s := a.Spec.Helm; s != nil {
		if s.ReleaseName != "" {
			h.ReleaseName = s.ReleaseName
		}
		h.ValueFiles, h.Values, h.ValuesObject, h.SkipCRDs, h.PostRender = s.ValueFiles, s.Values, s.ValuesObject, s.SkipCRDs, s.PostRender
		for _, p := range s.Parameters {
			h.Parameters = append(h.Parameters, render.HelmParameter{Name: p.Name, Value: p.Value, ForceString: p.ForceString})
		}
	}
	h.Overlay = a.Spec.Overlay
	h.Directory = a.renderDirectory()
	return h
}

// Directory says which files of a plain folder are read, as Argo CD's
// source.directory does.
type Directory struct {
	// Recurse reads the subfolders too; nil (unset) means true for a
	// kdrift App. An Argo CD Application's default is false.
	Recurse *bool `json:"recurse,omitempty"`
	// Include is a glob (*, ?, [...], {a,b}; * crosses "/") a file's path
	// from Path must match to be read.
	Include string `json:"include,omitempty"`
	// Exclude is a glob whose matching files are not read; it wins over
	// Include.
	Exclude string `json:"exclude,omitempty"`
}

// renderDirectory is how the App's plain folder is read: nil when the App
// sets neither spec.directory nor spec.jsonnet.
func (a App) renderDirectory() *render.Directory {
	d, j := a.Spec.Directory, a.Spec.Jsonnet
	if d == nil && j == nil {
		return nil
	}
	out := &render.Directory{Recurse: true, Jsonnet: j}
	if d != nil {
		if d.Recurse != nil {
			out.Recurse = *d.Recurse
		}
		out.Include, out.Exclude = d.Include, d.Exclude
	}
	return out
}

// HelmParameter is one `--set` (or `--set-string` when ForceString) value.
type HelmParameter struct {
	Name        string `json:"name"`
	Value       string `json:"value"`
	ForceString bool   `json:"forceString,omitempty"`
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
	// JQPathExpressions are jq path expressions (as Argo CD writes them,
	// such as .spec.template.spec.containers[] | select(.name == "app") | .image)
	// whose paths in the object are ignored.
	JQPathExpressions []string `json:"jqPathExpressions,omitempty"`
}

// Freeze stops self-heal and prune, with an audited reason.
type Freeze struct {
	Reason string     `json:"reason"`
	By     string     `json:"by"`
	At     time.Time  `json:"at"`
	Until  *time.Time `json:"until,omitempty"`
}

// Same reports whether f and o are the same freeze: same author, start
// and reason (nil only equals nil). An extension of the same freeze
// (another Until) is the same freeze.
func (f *Freeze) Same(o *Freeze) bool {
	if f == nil || o == nil {
		return f == nil && o == nil
	}
	return f.By == o.By && f.At.Equal(o.At) && f.Reason == o.Reason
}

// Describe is one line for a person: by whom, since when, why, until when.
func (f *Freeze) Describe() string {
	if f == nil {
		return "not frozen"
	}
	s := fmt.Sprintf("frozen by %s since %s: %q", f.By, f.At.UTC().Format(time.RFC3339), f.Reason)
	if f.Until != nil {
		s += " (until " + f.Until.UTC().Format(time.RFC3339) + ")"
	}
	return s
}

// FreezeChangedError says an action that carried the freeze a person saw
// (unfreeze, extend, a sync of a frozen app) was refused because the App
// at the head has another freeze, or none: the person decided on a state
// that is gone. Now is the freeze at the head (nil when not frozen).
type FreezeChangedError struct {
	App  string
	Seen *Freeze
	Now  *Freeze
}

// Error names the app and shows the freeze it has now.
func (e *FreezeChangedError) Error() string {
	return fmt.Sprintf("App %s: the freeze changed since you saw it (you saw: %s); it is now %s; look at it again, then retry (nothing was done)", e.App, e.Seen.Describe(), e.Now.Describe())
}

// ActiveAt reports whether the freeze still holds at t: a freeze whose
// Until has passed no longer counts.
func (f *Freeze) ActiveAt(t time.Time) bool {
	if f == nil {
		return false
	}
	return f.Until == nil || t.Before(*f.Until)
}
