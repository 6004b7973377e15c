package ui

import (
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/status"
)

func TestAppHealthTextCanary(t *testing.T) {
	t.Parallel()
	c := status.Canary{Ref: status.ObjectRef{Kind: "Canary", Namespace: "prod", Name: "api"}, Controller: "Flagger", Phase: "Progressing", Step: 2, Steps: 5, Weight: 20, Analysis: "1 failed checks of 5"}
	a := status.AppStatus{Health: status.HealthProgressing, Canaries: []status.Canary{c}}
	if got := appHealthText(a); got != "◐ canary 20%" {
		t.Errorf("appHealthText = %q", got)
	}
	a.Health = status.HealthDegraded
	if got := appHealthText(a); got != "✗ Degraded" {
		t.Errorf("a Degraded app must say so, even with a canary: %q", got)
	}
	note := canaryFreezeNote(c)
	if !strings.Contains(note, "Canary/prod/api is at step 2/5, weight 20%, 1 failed checks of 5") || !strings.Contains(note, "Flagger goes on") {
		t.Errorf("freeze note = %q", note)
	}
	if got := healthWhy(&status.HealthDetail{Rule: "Rollout", Message: "paused at step 3/8"}); got != "Rollout: paused at step 3/8" {
		t.Errorf("healthWhy = %q", got)
	}
}
