package engine

import (
	"kdrift.dev/kdrift/engine/status"
)

// reach records whether a cluster (by context) or Git answered, and
// publishes a Reachability event when that changes: the UI's "unreachable
// since" banners come from these. A target first seen reachable is not
// announced; one first seen unreachable is.
func (e *core) reach(target status.Target, context string, err error) {
	key := string(target) + "/" + context
	down := err != nil
	e.reachMu.Lock()
	if e.reachDown == nil {
		e.reachDown = map[string]bool{}
	}
	was, known := e.reachDown[key]
	e.reachDown[key] = down
	e.reachMu.Unlock()
	if (known && was == down) || (!known && !down) {
		return
	}
	ev := status.Reachability{Base: status.Base{Time: e.opts.Now()}, Target: target, Context: context, Up: !down}
	if err != nil {
		ev.Message = err.Error()
	}
	e.bus.publish(ev)
}
