package engine

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/redact"
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
	// overwriteFrozen applies resources and fields that spec.freezes
	// holds too (a sync the person confirmed, --force); without it they
	// are left as they are live and listed in SyncResult.LeftFrozen.
	overwriteFrozen bool
	dryRun          bool
	// confirmPrune lets prune delete a large share of the app's objects.
	confirmPrune bool
	// allowOwned lets a sync apply an app another GitOps engine owns.
	allowOwned bool
	// allowOlder lets a sync apply a revision that does not contain the
	// app's mark (SyncOptions.AllowOlder); olderReason and olderBy are
	// recorded with the new mark.
	allowOlder           bool
	olderReason, olderBy string
}

// pass is one reconcile of one app. Its phases fill it in order; finish
// records the result whatever happened.
type pass struct {
	e    *core
	st   *appState
	name string
	now  time.Time
	opts passOptions

	rev     source.Revision
	snap    *source.Snapshot
	app     app.App
	cl      *cluster
	desired []*unstructured.Unstructured
	// sensitive are the strings the render took from Secrets outside
	// Secret objects (valuesFrom): masked in every field and message.
	sensitive []string
	live      map[string]*unstructured.Unstructured
	results   []status.ResourceStatus
	extra     []*unstructured.Unstructured
	// pruneHold, when set, is why no prune candidate may be deleted this
	// pass (another App's render could not be read).
	pruneHold string
	// sensitiveObjs are the objects that received values from a Secret
	// (see probeSensitive): every value masked, as a Secret's.
	sensitiveObjs []status.ObjectRef
	// held says, by refKey, why a prune candidate was not deleted; the
	// comparison after heal and prune keeps saying it.
	held map[string]string
	// encrypted are the desired objects no identity decrypted, by refKey,
	// with why (see findEncrypted).
	encrypted map[string]string

	// cacheMu guards st.cache and unreadable while objects are compared
	// in parallel.
	cacheMu sync.Mutex
	// unreadable are the objects (by refKey) whose live state could not
	// be read; nothing is applied to them.
	unreadable map[string]bool
	// unreached says the pass could not reach the app's cluster.
	unreached bool
	// scopes caches, for this pass, whether a kind is namespaced.
	scopes map[schema.GroupVersionKind]bool
	// secrets masks the rendered Secrets' values in messages (scrubbed).
	secrets     *redact.Secrets
	secretsOnce sync.Once
	// backWhy, when set, says why this pass neither heals nor prunes:
	// its revision does not contain one kdrift already applied.
	backWhy string
	// appliedSome is set when the heal applied at least one object.
	appliedSome bool
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
func (e *core) reconcileApp(ctx context.Context, name string, opts passOptions) (res SyncResult) {
	if e.opts.ReadOnly && !opts.dryRun {
		// The one gate: every write (heal, hand-over, prune) is below.
		opts.heal, opts.prune = false, false
	}
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
		// A panic in one app's pass is that app's error: the other apps,
		// the UI and the controller go on.
		if v := recover(); v != nil {
			p.fail(status.SyncError, fmt.Errorf("reconcile of %s panicked: %v; the other apps are not affected (please report this)", name, v))
		}
		p.finish()
		res = p.result
		e.retryUnreached(name, st, p.unreached || len(p.unreadable) > 0)
	}()

	if !p.phaseSource() {
		return p.result
	}
	p.checkOwnerPaused(ctx)
	if !p.phaseRender(ctx) {
		return p.result
	}
	p.register()
	if !p.phaseCompare(ctx) {
		return p.result
	}
	if !opts.dryRun {
		p.announceExpiring()
	}
	if (p.opts.heal || p.opts.prune) && !opts.dryRun {
		// Neither heal nor prune moves the cluster back to older state;
		// a sync that would is refused unless the person allowed it.
		p.backWhy, _ = p.movedBack(ctx)
		if p.backWhy != "" && p.opts.force {
			oe := &OlderError{App: name, Revision: p.rev.Hash, Applied: p.st.mark.Revision, Why: p.backWhy}
			p.result.Err, p.result.Cause = oe.Error(), oe
		}
	}
	changed := p.phaseHeal(ctx)
	if p.backWhy == "" && p.phasePrune(ctx) {
		changed = true
	}
	if changed && !opts.dryRun {
		// Report the state after healing, not before.
		p.cl.lists.reset()
		p.phaseCompare(ctx)
		if p.appliedSome {
			p.recordApplied(ctx)
		}
		// An informer may not have seen the heal yet: compare again once
		// the debounce has passed, so the status shows the healed object
		// even when no further change arrives. Once per run of heals: an
		// object that drifts back at once (a mutating webhook) is not
		// re-applied in a loop.
		if !st.requeued {
			st.requeued = true
			e.requeue(name)
		}
	} else if !changed {
		st.requeued = false
	}
	return p.result
}

// retryUnreached asks Run for another pass over app name when this one
// could not reach its cluster or read some of its objects (a restarted
// apiserver answering 403 while its RBAC is loading, a timeout, a 429),
// after 1 s, doubling per failed pass up to 30 s. Nothing else may come:
// no Git change, and no informer event for an app whose pass never got
// as far as watching its objects; the resync is minutes away.
func (e *core) retryUnreached(name string, st *appState, failed bool) {
	if !failed {
		st.unreached = 0
		return
	}
	st.unreached++
	d := maxUnreachedRetry
	if st.unreached <= 6 {
		d = min(time.Second<<(st.unreached-1), maxUnreachedRetry)
	}
	e.mu.Lock()
	retry := e.retry
	e.mu.Unlock()
	if retry != nil {
		retry(name, d)
	}
}

