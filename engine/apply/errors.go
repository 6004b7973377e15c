package apply

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/status"
)

// ObjectError is a failed operation on one object. It renders as
// `Kind/namespace/name OP failed: MESSAGE`.
type ObjectError struct {
	Ref status.ObjectRef
	// Op is what kdrift was doing: apply, dry-run apply, hand-over,
	// remove extra field, prune, wait.
	Op  string
	Err error
	// RequiresReplace is set when the apiserver refused because a field
	// is immutable: the object must be deleted and created again, which
	// kdrift never does on its own.
	RequiresReplace bool
}

// Error renders the object first, then what failed and what to do.
func (e *ObjectError) Error() string {
	msg := fmt.Sprintf("%s %s failed: %v", e.Ref, e.Op, e.Err)
	if e.RequiresReplace {
		msg += "; an immutable field changed: delete and re-create the object (kdrift never does that on its own), or revert the change in Git"
	}
	if apierrors.IsForbidden(e.Err) {
		msg += forbiddenHint(e.Ref)
	}
	return msg
}

// forbiddenHint says what lets kdrift's controller write ref when the
// apiserver refused its credentials (deploy/ is namespaced: see kdrift
// rbac).
func forbiddenHint(ref status.ObjectRef) string {
	kind := ref.Kind
	if ref.Group != "" {
		kind += "." + ref.Group
	}
	if ref.Namespace == "" {
		return fmt.Sprintf("; these credentials may not write %s, a cluster-scoped kind: kdrift's controller writes one only with deploy/components/cluster-wide or a role that grants it", kind)
	}
	return fmt.Sprintf("; these credentials may not write %s in namespace %s: for kdrift's controller, list %s in spec.namespaces of .kdrift/settings.yaml and apply what `kdrift rbac` prints; a kind kdrift-apply does not list needs a rule there too", kind, ref.Namespace, ref.Namespace)
}

// Unwrap returns the apiserver's error.
func (e *ObjectError) Unwrap() error { return e.Err }

// IsRequiresReplace reports whether err says an immutable field changed.
func IsRequiresReplace(err error) bool {
	var oe *ObjectError
	if errors.As(err, &oe) {
		return oe.RequiresReplace
	}
	return diff.IsRequiresReplace(err)
}

// retryable reports whether an error may pass on its own: conflicts of
// optimistic concurrency, throttling, timeouts, server errors and a kind
// the RESTMapper does not know yet (a CRD being established).
func retryable(err error) bool {
	switch {
	case err == nil:
		return false
	case apierrors.IsConflict(err), apierrors.IsTooManyRequests(err), apierrors.IsServerTimeout(err),
		apierrors.IsTimeout(err), apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err),
		apierrors.IsUnexpectedServerError(err):
		return true
	}
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return se.Status().Code >= 500
	}
	return isNoMatch(err)
}

func newObjectError(ref status.ObjectRef, op string, err error) *ObjectError {
	return &ObjectError{Ref: ref, Op: op, Err: err, RequiresReplace: diff.IsRequiresReplace(err)}
}
