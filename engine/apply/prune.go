package apply

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/status"
)

// refKey names an object independent of its version.
func refKey(r status.ObjectRef) string {
	return r.Group + "/" + r.Kind + "/" + r.Namespace + "/" + r.Name
}

// Extraneous picks, from live objects, those tracked as appName's (label
// and annotation) that Git no longer renders: the prune candidates. Pure.
func Extraneous(appName string, live []*unstructured.Unstructured, desired []status.ObjectRef) []*unstructured.Unstructured {
	want := map[string]bool{}
	for _, d := range desired {
		want[refKey(d)] = true
	}
	var out []*unstructured.Unstructured
	for _, o := range live {
		if !IsTracked(o, appName) || o.GetDeletionTimestamp() != nil {
			continue
		}
		if !want[refKey(RefOf(o))] {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return RefOf(out[i]).String() < RefOf(out[j]).String() })
	return out
}

// Prune deletes live, a tracked object of appName that left Git, with
// foreground propagation and a UID precondition (never a re-created
// namesake). It refuses an object that is not tracked as appName's. An
// object already gone is not an error.
func (a *Applier) Prune(ctx context.Context, appName string, live *unstructured.Unstructured, dryRun bool) error {
	ref := RefOf(live)
	if !IsTracked(live, appName) {
		return &ObjectError{Ref: ref, Op: "prune", Err: fmt.Errorf("not tracked as app %q's (needs label %s=%s and annotation %s=%s); kdrift only deletes what it applied", appName, LabelManagedBy, LabelManagedByValue, AnnotationApp, appName)}
	}
	fg := metav1.DeletePropagationForeground
	uid := live.GetUID()
	opts := metav1.DeleteOptions{PropagationPolicy: &fg}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
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
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	return err
}
