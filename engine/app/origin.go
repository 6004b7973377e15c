package app

import "fmt"

// Engine names a GitOps engine whose declarations kdrift reads; each
// tool's file (tool_*.go) defines its own.
type Engine string

// Annotations kdrift writes into an Application or a Kustomization when it
// freezes it: the freeze itself, and what the healing field was before, so
// that unfreeze puts it back.
const (
	AnnotationFreezeReason = "kdrift.dev/freeze-reason"
	AnnotationFreezeBy     = "kdrift.dev/freeze-by"
	AnnotationFreezeAt     = "kdrift.dev/freeze-at"
	AnnotationFreezeUntil  = "kdrift.dev/freeze-until"
	// AnnotationFreezePrevious is the healing field's value before the
	// freeze: "true", "false", FreezePreviousAbsent or FreezePreviousNone.
	AnnotationFreezePrevious = "kdrift.dev/freeze-previous"
	// AnnotationFreezeChannel names the incident channel whose record a
	// freeze written on a live declaration carries (engine/ownerpause).
	AnnotationFreezeChannel = "kdrift.dev/freeze-channel"
)

// FreezeAnnotationPrefix starts every annotation of a freeze kdrift writes
// into a declaration another GitOps tool owns.
const FreezeAnnotationPrefix = "kdrift.dev/freeze-"

// Values of AnnotationFreezePrevious besides "true" and "false".
const (
	// FreezePreviousNone says the declaration had no block holding the
	// healing field (an Application without automated sync): the tool
	// was not healing, and the freeze leaves the block alone (writing one
	// would turn automated sync on).
	FreezePreviousNone = "none"
	// FreezePreviousAbsent says the healing field was not written.
	FreezePreviousAbsent = "absent"
)

// Origin says which GitOps engine declares an App, and where: the engine
// heals it, kdrift only compares it, and kdrift's actions write into the
// declaration itself.
type Origin struct {
	// Engine is the GitOps engine that owns the App.
	Engine Engine
	// Kind is the declaration's kind: Application or Kustomization.
	Kind string
	// Namespace and Name are the declaration's metadata.
	Namespace, Name string
	// File is the repository file holding the declaration literally, with
	// Doc its 1-based document number; empty when another App's render
	// generates it (see GeneratedBy).
	File string
	Doc  int
	// GeneratedBy is the App whose render yields this declaration (the
	// app-of-apps pattern); empty for a literal document.
	GeneratedBy string
	// GeneratedFrom is GeneratedBy's path in the repository.
	GeneratedFrom string
	// GeneratorKind is "ApplicationSet" when an Argo CD ApplicationSet
	// generates the declaration (GeneratedBy is then its NAMESPACE/NAME
	// and GeneratedFrom where it is); "" when an App's render does.
	GeneratorKind string
	// Live says the declaration was read from the cluster, not from Git
	// (an Application created with `argocd app create`); LiveContext is
	// the kubeconfig context of that cluster ("" the current one).
	Live        bool
	LiveContext string
	// Heals says whether the engine puts drift back on its own (Argo CD
	// automated sync with selfHeal, Flux not suspended).
	Heals bool
	// SkipReconcile is Argo CD's argocd.argoproj.io/skip-reconcile.
	SkipReconcile bool
	// SuspendReason is Flux's suspend.toolkit.fluxcd.io/reason.
	SuspendReason string
	// Suspended is a Flux HelmRelease's spec.suspend: for a HelmRelease,
	// Heals is also false when drift detection is off, which is no
	// suspension.
	Suspended bool
	// Decryption is a Flux Kustomization's spec.decryption; nil when none.
	Decryption *Decryption
	// Follows is the revision the declaration tells its engine to apply
	// (an Application's targetRevision: a branch, a tag, a commit, HEAD);
	// "" when it names none.
	Follows string
}

// Decryption is how a Flux Kustomization decrypts SOPS files.
type Decryption struct {
	// Provider is "sops", the only one Flux has.
	Provider string
	// SecretRef is the Secret holding the keys, as NAMESPACE/NAME; empty
	// when the Kustomization names none.
	SecretRef string
}

// Owner is the declaration as a person names it: "Argo CD Application
// argocd/guestbook".
func (o *Origin) Owner() string {
	if o == nil {
		return ""
	}
	return fmt.Sprintf("%s %s %s/%s", o.Engine, o.Kind, o.Namespace, o.Name)
}

// Paused says why the owner does not heal on its own by its declaration
// alone (Tool.Paused of its tool): "suspended in Git" for a suspended Flux
// Kustomization (with the reason `flux suspend --reason` wrote),
// "skip-reconcile in Git" for an Argo CD Application so annotated; ""
// when it heals, or is merely not set to self-heal. A kdrift freeze also
// suspends: the caller tells the two apart by the freeze annotations.
func (o *Origin) Paused() string {
	if o == nil {
		return ""
	}
	return ToolOf(o).Paused(o)
}

// Where says where the declaration is: its file and document, or the App
// whose render generates it.
func (o *Origin) Where() string {
	if o == nil {
		return ""
	}
	if o.File != "" {
		return o.File
	}
	if o.Live {
		return "live in the cluster of " + contextName(o.LiveContext) + " (not in Git)"
	}
	if o.GeneratorKind != "" {
		return fmt.Sprintf("generated by %s %s (%s)", o.GeneratorKind, o.GeneratedBy, o.GeneratedFrom)
	}
	return fmt.Sprintf("generated by App %s (%s)", o.GeneratedBy, o.GeneratedFrom)
}

// QualifiedName is NAMESPACE/NAME, the name that tells two declarations
// with one metadata.name apart.
func (o *Origin) QualifiedName() string {
	if o == nil {
		return ""
	}
	return o.Namespace + "/" + o.Name
}
