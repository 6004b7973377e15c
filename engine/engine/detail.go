package engine

import (
	"context"
	"fmt"

	"kdrift.dev/kdrift/engine/status"
)

// Detail returns one object of an app as Git wants it and as it is live,
// line by line with owners, for the diff and ownership views. The live side
// is read now; the comparison is the app's last.
func (e *Engine) Detail(ctx context.Context, appName string, ref status.ObjectRef) (status.ObjectDetail, error) {
	e.mu.Lock()
	st, ok := e.states[appName]
	e.mu.Unlock()
	if !ok {
		return status.ObjectDetail{}, fmt.Errorf("app %q is unknown: it was never compared", appName)
	}
	st.run.Lock()
	key := refKey(ref)
	desired := st.desired[key]
	res, known := st.results[key]
	ctxName := st.contextKey
	st.run.Unlock()
	if !known {
		return status.ObjectDetail{}, fmt.Errorf("%s is not an object of app %s", ref, appName)
	}
	cl, err := e.clusterFor(ctxName)
	if err != nil {
		return status.ObjectDetail{}, err
	}
	lv, err := cl.get(ctx, ref)
	if err != nil {
		return status.ObjectDetail{}, err
	}
	return e.opts.Diff.Detail(appName, desired, lv, res), nil
}
