package diff

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/status"
)

// Argo Rollouts (argoproj.io/v1alpha1 Rollout) writes status.phase
// (Healthy, Progressing, Paused, Degraded), status.message,
// status.abort, status.pauseConditions[].reason, status.currentStepIndex
// (0-based, into spec.strategy.canary.steps), status.canary.weights
// (with traffic routing) and status.canary.currentStepAnalysisRunStatus.
// Flagger (flagger.app/v1beta1 Canary) writes status.phase, canaryWeight,
// failedChecks, iterations and a Promoted condition.

// rolloutHealth judges an Argo Rollouts Rollout.
func rolloutHealth(obj *unstructured.Unstructured) status.HealthDetail {
	msg := str(obj, "status", "message")
	if flag(obj, "status", "abort") {
		// Until the controller has acted on the abort, status.message
		// is still the old one ("CanaryPauseStep"), not the reason.
		if c := condition(obj, "Progressing"); strings.HasPrefix(msg, "RolloutAborted") || (c != nil && c["reason"] == "RolloutAborted") {
			return degraded("aborted: " + or(msg, condText(c)))
		}
		return degraded("aborted: the Argo Rollouts controller is scaling the canary down to the stable version")
	}
	if c := condition(obj, "InvalidSpec"); c != nil && c["status"] == "True" {
		return degraded("invalid spec: " + condText(c))
	}
	if c := condition(obj, "Progressing"); c != nil && (c["reason"] == "ProgressDeadlineExceeded" || c["reason"] == "RolloutAborted") {
		return degraded(condText(c))
	}
	progress := rolloutProgress(obj)
	where := ""
	if progress != nil {
		where = progress.Summary()
	}
	switch phase := str(obj, "status", "phase"); phase {
	case "Degraded":
		return degraded(or(msg, "Degraded"))
	case "Paused":
		why := pauseReasons(obj)
		if flag(obj, "spec", "paused") {
			why = append(why, "spec.paused")
		}
		text := "paused"
		if where != "" {
			text += " at " + where
		}
		if len(why) > 0 {
			text += ", waiting: " + strings.Join(why, ", ")
		}
		return progressing(text)
	case "Progressing":
		return progressing(strings.TrimPrefix(strings.Join(nonEmpty(where, msg), ": "), ": "))
	case "Healthy":
		return healthy(fmt.Sprintf("stable, %d/%d replicas available", num(obj, "status", "availableReplicas"), specReplicas(obj)))
	case "":
		return progressing("waiting for the Argo Rollouts controller")
	default:
		return status.HealthDetail{Status: status.HealthUnknown, Message: "phase " + phase + ": " + msg}
	}
}

