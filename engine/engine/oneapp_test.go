package engine_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// TestOneAppEqualsFullPass: a one-shot engine asked for one app (as
// `kdrift diff APP` opens it, with the disk caches of discovery and
// renders, in a repository where an Argo CD app-of-apps makes discovery
// render) reports exactly what a full pass over every app reports for
// that app, from a cold cache and from a warm one, and after a commit
// that changed another app only.
func TestOneAppEqualsFullPass(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "oneapp")
	files := map[string]string{
		".kdrift/web.yaml":              appYAML("web", "deploy/web", ns, false, false, ""),
		"deploy/web/kustomization.yaml": "resources: [dep.yaml, cm.yaml]\n",
		"deploy/web/dep.yaml":           deploymentYAML("web", 2),
		"deploy/web/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  k: v\n",
		// An app-of-apps of this repository: discovery renders it.
		"argocd/root.yaml":               "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: root\n  namespace: argocd\nspec:\n  source:\n    repoURL: https://github.com/example/gitops\n    path: argocd/apps\n  destination:\n    namespace: argocd\n",
		"argocd/apps/kustomization.yaml": "resources: [child.yaml]\n",
		"argocd/apps/child.yaml":         "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: child\n  namespace: argocd\nspec:\n  source:\n    repoURL: https://github.com/example/gitops\n    path: deploy/other-0\n  destination:\n    namespace: " + ns + "\n",
	}
	for i := 0; i < 5; i++ {
		dir := fmt.Sprintf("deploy/other-%d", i)
		files[dir+"/kustomization.yaml"] = "resources: [cm.yaml]\n"
		files[dir+"/cm.yaml"] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other-%d\ndata:\n  k: v\n", i)
		files[fmt.Sprintf(".kdrift/other-%d.yaml", i)] = appYAML(fmt.Sprintf("other-%d", i), dir, ns, false, false, "")
	}
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", "https://github.com/example/gitops.git")
	repo.Commit("apps", files)
	setup := newEngine(t, repo, nil)
	for _, n := range []string{"web", "other-1", "other-2"} {
		if res, err := setup.Sync(ctx, n, engine.SyncOptions{}); err != nil {
			t.Fatalf("sync %s: %v\n%s", n, err, describe(res.Status))
		}
	}
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}}
	if _, err := enginetest.Clientset(t).AppsV1().Deployments(ns).UpdateScale(ctx, "web", s, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	caches := t.TempDir()
	oneShot := func(apps ...string) *engine.Engine {
		return newEngine(t, repo, func(o *engine.Options) {
			o.ReadOnly = true
			o.Apps = apps
			o.RenderCacheDir = caches + "/render"
			o.DiscoverCacheDir = caches + "/discover"
			o.FetchFresh = 5 * time.Second
		})
	}
	same := func(when string) {
		t.Helper()
		full := oneShot()
		if err := full.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		want := appStatus(t, full, "web")
		if want.Sync != status.SyncOutOfSync {
			t.Fatalf("%s: full pass: web should be OutOfSync:\n%s", when, describe(want))
		}
		for round := 0; round < 2; round++ { // a cold cache, then a warm one
			one := oneShot("web")
			if err := one.Reconcile(ctx, "web"); err != nil {
				t.Fatal(err)
			}
			got := appStatus(t, one, "web")
			got.ComparedAt, want.ComparedAt = time.Time{}, time.Time{}
			got.OutOfSyncSince, want.OutOfSyncSince = nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, round %d: one app:\n%s\nwant (full pass):\n%s", when, round, describe(got), describe(want))
			}
			if len(one.Apps()) != 1 {
				t.Fatalf("%s: the one-app engine compared %d apps, want 1", when, len(one.Apps()))
			}
		}
	}
	same("first commit")
	repo.Commit("other", map[string]string{"deploy/other-3/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other-3\ndata:\n  k: changed\n"})
	same("after a commit to another app")
}