// maxUnreachedRetry bounds the wait before another pass over an app that
// could not reach its cluster.
const maxUnreachedRetry = 30 * time.Second

// register makes the app's destination and every object it renders known
// to Run before the comparison starts, so a live change that lands while
// this pass runs (the very object it is about to create, say) finds the
// app and marks it for another pass instead of being lost.
func (p *pass) register() {
	p.e.mu.Lock()
	defer p.e.mu.Unlock()
	p.st.context = p.cl.name
	p.st.contextKey = p.app.Spec.Destination.Context
	refs := make(map[string]bool, len(p.st.refs)+len(p.desired))
	for k := range p.st.refs {
		refs[k] = true
	}
	for _, d := range p.desired {
		refs[refKey(live.RefOf(d))] = true
	}
	p.st.refs = refs
}

// fail ends the pass with an app-level error.
func (p *pass) fail(sync status.Sync, err error) bool {
	p.failed = true
	p.status.Sync = sync
	p.status.Error, p.status.Cause = err.Error(), err
	p.result.Err, p.result.Cause = err.Error(), err
	return false
}

// finish is the deferred block of every pass: it completes the status
// (sync, health, OutOfSyncSince, fights), stores it and publishes
// AppStatusChanged when anything but the comparison time changed.
func (p *pass) finish() {
	e := p.e
	s := &p.status
	p.scrub()
	s.ComparedAt = p.now
	if p.results != nil {
		s.Resources = p.results
		if !p.failed {
			s.Sync, s.Health = summarize(p.results)
			if s.Sync == status.SyncOutOfSync && p.app.Origin != nil {
				s.Difference = status.AppDifference(p.results)
			}
			s.HealthDetail = decidingHealth(p.results, s.Health)
		}
		s.Canaries = p.canaries()
	}
	s.Fights = e.fights.Fights(p.name)
	s.NoObjects = !p.failed && p.desired != nil && len(p.desired) == 0
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
	judged, unknown := 0, 0
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
		if unjudged(r) {
			unknown++
			continue
		}
		judged++
		if rank[r.Health] > rank[health] {
			health = r.Health
		}
	}
	if judged == 0 && unknown > 0 {
		// Nothing of the app could be judged: not Healthy.
		health = status.HealthUnknown
	}
	return sync, health
}

// unjudged reports whether no rule understood a resource (Unknown by the
// rule "none"): it is shown Unknown, and left out of the app's health
// unless nothing else of the app could be judged.
func unjudged(r status.ResourceStatus) bool {
	return r.Health == status.HealthUnknown && r.HealthDetail != nil && r.HealthDetail.Rule == diff.RuleNone
}

// decidingHealth is the rule and message of the first resource whose
// health is the app's, so the app says why it is Degraded; nil when the
// app is Healthy.
func decidingHealth(rs []status.ResourceStatus, h status.Health) *status.HealthDetail {
	if h == status.HealthHealthy {
		return nil
	}
	for _, r := range rs {
		if r.Health != h || r.Status == status.ResourceExtraneous || r.Status == status.ResourceEncrypted || (h != status.HealthUnknown && unjudged(r)) {
			continue
		}
		d := status.HealthDetail{Status: h}
		if r.HealthDetail != nil {
			d = *r.HealthDetail
		}
		ref := r.Ref
		d.Object = &ref
		return &d
	}
	return nil
}

// canaries are the progressive deliveries in flight among the app's live
// Rollouts and Canaries.
func (p *pass) canaries() []status.Canary {
	var out []status.Canary
	for _, d := range p.desired {
		if c := diff.CanaryOf(p.live[refKey(live.RefOf(d))]); c != nil {
			out = append(out, *c)
		}
	}
	return out
}

// sameStatus compares two statuses without their comparison time, and
// errors by their message (a new pass makes a new error value).
func sameStatus(a, b status.AppStatus) bool {
	a.ComparedAt, b.ComparedAt = time.Time{}, time.Time{}
	a.Cause, b.Cause = nil, nil
	return reflect.DeepEqual(a, b)
}

// sortResults orders resources by kind, namespace and name.
func sortResults(rs []status.ResourceStatus) {
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Ref.String() < rs[j].Ref.String() })
}

// scrub masks, in every message the pass records, the values of the
// Secrets it rendered and any URL credentials: kustomize and the apiserver
// quote objects in their errors.
func (p *pass) scrub() {
	p.status.Error = p.scrubbed(p.status.Error)
	p.result.Err = p.scrubbed(p.result.Err)
	for i := range p.results {
		p.results[i].Message = p.scrubbed(p.results[i].Message)
	}
	for i := range p.result.Plan {
		p.result.Plan[i].Message = p.scrubbed(p.result.Plan[i].Message)
	}
	for i := range p.result.Objects {
		p.result.Objects[i].Error = p.scrubbed(p.result.Objects[i].Error)
	}
}

// scrubbed is msg with the values of the Secrets the pass rendered, and
// URL credentials, masked.
func (p *pass) scrubbed(msg string) string {
	p.secretsOnce.Do(func() {
		p.secrets = &redact.Secrets{}
		p.secrets.AddObjects(p.desired)
		p.secrets.Add(p.sensitive...)
	})
	return p.secrets.Scrub(p.e.renderer.Scrub(msg))
}
