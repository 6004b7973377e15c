package app

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/healthcel"
)

// MaxHealthChecks bounds the health checks one App may give.
const MaxHealthChecks = 64

// validateHealth compiles every health check's expressions; a bad one is
// an error naming the field (spec.health.checks[2].current) with cel-go's
// reason.
func validateHealth(h *HealthSpec, prefix string, mk func(field, problem, fix string) error) []error {
	if h == nil {
		return nil
	}
	var errs []error
	if len(h.Checks) > MaxHealthChecks {
		return []error{mk(prefix+".checks", fmt.Sprintf("has %d checks, more than the %d kdrift reads", len(h.Checks), MaxHealthChecks), "keep one check per kind")}
	}
	seen := map[schema.GroupKind]int{}
	for i, c := range h.Checks {
		field := fmt.Sprintf("%s.checks[%d]", prefix, i)
		gv, err := schema.ParseGroupVersion(c.APIVersion)
		switch {
		case c.APIVersion == "":
			errs = append(errs, mk(field+".apiVersion", "is missing", "give the kind's group/version, such as argoproj.io/v1alpha1"))
		case err != nil:
			errs = append(errs, mk(field+".apiVersion", err.Error(), "give the kind's group/version, such as argoproj.io/v1alpha1"))
		}
		if strings.TrimSpace(c.Kind) == "" {
			errs = append(errs, mk(field+".kind", "is missing", "name the kind the check judges, such as Rollout"))
		} else if j, dup := seen[schema.GroupKind{Group: gv.Group, Kind: c.Kind}]; dup {
			errs = append(errs, mk(field+".kind", fmt.Sprintf("%s is judged by checks[%d] already", c.Kind, j), "keep one check per kind"))
		} else {
			seen[schema.GroupKind{Group: gv.Group, Kind: c.Kind}] = i
		}
		if strings.TrimSpace(c.Current) == "" {
			errs = append(errs, mk(field+".current", "is missing", "write a CEL expression that is true when the object is healthy, such as status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')"))
		}
		for _, e := range []struct{ name, src string }{{"current", c.Current}, {"inProgress", c.InProgress}, {"failed", c.Failed}} {
			if strings.TrimSpace(e.src) == "" {
				continue
			}
			if _, err := healthcel.Compile(e.src); err != nil {
				errs = append(errs, mk(field+"."+e.name, "CEL expression "+err.Error(), "write a CEL expression giving a bool over self, metadata, spec and status"))
			}
		}
	}
	return errs
}
