package diff

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/healthcel"
	"kdrift.dev/kdrift/engine/status"
)

// HealthChecks are an App's CEL health checks, compiled, by kind. A nil
// *HealthChecks judges nothing.
type HealthChecks struct {
	byKind map[schema.GroupKind]compiledCheck
}

type compiledCheck struct {
	failed, inProgress, current *healthcel.Expr
}

// NewHealthChecks compiles an App's checks (healthcel keeps each
// expression compiled once). Checks that do not compile are left out:
// app.Validate already made that App an Error naming them. Nil when there
// are none.
func NewHealthChecks(checks []app.HealthCheck) *HealthChecks {
	if len(checks) == 0 {
		return nil
	}
	h := &HealthChecks{byKind: map[schema.GroupKind]compiledCheck{}}
	for _, c := range checks {
		gv, err := schema.ParseGroupVersion(c.APIVersion)
		if err != nil {
			continue
		}
		var cc compiledCheck
		ok := true
		for _, e := range []struct {
			src string
			dst **healthcel.Expr
		}{{c.Current, &cc.current}, {c.InProgress, &cc.inProgress}, {c.Failed, &cc.failed}} {
			if e.src == "" {
				continue
			}
			x, err := healthcel.Compile(e.src)
			if err != nil {
				ok = false
				break
			}
			*e.dst = x
		}
		if ok && cc.current != nil {
			h.byKind[schema.GroupKind{Group: gv.Group, Kind: c.Kind}] = cc
		}
	}
	return h
}

// judge applies the check for obj's kind: failed, then inProgress, then
// current; when none holds, Progressing with the first evaluation error
// (a field the controller has not written yet, say).
func (h *HealthChecks) judge(obj *unstructured.Unstructured) (status.HealthDetail, bool) {
	if h == nil {
		return status.HealthDetail{}, false
	}
	c, ok := h.byKind[obj.GroupVersionKind().GroupKind()]
	if !ok {
		return status.HealthDetail{}, false
	}
	var firstErr error
	for _, step := range []struct {
		expr   *healthcel.Expr
		health status.Health
		name   string
	}{{c.failed, status.HealthDegraded, "failed"}, {c.inProgress, status.HealthProgressing, "inProgress"}, {c.current, status.HealthHealthy, "current"}} {
		if step.expr == nil {
			continue
		}
		held, err := step.expr.Eval(obj.Object)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if held {
			return status.HealthDetail{Status: step.health, Rule: RuleCEL, Message: step.name + ": " + step.expr.String()}, true
		}
	}
	msg := "no expression held"
	if firstErr != nil {
		msg += " (" + firstErr.Error() + ")"
	}
	return status.HealthDetail{Status: status.HealthProgressing, Rule: RuleCEL, Message: msg}, true
}
