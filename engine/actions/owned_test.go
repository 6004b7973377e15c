package actions

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/app"
)

// argoFixture is an Application as a team writes it, comments and all;
// REPO is the remote's URL.
const argoFixture = `# Guestbook, synced by Argo CD.
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook   # the app's name in Argo CD
  namespace: argocd
spec:
  project: default
  source:
    repoURL: REPO
    path: deploy/guestbook
  destination:
    server: https://kubernetes.default.svc
    namespace: guestbook
  syncPolicy:
    automated:
      prune: true
      selfHeal: true   # Argo CD puts drift back
    syncOptions: [CreateNamespace=true]
`

// fluxFixture is Flux's GitRepository and a Kustomization, with comments.
const fluxFixture = `# Flux reads this repository.
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  url: REPO
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: podinfo
  namespace: flux-system
  annotations:
    team: web # who to call
spec:
  interval: 10m   # every ten minutes
  sourceRef:
    kind: GitRepository
    name: flux-system
  path: ./deploy/podinfo
  prune: true
`

// newOwnedRemote makes a bare remote holding an Argo CD Application, a
// Flux Kustomization and an app-of-apps whose children are generated.
func newOwnedRemote(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	remote := filepath.Join(root, "remote.git")
	gitRun(t, root, "init", "-q", "--bare", "-b", "main", remote)
	seed := filepath.Join(root, "seed")
	gitRun(t, root, "clone", "-q", remote, seed)
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
	writeFile(t, seed, "argocd/guestbook.yaml", strings.ReplaceAll(argoFixture, "REPO", "file://"+remote))
	writeFile(t, seed, "flux/podinfo.yaml", strings.ReplaceAll(fluxFixture, "REPO", remote+"/"))
	writeFile(t, seed, "argocd/root.yaml", strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(argoFixture, "REPO", remote), "guestbook", "root"), "deploy/root", "apps"))
	writeFile(t, seed, "apps/kustomization.yaml", "namePrefix: prod-\nresources: [child.yaml]\n")
	writeFile(t, seed, "apps/child.yaml", strings.ReplaceAll(strings.ReplaceAll(argoFixture, "REPO", remote), "name: guestbook", "name: child"))
	writeFile(t, seed, "deploy/guestbook/cm.yaml", cm)
	writeFile(t, seed, "deploy/root/cm.yaml", cm)
	writeFile(t, seed, "deploy/podinfo/cm.yaml", cm)
	gitRun(t, seed, "add", "-A")
	gitRun(t, seed, "commit", "-q", "-m", "Argo CD and Flux layout")
	gitRun(t, seed, "push", "-q", "origin", "main")
	return remote
}

