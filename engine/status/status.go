// Package status holds the values the engine reports: statuses of apps and
// resources, changed fields with their owners, and the events the engine
// publishes. It is data only, shared by the engine, the CLI and the UI.
package status

import (
	"fmt"
	"strings"
	"time"

	"kdrift.dev/kdrift/engine/app"
)

// Sync is an app's sync status.
type Sync string

// Sync values.
const (
	SyncSynced    Sync = "Synced"
	SyncOutOfSync Sync = "OutOfSync"
	SyncUnknown   Sync = "Unknown"
	SyncError     Sync = "Error"
)

// Health is kstatus-style readiness of an app or a resource.
type Health string

// Health values.
const (
	HealthHealthy     Health = "Healthy"
	HealthProgressing Health = "Progressing"
	HealthDegraded    Health = "Degraded"
	HealthMissing     Health = "Missing"
	HealthUnknown     Health = "Unknown"
)

// HealthDetail says which health rule judged an object and why: the
// answer to "why is this Degraded?".
type HealthDetail struct {
	Status Health `json:"status"`
	// Rule is the rule that decided: a kind ("Rollout", "Certificate"),
	// "kstatus" for the generic rules, "cel" for an expression the team
	// wrote, "none" when nothing understood the object (Unknown).
	Rule string `json:"rule"`
	// Message is the rule's reason, in the controller's words where it
	// gave some ("paused at step 3/8: CanaryPauseStep").
	Message string `json:"message,omitempty"`
	// Object is the resource whose health decided an app's health; set
	// on AppStatus only.
	Object *ObjectRef `json:"object,omitempty"`
}

// Delegation says that a field belongs to a scaler or delivery
// controller (an HPA, KEDA, a VPA, Flagger, Argo Rollouts): kdrift shows
// it with its owner and never heals it.
type Delegation struct {
	// Controller is the object that claims the field, as Kind/namespace/name
	// ("HorizontalPodAutoscaler/prod/web", "Canary/prod/web").
	Controller ObjectRef `json:"controller"`
	// Manager is the field manager that wrote the field.
	Manager string `json:"manager"`
}

// Canary is a progressive delivery in flight (Argo Rollouts, Flagger),
// as its controller reports it.
type Canary struct {
	// Ref is the Rollout or Canary.
	Ref ObjectRef `json:"ref"`
	// Controller is "Argo Rollouts" or "Flagger".
	Controller string `json:"controller"`
	// Phase is the controller's phase ("Progressing", "Paused").
	Phase string `json:"phase"`
	// Step and Steps are the current step, 1-based, of Steps (Argo
	// Rollouts); 0 when the controller counts none.
	Step  int `json:"step,omitempty"`
	Steps int `json:"steps,omitempty"`
	// Weight is the share of traffic, in percent, the new version gets.
	Weight int `json:"weight"`
	// Analysis is the analysis under way or its outcome ("analysis
	// web-3 Running", "2 failed checks of 5").
	Analysis string `json:"analysis,omitempty"`
	// Message is what the controller says about it.
	Message string `json:"message,omitempty"`
}

// Resource is one object's comparison result.
type Resource string

// Resource values.
const (
	ResourceSynced          Resource = "Synced"
	ResourceOutOfSync       Resource = "OutOfSync"
	ResourceMissing         Resource = "Missing"
	ResourceExtraneous      Resource = "Extraneous"
	ResourceIgnored         Resource = "Ignored"
	ResourceError           Resource = "Error"
	ResourceRequiresReplace Resource = "RequiresReplace"
	// ResourceEncrypted is an object rendered from a SOPS file no
	// identity here decrypts: only its key names, metadata and type are
	// compared, and it is never applied, healed or pruned.
	ResourceEncrypted Resource = "Encrypted"
	// ResourceGenerated is an object another controller made from an
	// object of the app (its controller ownerReference points there, as
	// a Sealed Secrets or External Secrets controller does for its
	// Secret): shown under its parent, never drift, never pruned.
	ResourceGenerated Resource = "Generated"
)

// Summary is "step 3/8, weight 20%, analysis web-3 Running".
func (c Canary) Summary() string {
	var parts []string
	if c.Steps > 0 {
		parts = append(parts, fmt.Sprintf("step %d/%d", c.Step, c.Steps))
	}
	parts = append(parts, fmt.Sprintf("weight %d%%", c.Weight))
	if c.Analysis != "" {
		parts = append(parts, c.Analysis)
	}
	return strings.Join(parts, ", ")
}

// SelfHeal is an app's self-heal state.
type SelfHeal string

