package diff

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"kdrift.dev/kdrift/engine/status"
)

// Rule names that are not a kind.
const (
	// RuleKstatus is the generic rules of sigs.k8s.io/cli-utils' kstatus:
	// deletion, observedGeneration, the Reconciling, Stalled and Ready
	// conditions, and its built-in kinds.
	RuleKstatus = "kstatus"
	// RuleCEL is a health check the team wrote (an App's or the
	// repository settings' spec.health.checks).
	RuleCEL = "cel"
	// RuleNone is no rule at all: an object kdrift does not understand
	// and that carries no conditions, shown Unknown.
	RuleNone = "none"
	// RuleExists is for a live object that is not there (Missing).
	RuleExists = "exists"
)

// Health is the health of a live object (see Judge), without the team's
// CEL checks.
func Health(obj *unstructured.Unstructured) status.Health {
	return Judge(obj, nil).Status
}

// Judge says how healthy a live object is, which rule decided and why.
// The order, each step deciding when it can:
//
//  1. nil is Missing; an object being deleted is Progressing; an object
//     whose controller has not observed its latest generation is
//     Progressing (kstatus' generic checks, also for Rollout's string
//     observedGeneration);
//  2. the team's CEL checks for the object's kind (checks, may be nil);
//  3. kdrift's rule for the kind (healthRules);
//  4. kstatus: Stalled, Reconciling and Ready conditions and its own
//     kinds; an object of a custom kind with none of those and no
//     conditions at all is Unknown, never Healthy.
func Judge(obj *unstructured.Unstructured, checks *HealthChecks) status.HealthDetail {
	if obj == nil {
		return status.HealthDetail{Status: status.HealthMissing, Rule: RuleExists, Message: "not in the cluster"}
	}
	if obj.GetDeletionTimestamp() != nil {
		return status.HealthDetail{Status: status.HealthProgressing, Rule: RuleKstatus, Message: "being deleted"}
	}
	if msg, behind := generationBehind(obj); behind {
		return status.HealthDetail{Status: status.HealthProgressing, Rule: RuleKstatus, Message: msg}
	}
	if d, ok := checks.judge(obj); ok {
		return d
	}
	gk := obj.GroupVersionKind().GroupKind()
	if r, ok := healthRules[gk]; ok {
		d := r(obj)
		d.Rule = gk.Kind
		return d
	}
	return kstatusHealth(obj)
}

// generationBehind says whether status.observedGeneration (a number, or
// a number in a string as Argo Rollouts writes it) is older than
// metadata.generation.
func generationBehind(obj *unstructured.Unstructured) (string, bool) {
	v, ok, err := unstructured.NestedFieldNoCopy(obj.Object, "status", "observedGeneration")
	if !ok || err != nil {
		return "", false
	}
	var seen int64
	switch x := v.(type) {
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil && obj.GroupVersionKind().Group == "argoproj.io" {
			return "", false // an older Rollouts wrote a hash: nothing to compare
		}
		seen = n // a string that is no number counts as nothing observed
	default:
		f, _ := number(v) // so does a value of another type
		seen = int64(f)
	}
	if gen := obj.GetGeneration(); seen < gen {
		return fmt.Sprintf("generation %d not observed yet (controller saw %d)", gen, seen), true
	}
	return "", false
}

