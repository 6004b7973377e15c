package apply

import (
	"context"
	"errors"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
)

// refKey names an object independent of its version.
func refKey(r status.ObjectRef) string {
	return r.Group + "/" + r.Kind + "/" + r.Namespace + "/" + r.Name
}

// Extraneous picks, from live objects, those tracked as appName's that
// Git no longer renders: the prune candidates. An object another
// repository tracks (its AnnotationRepo names another identity) is never
// one; an object tracked before kdrift recorded repositories (no
// AnnotationRepo) is, but Prune refuses it until it carries repo. A hook
// (app.IsHook) is never one. Pure.
func Extraneous(appName, repo string, live []*unstructured.Unstructured, desired []status.ObjectRef) []*unstructured.Unstructured {
	want := map[string]bool{}
	for _, d := range desired {
		want[refKey(d)] = true
	}
	var out []*unstructured.Unstructured
	for _, o := range live {
		if !TrackedAsApp(o, appName) || TrackedElsewhere(o, repo) || o.GetDeletionTimestamp() != nil || app.IsHook(o) {
			continue
		}
		if !want[refKey(RefOf(o))] {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return RefOf(out[i]).String() < RefOf(out[j]).String() })
	return out
}

// MaxPruneShare is the share of an app's objects one prune may delete
// without a person confirming: a prune that deletes every object the app
// tracks, or more than one object and more than this share of them, is
// refused (an overlay emptied by a commit, a render that suddenly yields
// nothing).
const MaxPruneShare = 0.5

// PruneNeedsConfirm reports whether deleting count of an app's total
// tracked objects (those Git renders plus the prune candidates) needs a
// person's confirmation (see MaxPruneShare). Pure.
func PruneNeedsConfirm(count, total int) bool {
	if count <= 0 {
		return false
	}
	return count >= total || (count > 1 && float64(count) > MaxPruneShare*float64(total))
}

// OptInField names the App field that must be true before kdrift prunes
// an object of ref's kind, or "" when none is needed: deleting a Namespace
// deletes everything in it, deleting a PersistentVolumeClaim may delete
// its data.
func OptInField(ref status.ObjectRef, policy app.SyncPolicy) (field string, allowed bool) {
	switch {
	case ref.Group == "" && ref.Kind == "Namespace":
		return "spec.syncPolicy.pruneNamespaces", policy.PruneNamespaces
	case ref.Group == "" && ref.Kind == "PersistentVolumeClaim":
		return "spec.syncPolicy.prunePersistentVolumeClaims", policy.PrunePersistentVolumeClaims
	}
	return "", true
}

// ChangedError says an object changed (or was replaced) between the read
// that made it a prune candidate and the delete: the delete's UID and
// resourceVersion preconditions failed and nothing was deleted. The next
// pass decides again from what is live then.
type ChangedError struct {
	Ref status.ObjectRef
	Err error
}

// Error names the object, says nothing was deleted and why.
func (e *ChangedError) Error() string {
	return fmt.Sprintf("%s prune skipped: the object changed since kdrift read it (%v); nothing was deleted, the next pass looks again", e.Ref, e.Err)
}

// Prune deletes live, a tracked object of appName in repository repo that
// left Git, with foreground propagation and UID and resourceVersion
// preconditions: an object re-created or changed since it was read is not
// deleted (a *ChangedError). It refuses an object that is not tracked as
// appName's of repo, including one tracked before kdrift recorded
// repositories. An object already gone is not an error.
func (a *Applier) Prune(ctx context.Context, appName, repo string, live *unstructured.Unstructured, dryRun bool) error {
	ref := RefOf(live)
	if !TrackedAsApp(live, appName) {
		return &ObjectError{Ref: ref, Op: "prune", Err: fmt.Errorf("not tracked as app %q's (needs label %s=%s and annotation %s=%s); kdrift only deletes what it applied", appName, LabelManagedBy, LabelManagedByValue, AnnotationApp, appName)}
	}
	if got := RepoOf(live); got != repo || repo == "" {
		if got == "" {
			return &ObjectError{Ref: ref, Op: "prune", Err: fmt.Errorf("tracked before kdrift recorded repositories (no annotation %s), so kdrift cannot tell it is this repository's; not deleted: delete it by hand, or `kubectl annotate` it %s=%s to let kdrift prune it", AnnotationRepo, AnnotationRepo, repo)}
		}
		return &ObjectError{Ref: ref, Op: "prune", Err: fmt.Errorf("tracked by repository %s, not %s; kdrift never deletes another repository's objects", got, repo)}
	}
	fg := metav1.DeletePropagationForeground
	uid, rv := live.GetUID(), live.GetResourceVersion()
	opts := metav1.DeleteOptions{PropagationPolicy: &fg}
	if uid != "" || rv != "" {
		opts.Preconditions = &metav1.Preconditions{}
		if uid != "" {
			opts.Preconditions.UID = &uid
		}
		if rv != "" {
			opts.Preconditions.ResourceVersion = &rv
		}
	}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	err := a.retry(ctx, ref, "prune", func() error {
		ri, err := a.resource(live.GroupVersionKind(), live.GetNamespace())
		if err != nil {
			return err
		}
		err = ri.Delete(ctx, live.GetName(), opts)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case apierrors.IsConflict(err):
			// A failed precondition: retrying the same one cannot pass.
			return &ChangedError{Ref: ref, Err: err}
		}
		return err
	})
	var ce *ChangedError
	if errors.As(err, &ce) {
		return ce
	}
	return err
}
