package actions

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

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

// helmReleaseHead and helmReleaseValues frame a HelmRelease of Flux's
// reference layout (fluxtest), comments and all; its driftDetection goes
// between them, and a comment after the document.
const (
	helmReleaseHead = `# podinfo, released by helm-controller.
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: podinfo   # the team's namespace
spec:
  interval: 10m   # every ten minutes
  releaseName: podinfo
  chart:
    spec:
      chart: ./charts/podinfo
      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
`
	helmReleaseValues = `  values:
    environment: base   # patched per environment
`
	helmReleaseTail = "# reviewed by the platform team\n"
)

// TestIgnoreHelmReleaseWritesDriftDetectionIgnore: a HelmRelease's ignore
// rule goes to spec.driftDetection.ignore as {paths, target}, whatever is
// already written there; the edit adds lines only, leaves
// driftDetection.mode as it is, and discovery reads the rule back. Flow
// style is refused naming the field.
func TestIgnoreHelmReleaseWritesDriftDetectionIgnore(t *testing.T) {
	isolate(t)
	remote := newFluxLayoutRemote(t)
	dir := cloneOf(t, remote)
	r, err := Open(context.Background(), RepoOptions{Repo: dir, Author: testAuthor, Now: newClock().Now, ClusterPath: "clusters/production"})
	if err != nil {
		t.Fatal(err)
	}
	const release = "apps/base/podinfo/release.yaml"
	// podinfo as discovery reads it with release.yaml holding text.
	podinfo := func(t *testing.T, text string) app.App {
		t.Helper()
		writeFile(t, dir, release, text)
		gitRun(t, dir, "commit", "-q", "-a", "--allow-empty", "-m", "release")
		snap, err := r.snapshotOf(plumbing.NewHash(gitRun(t, dir, "rev-parse", "HEAD")))
		if err != nil {
			t.Fatal(err)
		}
		res := snap.Apps()
		for _, in := range res.Invalid {
			t.Fatalf("invalid: %s: %v\n%s", in.Name, in.Err, text)
		}
		a, ok := res.Find("podinfo")
		if !ok || a.Origin == nil || a.Origin.Kind != "HelmRelease" {
			t.Fatalf("podinfo not discovered as a HelmRelease: %+v", a.Origin)
		}
		return a
	}
	rule := app.IgnoreRule{Group: "apps", Kind: "Deployment", Name: "podinfo", JSONPointers: []string{"/spec/replicas", "/spec/template/spec/containers/0/image"}}
	item := func(dash string) string {
		return dash + `- paths: ["/spec/replicas", "/spec/template/spec/containers/0/image"]` + "\n" +
			dash + `  target: {group: "apps", kind: "Deployment", name: "podinfo"}` + "\n"
	}
	earlier := app.IgnoreRule{Kind: "Deployment", JSONPointers: []string{"/metadata/annotations/ignored-by-flux"}}
	for _, c := range []struct {
		name, drift string
		// want is what replaces drift and the values after it; "" when
		// the edit is refused with an error holding refused.
		want, refused string
		before        []app.IgnoreRule
		heals         bool
	}{
		{
			name:  "driftDetection absent",
			want:  helmReleaseValues + "  driftDetection:\n    ignore:\n" + item("      "),
			heals: false,
		},
		{
			name:  "driftDetection without ignore",
			drift: "  driftDetection:\n    mode: warn   # report only\n",
			want:  "  driftDetection:\n    mode: warn   # report only\n    ignore:\n" + item("      ") + helmReleaseValues,
			heals: false,
		},
		{
			name:  "driftDetection with nothing under it",
			drift: "  driftDetection:   # filled in later\n",
			want:  "  driftDetection:   # filled in later\n    ignore:\n" + item("      ") + helmReleaseValues,
		},
		{
			name:  "ignore as a block list",
			drift: "  driftDetection:\n    mode: enabled\n    ignore:\n    - paths: [\"/metadata/annotations/ignored-by-flux\"]   # a webhook sets it\n      target: {kind: Deployment}\n",
			want: "  driftDetection:\n    mode: enabled\n    ignore:\n    - paths: [\"/metadata/annotations/ignored-by-flux\"]   # a webhook sets it\n      target: {kind: Deployment}\n" +
				item("    ") + helmReleaseValues,
			before: []app.IgnoreRule{earlier},
			heals:  true,
		},
		{
			name:  "ignore an empty list",
			drift: "  driftDetection:\n    mode: disabled\n    ignore: []\n",
			want:  "  driftDetection:\n    mode: disabled\n    ignore:\n" + item("      ") + helmReleaseValues,
		},
		{
			name:  "driftDetection as a flow mapping",
			drift: "  driftDetection: {mode: enabled}\n",
			want:  "  driftDetection:\n    mode: enabled\n    ignore:\n" + item("      ") + helmReleaseValues,
			heals: true,
		},
		{
			name:  "ignore as a flow list",
			drift: "  driftDetection:\n    mode: enabled\n    ignore: [{paths: [\"/metadata/annotations/ignored-by-flux\"], target: {kind: Deployment}}]\n",
			want: "  driftDetection:\n    mode: enabled\n    ignore:\n      - {paths: [\"/metadata/annotations/ignored-by-flux\"], target: {kind: Deployment}}\n" +
				item("      ") + helmReleaseValues,
			before: []app.IgnoreRule{earlier},
			heals:  true,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := helmReleaseHead + c.drift + helmReleaseValues + helmReleaseTail
			a := podinfo(t, src)
			out, err := appendOwnedIgnore([]byte(src), a, rule)
			if c.refused != "" {
				if err == nil || !strings.Contains(err.Error(), c.refused) {
					t.Fatalf("refusal: %v\nwant %s", err, c.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := helmReleaseHead + c.want + helmReleaseTail; string(out) != want {
				t.Fatalf("edited file:\n%s\nwant:\n%s", out, want)
			}
			got := podinfo(t, string(out))
			want := append(append([]app.IgnoreRule(nil), c.before...), rule)
			if fmt.Sprint(got.Spec.IgnoreDifferences) != fmt.Sprint(want) {
				t.Fatalf("rules read back: %+v, want %+v", got.Spec.IgnoreDifferences, want)
			}
			if got.Origin.Heals != c.heals {
				t.Fatalf("heals %v after the edit, want %v: the mode changed", got.Origin.Heals, c.heals)
			}
		})
	}

	// A rule of field managers: helm-controller takes JSON pointers only.
	src := helmReleaseHead + helmReleaseValues
	a := podinfo(t, src)
	if _, err := appendOwnedIgnore([]byte(src), a, app.IgnoreRule{Kind: "Deployment", ManagedFieldsManagers: []string{"hpa"}}); err == nil || !strings.Contains(err.Error(), "spec.driftDetection.ignore takes JSON pointers (paths), not field managers") {
		t.Fatalf("a field manager rule: %v", err)
	}
}