// kstatusHealth is the floor: kstatus' verdict, except that an object
// kstatus has no rule for and that carries no conditions is Unknown
// (kstatus would call it Current) unless it is of a built-in API group,
// whose objects without status (ConfigMap, Role, ServiceAccount) are
// healthy by existing.
func kstatusHealth(obj *unstructured.Unstructured) status.HealthDetail {
	res, err := kstatus.Compute(obj)
	if err != nil {
		return status.HealthDetail{Status: status.HealthUnknown, Rule: RuleKstatus, Message: err.Error()}
	}
	d := status.HealthDetail{Rule: RuleKstatus, Message: res.Message}
	switch res.Status {
	case kstatus.CurrentStatus:
		d.Status = status.HealthHealthy
		if kstatus.GetLegacyConditionsFn(obj) == nil && len(list(obj, "status", "conditions")) == 0 {
			if builtinGroup(obj.GroupVersionKind().Group) {
				d.Message = "exists; " + obj.GetKind() + " has no status to judge"
				return d
			}
			return status.HealthDetail{Status: status.HealthUnknown, Rule: RuleNone,
				Message: fmt.Sprintf("no health rule for %s and no status conditions: add a CEL check (spec.health.checks) to judge it", kindOf(obj))}
		}
	case kstatus.InProgressStatus, kstatus.TerminatingStatus:
		d.Status = status.HealthProgressing
	case kstatus.FailedStatus:
		d.Status = status.HealthDegraded
	case kstatus.NotFoundStatus:
		d.Status = status.HealthMissing
	default:
		d.Status = status.HealthUnknown
	}
	return d
}

// builtinGroup reports whether a group is Kubernetes' own: the core
// group, a group without a dot (apps, batch, policy, autoscaling) or one
// under k8s.io.
func builtinGroup(g string) bool {
	return g == "" || !strings.Contains(g, ".") || g == "k8s.io" || strings.HasSuffix(g, ".k8s.io")
}

// kindOf is Kind.group, or Kind for the core group.
func kindOf(obj *unstructured.Unstructured) string {
	gk := obj.GroupVersionKind().GroupKind()
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}

// The accessors below read status fields leniently: a field of the wrong
// type counts as absent, since health is a best judgement, not validation.

func has(obj *unstructured.Unstructured, fields ...string) bool {
	_, ok, err := unstructured.NestedFieldNoCopy(obj.Object, fields...)
	return ok && err == nil
}

func str(obj *unstructured.Unstructured, fields ...string) string {
	v, ok, err := unstructured.NestedFieldNoCopy(obj.Object, fields...)
	if !ok || err != nil {
		return ""
	}
	s, isString := v.(string)
	if !isString {
		return ""
	}
	return s
}

func flag(obj *unstructured.Unstructured, fields ...string) bool {
	v, ok, err := unstructured.NestedFieldNoCopy(obj.Object, fields...)
	if !ok || err != nil {
		return false
	}
	b, isBool := v.(bool)
	return isBool && b
}

func list(obj *unstructured.Unstructured, fields ...string) []any {
	v, ok, err := unstructured.NestedFieldNoCopy(obj.Object, fields...)
	if !ok || err != nil {
		return nil
	}
	l, isList := v.([]any)
	if !isList {
		return nil
	}
	return l
}

func num(obj *unstructured.Unstructured, fields ...string) int64 {
	v, ok, err := unstructured.NestedFieldNoCopy(obj.Object, fields...)
	if !ok || err != nil {
		return 0
	}
	n, isNum := number(v)
	if !isNum {
		return 0
	}
	return int64(n)
}

func specReplicas(obj *unstructured.Unstructured) int64 {
	if !has(obj, "spec", "replicas") {
		return 1
	}
	return num(obj, "spec", "replicas")
}

// condition returns the status condition of a type, or nil.
func condition(obj *unstructured.Unstructured, typ string) map[string]any {
	for _, c := range list(obj, "status", "conditions") {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// condIs reports whether the condition of a type has the status.
func condIs(obj *unstructured.Unstructured, typ, want string) bool {
	c := condition(obj, typ)
	return c != nil && c["status"] == want
}

// condText is a condition's reason and message, "Reason: message", or
// "" when there is no such condition.
func condText(c map[string]any) string {
	if c == nil {
		return ""
	}
	reason, _ := c["reason"].(string)
	msg, _ := c["message"].(string)
	switch {
	case reason != "" && msg != "":
		return reason + ": " + msg
	case msg != "":
		return msg
	}
	return reason
}

// or is a, or b when a is empty.
func or(a, b string) string {
	if a == "" {
		return b
	}
	return a
}