func TestFreezeArgoApplicationWritesSelfHealAndAnnotations(t *testing.T) {
	isolate(t)
	remote := newOwnedRemote(t)
	dir := cloneOf(t, remote)
	r := openRepo(t, dir, newClock())
	ctx := context.Background()
	original := readFile(t, dir, "argocd/guestbook.yaml")

	res, err := r.Freeze(ctx, FreezeRequest{Selection: Selection{Apps: []string{"argocd/guestbook"}}, Reason: "INC-7 hand scale", For: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if log := gitRun(t, remote, "log", "-1", "--format=%s|%(trailers:key=Kdrift-Action,valueonly,separator=%x2C)|%(trailers:key=Kdrift-App,valueonly,separator=%x2C)"); log != "freeze(guestbook): INC-7 hand scale|freeze|guestbook" {
		t.Fatalf("log: %s (%+v)", log, res)
	}
	diff := gitRun(t, remote, "diff", "-U0", "main~1", "main")
	for _, want := range []string{
		"-      selfHeal: true   # Argo CD puts drift back\n+      selfHeal: false   # Argo CD puts drift back",
		"+  annotations:\n" +
			"+    kdrift.dev/freeze-reason: \"INC-7 hand scale\"\n" +
			"+    kdrift.dev/freeze-by: \"Lao Li <lao.li@example.com>\"\n" +
			"+    kdrift.dev/freeze-at: \"2026-12-02T15:00:00Z\"\n" +
			"+    kdrift.dev/freeze-until: \"2026-12-02T17:00:00Z\"\n" +
			"+    kdrift.dev/freeze-previous: \"true\"",
	} {
		if !strings.Contains(diff, want) {
			t.Fatalf("diff lacks\n%s\n---\n%s", want, diff)
		}
	}
	if n := strings.Count(diff, "\n+") - strings.Count(diff, "\n+++"); n != 7 {
		t.Fatalf("diff adds %d lines, want 7:\n%s", n, diff)
	}
	if d := gitRun(t, remote, "diff", "--name-only", "main~1", "main"); d != "argocd/guestbook.yaml" {
		t.Fatalf("changed files: %s", d)
	}
	// Frozen again: refused, naming the freeze.
	if _, err := r.Freeze(ctx, FreezeRequest{Selection: Selection{Apps: []string{"guestbook"}}, Reason: "again"}); err == nil || !strings.Contains(err.Error(), "already frozen by Lao Li") {
		t.Fatalf("second freeze: %v", err)
	}
	// Unfreeze restores the file byte for byte.
	if _, err := r.Unfreeze(ctx, UnfreezeRequest{Selection: Selection{Apps: []string{"guestbook"}}, Reason: "INC-7 done"}); err != nil {
		t.Fatal(err)
	}
	if got := gitRun(t, remote, "show", "main:argocd/guestbook.yaml"); got != strings.TrimSpace(original) {
		t.Fatalf("round trip changed the file:\n%s", got)
	}
	fsckClean(t, dir, remote)
}

func TestFreezeFluxKustomizationWritesSuspend(t *testing.T) {
	isolate(t)
	remote := newOwnedRemote(t)
	dir := cloneOf(t, remote)
	r := openRepo(t, dir, newClock())
	ctx := context.Background()
	original := readFile(t, dir, "flux/podinfo.yaml")
	if _, err := r.Freeze(ctx, FreezeRequest{Selection: Selection{Apps: []string{"podinfo"}}, Reason: "INC-8 stop Flux"}); err != nil {
		t.Fatal(err)
	}
	diff := gitRun(t, remote, "diff", "-U0", "main~1", "main")
	want := "+    kdrift.dev/freeze-reason: \"INC-8 stop Flux\"\n" +
		"+    kdrift.dev/freeze-by: \"Lao Li <lao.li@example.com>\"\n" +
		"+    kdrift.dev/freeze-at: \"2026-12-02T15:00:00Z\"\n" +
		"+    kdrift.dev/freeze-previous: \"absent\""
	if !strings.Contains(diff, "+  suspend: true") || !strings.Contains(diff, want) || strings.Count(diff, "\n-") != strings.Count(diff, "\n---") {
		t.Fatalf("diff:\n%s", diff)
	}
	frozen := gitRun(t, remote, "show", "main:flux/podinfo.yaml")
	if !strings.Contains(frozen, "    team: web # who to call\n    kdrift.dev/freeze-reason") || !strings.Contains(frozen, "  interval: 10m   # every ten minutes") {
		t.Fatalf("frozen file lost its layout:\n%s", frozen)
	}
	// An ignore rule goes into spec.ignore.
	if _, err := r.Ignore(ctx, IgnoreRequest{App: "flux-system/podinfo", Rule: ruleFor("apps", "Deployment", "/spec/replicas"), Reason: "HPA owns replicas"}); err != nil {
		t.Fatal(err)
	}
	if d := gitRun(t, remote, "diff", "-U0", "main~1", "main"); !strings.Contains(d, "+  ignore:\n+    - target: {group: \"apps\", kind: \"Deployment\"}\n+      jsonPointers: [\"/spec/replicas\"]") {
		t.Fatalf("ignore diff:\n%s", d)
	}
	if _, err := r.Unfreeze(ctx, UnfreezeRequest{Selection: Selection{Apps: []string{"podinfo"}}, Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	got := gitRun(t, remote, "show", "main:flux/podinfo.yaml")
	if strings.Contains(got, "suspend") || strings.Contains(got, "kdrift.dev/freeze") || !strings.HasPrefix(got, strings.TrimSpace(original)) {
		t.Fatalf("after unfreeze:\n%s", got)
	}
}

func TestIgnoreAppendsToApplicationIgnoreDifferences(t *testing.T) {
	isolate(t)
	remote := newOwnedRemote(t)
	dir := cloneOf(t, remote)
	r := openRepo(t, dir, newClock())
	if _, err := r.Ignore(context.Background(), IgnoreRequest{App: "guestbook", Rule: ruleFor("apps", "Deployment", "/spec/replicas"), Reason: "HPA"}); err != nil {
		t.Fatal(err)
	}
	d := gitRun(t, remote, "diff", "-U0", "main~1", "main")
	if !strings.Contains(d, "+  ignoreDifferences:\n+    - group: \"apps\"\n+      kind: \"Deployment\"\n+      jsonPointers: [\"/spec/replicas\"]") {
		t.Fatalf("diff:\n%s", d)
	}
}

func TestGeneratedApplicationIsRefusedNamingItsSource(t *testing.T) {
	isolate(t)
	remote := newOwnedRemote(t)
	dir := cloneOf(t, remote)
	r := openRepo(t, dir, newClock())
	head := gitRun(t, remote, "rev-parse", "main")
	_, err := r.Freeze(context.Background(), FreezeRequest{Selection: Selection{Apps: []string{"prod-child"}}, Reason: "x"})
	if err == nil || !strings.Contains(err.Error(), "generated by App root (apps)") || !strings.Contains(err.Error(), "not a document kdrift can edit") {
		t.Fatalf("freeze of a generated Application: %v", err)
	}
	if got := gitRun(t, remote, "rev-parse", "main"); got != head {
		t.Fatal("a refused action committed")
	}
}

// ruleFor is an ignore rule of one JSON pointer on a kind.
func ruleFor(group, kind, ptr string) app.IgnoreRule {
	return app.IgnoreRule{Group: group, Kind: kind, JSONPointers: []string{ptr}}
}

func TestResourceFreezeOfAnOwnedAppIsRefused(t *testing.T) {
	isolate(t)
	remote := newOwnedRemote(t)
	dir := cloneOf(t, remote)
	r := openRepo(t, dir, newClock())
	head := gitRun(t, remote, "rev-parse", "main")
	web := app.ResourceRef{Group: "apps", Kind: "Deployment", Name: "web"}
	_, err := r.FreezeResource(context.Background(), ResourceFreezeRequest{App: "guestbook", Resources: []app.ResourceRef{web}, Fields: []string{"/spec/replicas"}, Reason: "INC-8 keep the scale"})
	var owned *OwnedFreezeError
	if !errors.As(err, &owned) || owned.App != "guestbook" {
		t.Fatalf("field freeze of an Argo CD app: %v", err)
	}
	if !strings.Contains(err.Error(), "freeze the whole app") {
		t.Fatalf("error does not say what to do: %v", err)
	}
	if now := gitRun(t, remote, "rev-parse", "main"); now != head {
		t.Fatalf("a commit was made: %s -> %s", head, now)
	}
}