// SelfHeal values.
const (
	SelfHealOn     SelfHeal = "on"
	SelfHealOff    SelfHeal = "off"
	SelfHealFrozen SelfHeal = "frozen"
)

// OwnerClass says what kind of writer owns a field.
type OwnerClass string

// OwnerClass values.
const (
	// OwnerPerson is kubectl edit/scale/patch/apply or client-side apply.
	OwnerPerson OwnerClass = "person"
	// OwnerController is an HPA, a cloud controller, an operator.
	OwnerController OwnerClass = "controller"
	// OwnerDefaulted is a field nobody owns: the apiserver defaulted it.
	OwnerDefaulted OwnerClass = "defaulted"
	// OwnerKdrift is kdrift itself.
	OwnerKdrift OwnerClass = "kdrift"
	// OwnerGitOps is another GitOps engine (Argo CD, Flux, Helm). It
	// says who wrote a field, never whether the field is in sync: what it
	// wrote at another revision, or rendered otherwise, differs like any
	// other field (FieldChange.Difference says which kind).
	OwnerGitOps OwnerClass = "gitops"
)

// ownerClasses is every OwnerClass, the one that matters most first: a new
// class goes here, at its rank (a test fails while it is missing here or
// from the UI's styles).
var ownerClasses = []OwnerClass{OwnerPerson, OwnerController, OwnerGitOps, OwnerKdrift, OwnerDefaulted}

// OwnerClasses is every owner class, the one that matters most first.
func OwnerClasses() []OwnerClass { return append([]OwnerClass(nil), ownerClasses...) }

// Rank orders classes by how much they matter: 0 (a person) first, then
// controllers, kdrift, and defaulted fields; a class this build does not
// know ranks after all of them.
func (c OwnerClass) Rank() int {
	for i, k := range ownerClasses {
		if k == c {
			return i
		}
	}
	return len(ownerClasses)
}

