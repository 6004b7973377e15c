package engine

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/status"
)

// CompareOne renders app at the current head and compares one of its
// objects with the cluster: one read of the object and one server-side
// dry-run (a second, a dry-run create, only when the apiserver's defaults
// must be told from a person's fields), and nothing else of the app. It
// never writes. A UI that follows a leader's published statuses calls it
// when a person opens the object's diff, so that Detail then works for
// it; with a, the App's status as published, it fills in the objects
// Detail must know (an Extraneous one is read, not compared).
func (e *core) CompareOne(ctx context.Context, appName string, ref status.ObjectRef, published *status.ResourceStatus) error {
	if err := e.loadHead(ctx, false); err != nil {
		return err
	}
	st := e.state(appName)
	st.run.Lock()
	defer st.run.Unlock()
	p := &pass{e: e, st: st, name: appName, now: e.opts.Now(), opts: passOptions{dryRun: true},
		status: status.AppStatus{Name: appName, Sync: status.SyncUnknown, Health: status.HealthUnknown, SelfHeal: status.SelfHealOff, Resources: []status.ResourceStatus{}},
		live:   map[string]*unstructured.Unstructured{},
	}
	if !p.phaseSource() || !p.phaseRender(ctx) {
		if p.status.Cause != nil {
			return fmt.Errorf("app %s: %w", appName, p.status.Cause)
		}
		return fmt.Errorf("app %s: %s", appName, p.status.Error)
	}
	key := refKey(ref)
	var desired *unstructured.Unstructured
	for _, d := range p.desired {
		if refKey(live.RefOf(d)) == key {
			desired = d
			break
		}
	}
	e.mu.Lock()
	st.context = p.cl.name
	st.contextKey = p.app.Spec.Destination.Context
	e.mu.Unlock()
	if desired == nil {
		// Not rendered from Git: an Extraneous object, which Detail reads
		// live; the published comparison stands.
		if published == nil {
			return &ObjectError{App: appName, Ref: ref, Err: errors.New("is not rendered from Git at the head and was not published")}
		}
		delete(st.desired, key)
		st.results[key] = *published
		return nil
	}
	res, _ := p.compareOne(ctx, desired, ref, desiredHash(desired, compareRules(p.app)))
	res.Message = p.scrubbed(res.Message)
	one := []status.ResourceStatus{res}
	p.classify(one)
	res = one[0]
	st.desired[key] = desired
	st.results[key] = res
	return nil
}
