// Package diff compares what Git wants with what the cluster has, field by
// field, and says who owns each differing field. It is pure: it takes
// objects and returns values; the dry-run and the reads happen in
// engine/live.
package diff

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
)

// Input is everything Compare needs about one object.
type Input struct {
	// Desired is the object as rendered from Git, with kdrift's tracking
	// label and annotation; nil for a tracked live object that is no
	// longer rendered (Extraneous).
	Desired *unstructured.Unstructured
	// DryRun is the object a forced server-side dry-run apply of Desired
	// returned. When nil and DryRunErr is nil, Compare merges Desired over
	// Live on the client instead (an approximation that misses server-side
	// defaulting inside new list elements).
	DryRun *unstructured.Unstructured
	// DryRunErr is the dry-run's failure; an immutable-field rejection
	// gives RequiresReplace, anything else Error.
	DryRunErr error
	// Defaulted is optional: the desired object as the apiserver would
	// create it (live.ClientSet.DryRunCreate). An object written by
	// Update (kubectl create, client-side apply, Helm) leaves its writer
	// owning every field the apiserver defaulted; with Defaulted, an extra
	// field whose live value is exactly the default is not reported
	// (apiserverSet). Ask for it only when
	// NeedsDefaults says a first Compare found extras.
	Defaulted *unstructured.Unstructured
	// Live is the object in the cluster; nil means Missing.
	Live *unstructured.Unstructured
	// Ignore are the app's ignoreDifferences rules; Compare picks those
	// that match the object.
	Ignore []app.IgnoreRule
	// Options tune normalization and owner classes.
	Options Options
	// Health are the App's CEL health checks; nil for none.
	Health *HealthChecks
	// Delegations are the fields scaler and delivery controllers keep
	// (see FindDelegations); nil for none.
	Delegations *Delegations
}

// Options tune Compare and Detail. The zero value is not useful; start
// from DefaultOptions.
type Options struct {
	// KdriftManagers are kdrift's own field managers.
	// Default: kdrift, kdrift-handover.
	KdriftManagers []string
	// PersonPrefixes mark managers that are people at a keyboard when the
	// manager name starts with one of them. Default: kubectl (kubectl,
	// kubectl-edit, kubectl-patch, kubectl-scale, kubectl-client-side-apply,
	// kubectl-label, ...).
	PersonPrefixes []string
	// PersonManagers are further exact manager names counted as people,
	// such as values people pass to --field-manager (k9s, Lens, ...).
	PersonManagers []string
	// GitOpsManagers are other GitOps engines' field managers: what they
	// own is never drift. Default: the registered tools' field managers
	// (app.GitOpsManagers: argocd-controller,
	// argocd-application-controller, kustomize-controller,
	// helm-controller (Flux's HelmRelease), helm).
	GitOpsManagers []string
	// IgnoredAnnotations are annotations the apiserver or tools add that
	// are bookkeeping, never drift; they are removed from metadata and
	// from pod template metadata before comparing. Default:
	// deployment.kubernetes.io/revision,
	// kubectl.kubernetes.io/last-applied-configuration,
	// kubectl.kubernetes.io/restartedAt (a rollout restart, which healing
	// would only turn into a second restart), and the registered tools'
	// tracking annotations (app.TrackingAnnotations: Argo CD's
	// argocd.argoproj.io/tracking-id).
	IgnoredAnnotations []string
	// IgnoredLabels are labels other tools add for their own tracking;
	// they are removed like IgnoredAnnotations. Default: kdrift's own
	// kdrift.dev/app and the registered tools' tracking labels
	// (app.TrackingLabels: Flux's kustomize.toolkit.fluxcd.io/name and
	// /namespace, and helm.toolkit.fluxcd.io/name and /namespace).
	IgnoredLabels []string
	// IgnoredMetadata are metadata fields that are bookkeeping. Default:
	// resourceVersion, generation, uid, creationTimestamp, managedFields,
	// selfLink, deletionTimestamp, deletionGracePeriodSeconds.
	IgnoredMetadata []string
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{
		KdriftManagers: app.KdriftManagers(),
		PersonPrefixes: []string{"kubectl"},
		GitOpsManagers: app.GitOpsManagers(),
		IgnoredAnnotations: append([]string{
			"deployment.kubernetes.io/revision",
			"kubectl.kubernetes.io/last-applied-configuration",
			"kubectl.kubernetes.io/restartedAt",
		}, app.TrackingAnnotations()...),
		// kdrift's own App label (apply.LabelApp): it narrows the lists
		// of a one-shot command, the annotation says whose an object is.
		// Objects kdrift applied before it wrote the label are not drift
		// for lacking it; they get it on their next apply.
		IgnoredLabels: append([]string{"kdrift.dev/app"}, app.TrackingLabels()...),
		IgnoredMetadata: []string{
			"resourceVersion", "generation", "uid", "creationTimestamp",
			"managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds",
		},
	}
}

// Classify returns the class of a field manager.
func (o Options) Classify(manager string) status.OwnerClass {
	for _, m := range o.KdriftManagers {
		if manager == m {
			return status.OwnerKdrift
		}
	}
	for _, m := range o.PersonManagers {
		if manager == m {
			return status.OwnerPerson
		}
	}
	for _, m := range o.GitOpsManagers {
		if manager == m {
			return status.OwnerGitOps
		}
	}
	for _, p := range o.PersonPrefixes {
		if strings.HasPrefix(manager, p) {
			return status.OwnerPerson
		}
	}
	return status.OwnerController
}

// TopClass is the class that matters most among owners: person before
// controller before another GitOps engine before kdrift; defaulted when
// there are none.
func TopClass(owners []status.Owner) status.OwnerClass {
	best := status.OwnerDefaulted
	for _, o := range owners {
		if o.Class.Rank() < best.Rank() {
			best = o.Class
		}
	}
	return best
}
