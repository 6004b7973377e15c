package engine

import (
	"context"
	"reflect"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/engine/status"
)

// passOptions say what a pass may change.
type passOptions struct {
	// heal applies drifted objects when the App's policy allows it.
	heal bool
	// prune deletes extraneous objects when the App's policy allows it.
	prune bool
	// force heals (and prunes, with prune) whatever selfHeal says: an
	// explicit sync. A frozen app is still refused unless allowFrozen.
	force       bool
	allowFrozen bool
	dryRun      bool
}

// pass is one reconcile of one app. Its phases fill it in order; finish
// records the result whatever happened.
type pass struct {
	e    *Engine
	st   *appState
	name string
	now  time.Time
	opts passOptions

	rev     source.Revision
	snap    *source.Snapshot
	app     app.App
	cl      *cluster
	desired []*unstructured.Unstructured
	live    map[string]*unstructured.Unstructured
	results []status.ResourceStatus
	extra   []*unstructured.Unstructured
	// encrypted are the desired objects no identity decrypted, by refKey,
	// with why (see findEncrypted).
	encrypted map[string]string

	// cacheMu guards st.cache while objects are compared in parallel.
	cacheMu sync.Mutex
	// scopes caches, for this pass, whether a kind is namespaced.
	scopes map[schema.GroupVersionKind]bool
	// failed is set when a phase stopped the pass.
	failed bool
	// status is what finish records.
	status status.AppStatus
	// result is what Sync returns.
	result SyncResult
}

// reconcileApp runs one pass over app name: source, render, compare, heal,
// prune. Whatever phase stops it, the deferred finish records the app's
// status and publishes it when it changed.
func (e *Engine) reconcileApp(ctx context.Context, name string, opts passOptions) (res SyncResult) {
	st := e.state(name)
	st.run.Lock()
	defer st.run.Unlock()
	e.passes.Add(1)
	p := &pass{e: e, st: st, name: name, now: e.opts.Now(), opts: opts,
		status: status.AppStatus{Name: name, Sync: status.SyncUnknown, Health: status.HealthUnknown, SelfHeal: status.SelfHealOff, Resources: []status.ResourceStatus{}},
		live:   map[string]*unstructured.Unstructured{},
	}
	p.result.App = name
	defer func() {
		p.finish()
		res = p.result
	}()

	if !p.phaseSource() {
		return p.result
	}
	if !p.phaseRender(ctx) {
		return p.result
	}
	if !p.phaseCompare(ctx) {
		return p.result
	}
	changed := p.phaseHeal(ctx)
	if p.phasePrune(ctx) {
		changed = true
	}
	if changed && !opts.dryRun {
		// Report the state after healing, not before.
		p.cl.lists.reset()
		p.phaseCompare(ctx)
	}
	return p.result
}

// fail ends the pass with an app-level error.
func (p *pass) fail(sync status.Sync, msg string) bool {
	p.failed = true
	p.status.Sync = sync
	p.status.Error = msg
	p.result.Err = msg
	return false
}

// finish is the deferred block of every pass: it completes the status
// (sync, health, OutOfSyncSince, fights), stores it and publishes
// AppStatusChanged when anything but the comparison time changed.
func (p *pass) finish() {
	e := p.e
	s := &p.status
	s.ComparedAt = p.now
	if p.results != nil {
		s.Resources = p.results
		if !p.failed {
			s.Sync, s.Health = summarize(p.results)
		}
	}
	s.Fights = e.fights.Fights(p.name)
	e.mu.Lock()
	prev := p.st.status
	if s.Sync == status.SyncOutOfSync {
		if prev.OutOfSyncSince != nil && prev.Sync == status.SyncOutOfSync {
			s.OutOfSyncSince = prev.OutOfSyncSince
		} else {
			t := p.now
			s.OutOfSyncSince = &t
		}
	}
	if p.cl != nil {
		p.st.context = p.cl.name
		p.st.contextKey = p.app.Spec.Destination.Context
	}
	refs := map[string]bool{}
	for _, r := range s.Resources {
		refs[refKey(r.Ref)] = true
	}
	p.st.refs = refs
	p.st.status = *s
	e.mu.Unlock()
	p.result.Status = *s
	if !sameStatus(prev, *s) {
		e.bus.publish(status.AppStatusChanged{Base: status.Base{App: p.name, Time: p.now}, Status: *s})
	}
}

// summarize derives an app's sync and health from its resources.
func summarize(rs []status.ResourceStatus) (status.Sync, status.Health) {
	sync := status.SyncSynced
	health := status.HealthHealthy
	rank := map[status.Health]int{status.HealthHealthy: 0, status.HealthProgressing: 1, status.HealthUnknown: 2, status.HealthMissing: 3, status.HealthDegraded: 4}
	for _, r := range rs {
		switch r.Status {
		case status.ResourceSynced, status.ResourceIgnored, status.ResourceEncrypted, status.ResourceGenerated:
		case status.ResourceError:
			if sync != status.SyncOutOfSync {
				sync = status.SyncError
			}
		default:
			sync = status.SyncOutOfSync
		}
		if r.Status == status.ResourceExtraneous || r.Status == status.ResourceEncrypted {
			continue
		}
		if rank[r.Health] > rank[health] {
			health = r.Health
		}
	}
	return sync, health
}

// sameStatus compares two statuses without their comparison time.
func sameStatus(a, b status.AppStatus) bool {
	a.ComparedAt, b.ComparedAt = time.Time{}, time.Time{}
	return reflect.DeepEqual(a, b)
}

// sortResults orders resources by kind, namespace and name.
func sortResults(rs []status.ResourceStatus) {
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Ref.String() < rs[j].Ref.String() })
}
