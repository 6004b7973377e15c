package publish

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"kdrift.dev/kdrift/engine/leader"
)

// NudgeManager is the field manager of the fetch annotation a person's
// action writes.
const NudgeManager = "kdrift-nudge"

// NudgeResult says whether a leader was told to fetch.
type NudgeResult struct {
	// Told is set when a live leader holds the Lease and the annotation
	// was written on at least one of the Apps' AppStatuses.
	Told bool
	// Leader is the Lease's holder ("" when none is live), with the
	// Lease's namespace.
	Leader, Namespace string
	// Why says why no leader was told (no Lease holder, no AppStatus
	// yet, no permission, cluster unreachable).
	Why string
}

// Nudge asks the leader of repository identity to fetch Git now: it
// writes commit into AnnotationFetch on the Apps' AppStatuses, which the
// leader watches. It is best effort and never fails: the result says
// whether a live leader was told, and why not. Each request is bounded by
// a few seconds, so an unreachable cluster does not hold up the person.
func Nudge(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, namespace, identity, commit string, apps []string) NudgeResult {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res := NudgeResult{Namespace: namespace}
	obs, err := leader.Observe(ctx, cs, namespace, identity)
	if err != nil {
		res.Why = fmt.Sprintf("cannot read the Lease %s/%s: %v", namespace, leader.LeaseName(identity), err)
		return res
	}
	if !obs.Live(time.Now()) {
		res.Why = "no kdrift holds the Lease " + namespace + "/" + obs.Name + " (no leader running)"
		return res
	}
	res.Leader = obs.Holder
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnotationFetch: commit}}})
	if err != nil {
		res.Why = err.Error()
		return res
	}
	client := dyn.Resource(GVR).Namespace(namespace)
	names := make([]string, 0, len(apps))
	for _, a := range apps {
		names = append(names, ObjectName(identity, a))
	}
	if len(names) == 0 {
		// A revert may touch any App: any object of the repository will do.
		list, err := client.List(ctx, metav1.ListOptions{LabelSelector: leader.LabelRepo + "=" + leader.Hash(identity), Limit: 1})
		if err != nil {
			res.Why = err.Error()
			return res
		}
		for _, o := range list.Items {
			names = append(names, o.GetName())
		}
	}
	var last error
	for _, name := range names {
		// The leader fetches (and re-compares every App) on any one of
		// them: one write is enough.
		_, err := client.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: NudgeManager})
		if err == nil {
			res.Told = true
			break
		}
		last = err
	}
	if !res.Told {
		switch {
		case last == nil:
			res.Why = "the leader has published no App of this repository yet"
		case apierrors.IsNotFound(last):
			res.Why = "the leader has not published these Apps yet"
		default:
			res.Why = last.Error()
		}
	}
	return res
}
