package engine

import (
	"context"

	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/status"
)

// mayPrune says whether this pass may delete: prune must be asked for (the
// App's syncPolicy.prune in the background, --prune on a sync) and the app
// must not be frozen.
func (p *pass) mayPrune() bool {
	if !p.opts.prune || p.app.Spec.Freeze.ActiveAt(p.now) {
		return false
	}
	return p.opts.force || p.app.Spec.SyncPolicy.Prune
}

// phasePrune deletes tracked objects of this app that Git no longer
// renders, in the foreground. It reports whether it deleted anything.
func (p *pass) phasePrune(ctx context.Context) bool {
	if !p.mayPrune() || len(p.extra) == 0 {
		return false
	}
	changed := false
	for _, o := range p.extra {
		ref := live.RefOf(o)
		err := p.cl.applier.Prune(ctx, p.name, o, p.opts.dryRun)
		if !p.opts.dryRun {
			p.e.opts.Observer.Request(VerbDelete, err)
		}
		if err != nil {
			p.record(ObjectResult{Ref: ref, Action: ActionPrune, Error: err.Error()})
			p.e.bus.publish(status.ErrorEvent{Base: status.Base{App: p.name, Time: p.e.opts.Now()}, Ref: &ref, Message: err.Error()})
			continue
		}
		p.record(ObjectResult{Ref: ref, Action: ActionPrune})
		if !p.opts.dryRun {
			changed = true
			p.e.bus.publish(status.Pruned{Base: status.Base{App: p.name, Time: p.e.opts.Now()}, Ref: ref})
		}
	}
	return changed
}