// ObjectRef names one Kubernetes object.
type ObjectRef struct {
	Group     string `json:"group"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String renders the reference as Kind/namespace/name (Kind/name when
// cluster-scoped), the form errors start with.
func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "/" + r.Namespace + "/" + r.Name
}

// Owner is one live owner of a field, from metadata.managedFields.
type Owner struct {
	Manager     string     `json:"manager"`
	Operation   string     `json:"operation"`
	Subresource string     `json:"subresource,omitempty"`
	Time        *time.Time `json:"time,omitempty"`
	Class       OwnerClass `json:"class"`
}

// FieldChange is one field where Git and the cluster disagree.
type FieldChange struct {
	// Path is the field as a JSON pointer, e.g. /spec/replicas.
	Path string `json:"path"`
	// Desired is the value Git asks for, absent when Git does not set it.
	Desired any `json:"desired,omitempty"`
	// Live is the value in the cluster, absent when the field is not there.
	Live any `json:"live,omitempty"`
	// Owners are the field's live owners; empty means defaulted.
	Owners []Owner `json:"owners"`
	// Class is the class of the owner that matters most: person before
	// controller before kdrift; defaulted when nobody owns the field.
	Class OwnerClass `json:"class"`
	// Extra is set for a field that exists live but that Git does not
	// declare (a key added by hand).
	Extra bool `json:"extra,omitempty"`
	// Ignored is set when an ignoreDifferences rule covers the field.
	Ignored bool `json:"ignored,omitempty"`
	// Masked is set when the values are Secret data and were not shown.
	Masked bool `json:"masked,omitempty"`
	// Frozen is the field freeze (spec.freezes) that holds this field:
	// self-heal leaves it as it is live. Nil when not frozen.
	Frozen *app.Freeze `json:"frozen,omitempty"`
	// Delegated is set when a scaler or delivery controller owns the
	// field: never drift, never healed, never a fight.
	Delegated *Delegation `json:"delegated,omitempty"`
	// Difference says, for a drifted field of an app another GitOps
	// engine owns, whether a person or controller changed it (drift), the
	// owner has not applied the desired revision yet (waiting), or the
	// owner applied it and rendered otherwise (render); empty for a
	// kdrift App's field, which is drift.
	Difference Difference `json:"difference,omitempty"`
}

// ResourceStatus is the comparison of one object.
type ResourceStatus struct {
	Ref    ObjectRef `json:"ref"`
	Status Resource  `json:"status"`
	Health Health    `json:"health"`
	// HealthDetail is the rule that judged Health and its message.
	HealthDetail *HealthDetail `json:"healthDetail,omitempty"`
	Fields       []FieldChange `json:"fields,omitempty"`
	// Message explains Error and RequiresReplace, in the apiserver's words,
	// and Encrypted: the file, its recipients, where kdrift looked for keys.
	Message string `json:"message,omitempty"`
	// Parent is the object of the app a Generated object belongs to.
	Parent *ObjectRef `json:"parent,omitempty"`
	// Frozen is the resource freeze (spec.freezes with no fields) that
	// holds the whole object: neither healed nor pruned. Nil when not.
	Frozen *app.Freeze `json:"frozen,omitempty"`
	// Decided says which tier of the comparison judged a desired object:
	// empty for an object that was not compared (Extraneous, Generated,
	// an unreadable or unserved one).
	Decided Decided `json:"decided,omitempty"`
	// Difference says, for a Missing or Extraneous object of an app
	// another GitOps engine owns, whether its owner has not applied the
	// desired revision yet (waiting) or applied it and rendered otherwise
	// (render); empty otherwise.
	Difference Difference `json:"difference,omitempty"`
}

// Decided names the tier of the comparison that judged an object.
type Decided string

// Decided values.
const (
	// DecidedLocal: judged from the live object and its managedFields,
	// with no request (an apply would change nothing).
	DecidedLocal Decided = "local"
	// DecidedDryRun: judged by a server-side dry-run apply.
	DecidedDryRun Decided = "dry-run"
)

// FrozenDrift counts the drifted fields a freeze holds (all of them when
// the whole resource is frozen).
func (r ResourceStatus) FrozenDrift() int {
	n := 0
	for _, f := range r.Fields {
		if f.IsDrift() && (r.Frozen != nil || f.Frozen != nil) {
			n++
		}
	}
	return n
}

// Drifted counts the fields that are drift (see FieldChange.IsDrift).
func (r ResourceStatus) Drifted() int {
	n := 0
	for _, f := range r.Fields {
		if f.IsDrift() {
			n++
		}
	}
	return n
}

// AppStatus is everything the engine knows about one app.
type AppStatus struct {
	Name        string          `json:"name"`
	File        string          `json:"file"`
	Path        string          `json:"path"`
	Destination app.Destination `json:"destination"`
	Sync        Sync            `json:"sync"`
	Health      Health          `json:"health"`
	// HealthDetail is the rule and message of the resource that decided
	// Health (the worst one).
	HealthDetail *HealthDetail `json:"healthDetail,omitempty"`
	// Canaries are the progressive deliveries in flight among the app's
	// objects.
	Canaries []Canary    `json:"canaries,omitempty"`
	SelfHeal SelfHeal    `json:"selfHeal"`
	Prune    bool        `json:"prune"`
	Freeze   *app.Freeze `json:"freeze,omitempty"`
	// Freezes are the App's resource and field freezes in force
	// (spec.freezes whose end has not passed).
	Freezes []app.ResourceFreeze `json:"freezes,omitempty"`
	// OutOfSyncSince is when the app last went OutOfSync; nil when Synced.
	OutOfSyncSince *time.Time `json:"outOfSyncSince,omitempty"`
	// Revision is the Git commit compared, with its author.
	Revision       string           `json:"revision"`
	RevisionAuthor string           `json:"revisionAuthor,omitempty"`
	Resources      []ResourceStatus `json:"resources"`
	// Error is the reason for Sync Error or Unknown: a render failure, an
	// invalid App, an unreachable cluster.
	Error string `json:"error,omitempty"`
	// Cause is Error with its type, for callers in this process that
	// branch on it (errors.As); nil after JSON, which carries Error.
	Cause error `json:"-"`
	// Fights are the fields where another manager kept rewriting what
	// kdrift healed; kdrift stopped healing them.
	Fights []Fight `json:"fights,omitempty"`
	// NoObjects says the app's render gave no object at all: Synced then
	// means "empty on purpose", and views say so. (A render that gave
	// nothing while skipping files is an Error instead.)
	NoObjects  bool      `json:"noObjects,omitempty"`
	ComparedAt time.Time `json:"comparedAt"`
	// RevisionRef is the ref Revision was read from: the branch's
	// upstream as last fetched ("origin/main"), or the local branch
	// ("main") when NoUpstream.
	RevisionRef string `json:"revisionRef,omitempty"`
	// NoUpstream says the branch has no upstream: the local branch is the
	// truth, shared with nobody.
	NoUpstream bool `json:"noUpstream,omitempty"`
	// LocalFreeze says Freeze comes from a local commit not pushed yet:
	// it stops healing at once, while the rest of that commit is not
	// applied until the upstream has it.
	LocalFreeze bool `json:"localFreeze,omitempty"`
	// FreezeChannel names the incident channel (kdrift/freezes) when the
	// app's freeze, or one of its resource or field freezes, comes from
	// there rather than from the desired branch.
	FreezeChannel string `json:"freezeChannel,omitempty"`
	// Owner is the GitOps engine's declaration that owns the app ("Argo
	// CD Application argocd/guestbook"); empty for a kdrift App. kdrift
	// never heals or prunes an owned app: SelfHeal and Prune are the
	// owner's settings, shown.
	Owner string `json:"owner,omitempty"`
	// OwnerFile is where the owner's declaration is: its file, or the
	// app whose render generates it.
	OwnerFile string `json:"ownerFile,omitempty"`
	// OwnerEngine is the owner's GitOps engine ("Argo CD", "Flux");
	// empty for a kdrift App.
	OwnerEngine string `json:"ownerEngine,omitempty"`
	// OwnerPaused says why the owner does not heal although kdrift did not
	// freeze the app: "suspended in Git" (Flux spec.suspend without
	// kdrift's freeze annotations, with the reason `flux suspend
	// --reason` wrote), "skip-reconcile in Git" (Argo CD); empty otherwise.
	OwnerPaused string `json:"ownerPaused,omitempty"`
	// OwnerResumed says the owner heals the app again although a freeze
	// on the incident channel holds ("the parent … re-enabled healing at
	// 14:02 …"), or that its live declaration was never paused; empty
	// otherwise (engine/ownerpause.Resumed).
	OwnerResumed string `json:"ownerResumed,omitempty"`
	// OwnerApplied says which revision the owner's controller last
	// applied, read from its live declaration, against the revision
	// kdrift compares ("Flux applied main@sha1:3f2a…; kdrift compares
	// 9c41e7d …"); empty when the cluster does not say.
	OwnerApplied string `json:"ownerApplied,omitempty"`
	// OwnerRevision is OwnerApplied as values: what the owner applied,
	// when, against which desired revision; nil when the cluster does not
	// say.
	OwnerRevision *OwnerRevision `json:"ownerRevision,omitempty"`
	// Difference is the kind of difference that makes the app OutOfSync
	// (AppDifference): drift, waiting for the owner, or a render
	// disagreement with it; empty when the app does not differ.
	Difference Difference `json:"difference,omitempty"`
	// Chart says which remote chart the app rendered, at which version
	// and digest, and what allowed and resolved it ("chart podinfo 6.7.1
	// (sha256:…) from HelmRepository flux-system/podinfo on context
	// "prod" (version resolved by HelmChart …)"); empty for an app whose
	// render reads the repository only.
	Chart string `json:"chart,omitempty"`
}

