package engine_test

import (
	"context"
	"testing"
	"time"

	"kdrift.dev/kdrift/internal/gittest"
)

// TestOwnerSuspendedInGit: a Flux Kustomization suspended in Git by
// someone else (spec.suspend without kdrift's freeze annotations) shows as
// suspended in Git with `flux suspend --reason`'s reason; one kdrift froze
// shows the freeze, not a suspension; both name their engine.
func TestOwnerSuspendedInGit(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "owner-paused")
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", "https://git.example.com/team/gitops.git")
	at := time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)
	until := time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	repo.Commit("Flux", map[string]string{
		"flux/source.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: gitops, namespace: flux-system}
spec: {url: "https://git.example.com/team/gitops"}
`,
		"flux/infra.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: infra
  namespace: flux-system
  annotations:
    suspend.toolkit.fluxcd.io/reason: CHG-981 storage migration
spec:
  sourceRef: {kind: GitRepository, name: gitops}
  path: ./deploy/infra
  targetNamespace: ` + ns + `
  suspend: true
`,
		"flux/podinfo.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: podinfo
  namespace: flux-system
  annotations:
    kdrift.dev/freeze-reason: INC-77
    kdrift.dev/freeze-by: Lao Li <lao.li@example.com>
    kdrift.dev/freeze-at: "` + at + `"
    kdrift.dev/freeze-until: "` + until + `"
    kdrift.dev/freeze-previous: absent
spec:
  sourceRef: {kind: GitRepository, name: gitops}
  path: ./deploy/podinfo
  targetNamespace: ` + ns + `
  suspend: true
`,
		"deploy/infra/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: infra}\n",
		"deploy/podinfo/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: podinfo}\n",
	})
	e := newEngine(t, repo, nil)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	infra := appStatus(t, e, "infra")
	if infra.OwnerEngine != "Flux" || infra.OwnerPaused != "suspended in Git: CHG-981 storage migration" {
		t.Errorf("infra: engine %q paused %q, want Flux and suspended in Git with the reason", infra.OwnerEngine, infra.OwnerPaused)
	}
	pi := appStatus(t, e, "podinfo")
	if pi.OwnerEngine != "Flux" || pi.OwnerPaused != "" || pi.Freeze == nil {
		t.Errorf("podinfo: engine %q paused %q freeze %v, want Flux and kdrift's freeze", pi.OwnerEngine, pi.OwnerPaused, pi.Freeze)
	}
}
