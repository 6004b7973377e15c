package engine

import (
	"context"
	"fmt"

	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/status"
)

// ObjectError is a Detail failure about one object; its message names the
// object first, so a caller need not add the name again.
type ObjectError struct {
	// App is the app the object was asked of.
	App string
	Ref status.ObjectRef
	// Err is why. A live read's error already names the object (engine/live
	// errors start with it); otherwise Error adds the name.
	Err   error
	named bool
}

// Error is the object, then what went wrong.
func (e *ObjectError) Error() string {
	if e.named {
		return e.Err.Error()
	}
	return e.Ref.String() + " " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *ObjectError) Unwrap() error { return e.Err }

// Object is the object the error is about.
func (e *ObjectError) Object() status.ObjectRef { return e.Ref }

// Detail returns one object of an app as Git wants it and as it is live,
// line by line with owners, for the diff and ownership views. The live side
// is read now; the comparison is the app's last.
func (e *core) Detail(ctx context.Context, appName string, ref status.ObjectRef) (status.ObjectDetail, error) {
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
	sensitive := st.sensitive
	whole := sensitiveRef(st.sensitiveObjs, ref)
	ctxName := st.contextKey
	st.run.Unlock()
	if !known {
		return status.ObjectDetail{}, &ObjectError{App: appName, Ref: ref, Err: fmt.Errorf("is not an object of app %s", appName)}
	}
	cl, err := e.clusterFor(ctxName)
	if err != nil {
		return status.ObjectDetail{}, err
	}
	lv, err := cl.get(ctx, ref)
	if err != nil {
		return status.ObjectDetail{}, &ObjectError{App: appName, Ref: ref, Err: err, named: true}
	}
	if whole {
		desired, lv = diff.MaskAllValues(desired), diff.MaskAllValues(lv)
	}
	return e.opts.Diff.Detail(appName, diff.MaskSensitiveObject(desired, sensitive), diff.MaskSensitiveObject(lv, sensitive), res), nil
}