// DriftedObjects counts the resources that are not Synced or Ignored
// (nor Encrypted or Generated, whose drift kdrift cannot or must not judge).
func (a AppStatus) DriftedObjects() int {
	n := 0
	for _, r := range a.Resources {
		if !r.Status.Neutral() {
			n++
		}
	}
	return n
}

// DriftedFields counts the app's drifted fields: the sum of its
// resources' Drifted, the one number every view and metric shows.
func (a AppStatus) DriftedFields() int {
	n := 0
	for _, r := range a.Resources {
		n += r.Drifted()
	}
	return n
}

// Objects counts the objects Git gave the app (its render's), those
// only in the cluster (Extraneous) and those other controllers made
// (Generated) aside: 0 for an app that is empty on purpose. A render that
// read nothing while skipping files is an Error, never Synced on 0.
func (a AppStatus) Objects() int {
	n := 0
	for _, r := range a.Resources {
		if r.Status != ResourceExtraneous && r.Status != ResourceGenerated {
			n++
		}
	}
	return n
}

// EncryptedObjects counts the resources kdrift could not decrypt.
func (a AppStatus) EncryptedObjects() int {
	n := 0
	for _, r := range a.Resources {
		if r.Status == ResourceEncrypted {
			n++
		}
	}
	return n
}

// Neutral reports whether a resource in this state leaves its app Synced:
// Synced, Ignored, Encrypted (drift unknown, never healed) and Generated
// (not Git's to judge).
func (r Resource) Neutral() bool {
	switch r {
	case ResourceSynced, ResourceIgnored, ResourceEncrypted, ResourceGenerated:
		return true
	}
	return false
}

// IsDrift reports whether the field differs from the desired revision:
// not ignored nor delegated, and either a declared field that differs,
// whoever wrote it, or an extra field a person owns. Extra fields a
// controller or another GitOps engine owns are shown, not drift: an
// engine adds its own bookkeeping (Argo CD's app.kubernetes.io/instance,
// Flux's commonMetadata) and, by Update, the apiserver's defaults.
func (f FieldChange) IsDrift() bool {
	return !f.Ignored && f.Delegated == nil && (!f.Extra || f.Class == OwnerPerson)
}