// pauseReasons are the reasons of status.pauseConditions, in order.
func pauseReasons(obj *unstructured.Unstructured) []string {
	var out []string
	for _, c := range list(obj, "status", "pauseConditions") {
		if m, ok := c.(map[string]any); ok {
			if r, _ := m["reason"].(string); r != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// rolloutProgress is a canary Rollout's step, weight and analysis; nil
// for a blue-green Rollout or one without steps.
func rolloutProgress(obj *unstructured.Unstructured) *status.Canary {
	steps := list(obj, "spec", "strategy", "canary", "steps")
	if len(steps) == 0 {
		return nil
	}
	c := &status.Canary{Ref: refOf(obj, nil), Controller: "Argo Rollouts", Phase: str(obj, "status", "phase"), Steps: len(steps), Message: str(obj, "status", "message")}
	idx := len(steps)
	if has(obj, "status", "currentStepIndex") {
		idx = int(num(obj, "status", "currentStepIndex"))
	}
	c.Step = min(idx, len(steps))
	if has(obj, "status", "canary", "weights", "canary", "weight") {
		c.Weight = int(num(obj, "status", "canary", "weights", "canary", "weight"))
	} else if idx >= len(steps) {
		c.Weight = 100
	} else {
		// Without traffic routing the weight is the last setWeight the
		// controller reached, by replica count.
		for _, s := range steps[:idx+1] {
			if m, ok := s.(map[string]any); ok {
				if w, isNum := number(m["setWeight"]); isNum {
					c.Weight = int(w)
				}
			}
		}
	}
	for _, key := range []string{"currentStepAnalysisRunStatus", "currentBackgroundAnalysisRunStatus"} {
		if name := str(obj, "status", "canary", key, "name"); name != "" {
			c.Analysis = strings.TrimSpace(fmt.Sprintf("analysis %s %s %s", name, str(obj, "status", "canary", key, "status"), str(obj, "status", "canary", key, "message")))
			break
		}
	}
	return c
}

// flaggerCanaryHealth judges a Flagger Canary.
func flaggerCanaryHealth(obj *unstructured.Unstructured) status.HealthDetail {
	promoted := condText(condition(obj, "Promoted"))
	switch phase := str(obj, "status", "phase"); phase {
	case "Initialized", "Succeeded":
		return healthy(or(promoted, phase))
	case "Terminated":
		return healthy("terminated: Flagger restored the target")
	case "Failed":
		// Flagger resets failedChecks to 0 as it rolls back, so the
		// count is said only while it is still there.
		why := or(promoted, "rolled back to the primary")
		if n := num(obj, "status", "failedChecks"); n > 0 {
			return degraded(fmt.Sprintf("canary failed after %d failed checks: %s", n, why))
		}
		return degraded("canary failed: " + why)
	case "":
		return progressing("waiting for Flagger")
	default:
		text := phase
		if p := flaggerProgress(obj); p != nil {
			text += ": " + p.Summary()
		}
		if promoted != "" {
			text += "; " + promoted
		}
		return progressing(text)
	}
}

// flaggerProgress is a Flagger Canary's weight and analysis.
func flaggerProgress(obj *unstructured.Unstructured) *status.Canary {
	c := &status.Canary{Ref: refOf(obj, nil), Controller: "Flagger", Phase: str(obj, "status", "phase"), Weight: int(num(obj, "status", "canaryWeight")), Message: condText(condition(obj, "Promoted"))}
	if ws := list(obj, "spec", "analysis", "stepWeights"); len(ws) > 0 {
		c.Steps = len(ws)
		for i, w := range ws {
			if n, ok := number(w); ok && int(n) <= c.Weight {
				c.Step = i + 1
			}
		}
	} else if step, max := num(obj, "spec", "analysis", "stepWeight"), num(obj, "spec", "analysis", "maxWeight"); step > 0 && max > 0 {
		c.Steps = int((max + step - 1) / step)
		c.Step = min(c.Weight/int(step), c.Steps)
	}
	c.Analysis = fmt.Sprintf("%d failed checks of %d", num(obj, "status", "failedChecks"), num(obj, "spec", "analysis", "threshold"))
	if it := num(obj, "status", "iterations"); it > 0 {
		c.Analysis += fmt.Sprintf(", iteration %d", it)
	}
	return c
}

// CanaryOf is the progressive delivery an object runs, when it is an
// Argo Rollouts Rollout or a Flagger Canary in the middle of one: its
// step, weight and analysis. Nil otherwise, and for a finished one.
func CanaryOf(obj *unstructured.Unstructured) *status.Canary {
	if obj == nil {
		return nil
	}
	switch gk := obj.GroupVersionKind().GroupKind(); {
	case gk.Group == "argoproj.io" && gk.Kind == "Rollout":
		switch str(obj, "status", "phase") {
		case "Progressing", "Paused":
			if c := rolloutProgress(obj); c != nil && c.Step < c.Steps {
				return c
			}
		}
	case gk.Group == "flagger.app" && gk.Kind == "Canary":
		switch str(obj, "status", "phase") {
		case "Progressing", "Waiting", "WaitingPromotion", "Promoting", "Finalising":
			return flaggerProgress(obj)
		}
	}
	return nil
}
