package engine

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/redact"
	"kdrift.dev/kdrift/engine/source"
)

// argoApplications is Argo CD's Application resource.
var argoApplications = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// liveListTimeout bounds the read of the live Applications in one pass:
// a cluster that does not answer leaves the app list to Git.
const liveListTimeout = 10 * time.Second

// AppSource says where the app list came from: the commit, and the live
// Argo CD Applications the current context's cluster added (those
// `argocd app create` made, which no file declares), or why they could
// not be read.
func (e *core) AppSource() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.appSource
}

// withLiveApplications is the commit's apps plus the live Argo CD
// Applications of the current context's cluster that read this
// repository and that Git does not declare, and where the list came
// from. kdrift only lists Applications (read-only); a cluster without
// Argo CD (no Application resource), or none reachable, leaves Git's
// list as it is.
func (e *core) withLiveApplications(ctx context.Context, snap *source.Snapshot, rev source.Revision) (app.LoadResult, string) {
	from := "apps from Git at " + rev.Short()
	objs, ctxName, note := e.liveApplicationsOnce(ctx)
	e.noteApplied(schema.GroupKind{Group: argoApplications.Group, Kind: "Application"}, objs)
	seen := e.argoElsewhere(objs, ctxName)
	e.mu.Lock()
	e.argoSeen = seen
	e.mu.Unlock()
	if note != "" {
		return snap.Apps(), from + "; " + note
	}
	if objs == nil {
		return snap.Apps(), from
	}
	res, added := snap.WithLiveApplications(objs, ctxName)
	where := "the current context"
	if ctxName != "" {
		where = "context " + ctxName
	}
	switch added {
	case 0:
		if seen.Ours == 0 {
			return res, fmt.Sprintf("%s; Argo CD runs on %s (%d live Applications, none reads this repository)", from, where, len(objs))
		}
		return res, fmt.Sprintf("%s; Argo CD runs on %s (%d of its %d live Applications read this repository, all declared in Git)", from, where, seen.Ours, len(objs))
	case 1:
		return res, fmt.Sprintf("%s and 1 live Argo CD Application on %s that Git does not declare", from, where)
	}
	return res, fmt.Sprintf("%s and %d live Argo CD Applications on %s that Git does not declare", from, added, where)
}

// liveApps is what liveApplications returned.
type liveApps struct {
	objs          []map[string]any
	context, note string
}

// liveApplicationsOnce is the list Warm started, the first time it is
// asked for (a one-shot command's only head load), else a new list.
func (e *core) liveApplicationsOnce(ctx context.Context) ([]map[string]any, string, string) {
	e.mu.Lock()
	early := e.earlyApps
	e.earlyApps = nil
	e.mu.Unlock()
	if early != nil {
		select {
		case l := <-early:
			return l.objs, l.context, l.note
		case <-ctx.Done():
		}
	}
	return e.liveApplications(ctx)
}

// liveApplications lists the live Applications of the current context's
// cluster: nil when it has no Application resource or no cluster can be
// reached; a note when the list failed otherwise.
func (e *core) liveApplications(ctx context.Context) ([]map[string]any, string, string) {
	cs, err := e.clients.For("")
	if err != nil {
		return nil, "", ""
	}
	ctx, cancel := context.WithTimeout(ctx, liveListTimeout)
	defer cancel()
	var out []map[string]any
	cont := ""
	for {
		list, err := cs.Dynamic.Resource(argoApplications).List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
		switch {
		case apierrors.IsNotFound(err):
			return nil, cs.Context, ""
		case apierrors.IsForbidden(err):
			return nil, cs.Context, "the live Argo CD Applications are not readable (" + redact.Text(err.Error()) + "); grant list on applications.argoproj.io to list the apps created outside Git"
		case err != nil:
			// Unreachable: the pass reports the cluster; the list is Git's.
			return nil, cs.Context, ""
		}
		for _, it := range list.Items {
			if len(out) >= app.MaxLiveApplications {
				return out, cs.Context, ""
			}
			out = append(out, it.Object)
		}
		if cont = list.GetContinue(); cont == "" {
			break
		}
	}
	if out == nil {
		out = []map[string]any{}
	}
	return out, cs.Context, ""
}
