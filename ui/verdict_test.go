package ui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
)

// An app Git is ahead of reads "OutOfSync (waiting for Argo CD)" in the
// apps view, with its own symbol, apart from an app a person drifted;
// the app view says what the owner applied and when.
func TestAppsViewShowsWaitingForTheOwner(t *testing.T) {
	be := newFake()
	applied := *at(14, 56)
	be.apps = append(be.apps,
		status.AppStatus{Name: "ep-qa", File: "argocd/ep-qa.yaml", Path: "envs/qa", Destination: app.Destination{Namespace: "qa"},
			Sync: status.SyncOutOfSync, Difference: status.DifferenceWaiting, Health: status.HealthHealthy, SelfHeal: status.SelfHealOn,
			OutOfSyncSince: at(14, 58), Revision: "13b3b73aa", ComparedAt: testNow,
			Owner: "Argo CD Application argocd/ep-qa", OwnerFile: "argocd/ep-qa.yaml", OwnerEngine: "Argo CD",
			OwnerRevision: &status.OwnerRevision{Engine: "Argo CD", Applied: "c99a92c3a9b1e9a0c0f4c5a3f0e1d2c3b4a59687", AppliedAt: &applied,
				Desired: "13b3b73a1b2c3d4e5f60718293a4b5c6d7e8f901", DesiredRef: "origin/main", Behind: true}},
		status.AppStatus{Name: "ep-prod", File: "argocd/ep-prod.yaml", Path: "envs/prod", Destination: app.Destination{Namespace: "prod"},
			Sync: status.SyncOutOfSync, Difference: status.DifferenceDrift, Health: status.HealthHealthy, SelfHeal: status.SelfHealOn,
			OutOfSyncSince: at(14, 58), Revision: "13b3b73aa", ComparedAt: testNow,
			Owner: "Argo CD Application argocd/ep-prod", OwnerFile: "argocd/ep-prod.yaml", OwnerEngine: "Argo CD"},
	)
	h := newHarness(t, be, testConfig())
	h.send(windowSize(160, 30))
	h.wantScreen("⧗ OutOfSync (waiting for Argo CD)", "≠ OutOfSync ")
	h.send(windowSize(80, 24))
	for _, l := range strings.Split(h.screen(), "\n") {
		if ansi.StringWidth(l) > 80 {
			t.Errorf("a line is %d wide: %q", ansi.StringWidth(l), l)
		}
	}
	h.send(press("/"))
	for _, r := range "ep-qa" {
		h.send(press(string(r)))
	}
	h.send(press("enter"), press("enter"))
	h.wantScreen("⧗ Argo CD applied c99a92c", "; Git is at 13b3b73 (origin/main)")
}
