package engine_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// argoOverrides is an Application whose kustomize overrides rename,
// retag, rescale, label and patch the web Deployment.
func argoOverrides(ns string) string {
	return `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  namespace: argocd
spec:
  source:
    repoURL: https://git.example.com/team/gitops
    path: deploy/web
    kustomize:
      namePrefix: team-
      images: [registry.example/web=registry.example.com/web:1.28]
      replicas: [{name: web, count: 4}]
      commonLabels: {tier: front}
      commonAnnotations: {owner: team-a}
      patches:
        - target: {kind: Deployment}
          patch: |-
            - op: add
              path: /spec/minReadySeconds
              value: 5
  destination:
    name: in-cluster
    namespace: ` + ns + `
  syncPolicy:
    automated: {selfHeal: true}
`
}

// TestArgoKustomizeOverridesCompareSynced: objects Argo CD applied from
// the Application's overridden render compare Synced, under the
// overridden name.
func TestArgoKustomizeOverridesCompareSynced(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "argo-overrides")
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", "https://git.example.com/team/gitops.git")
	hash := repo.Commit("web with overrides", map[string]string{
		"argocd/web.yaml":               argoOverrides(ns),
		"deploy/web/kustomization.yaml": "resources: [dep.yaml]\n",
		"deploy/web/dep.yaml":           deploymentYAML("web", 2),
	})

	// Render as Argo CD would, and apply it as Argo CD does.
	src, err := source.Open(ctx, source.Options{Location: repo.Dir})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := src.Snapshot(hash)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := snap.Apps().Find("web")
	if !ok {
		t.Fatalf("web not discovered: %+v", snap.Apps().Invalid)
	}
	objs, err := render.NewRenderer().RenderApp(ctx, snap, a.Spec.Path, a.RenderHelm())
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].GetName() != "team-web" {
		t.Fatalf("render = %v", objs)
	}
	d := objs[0]
	d.SetNamespace(ns)
	ann := d.GetAnnotations()
	ann["argocd.argoproj.io/tracking-id"] = "web:apps/Deployment:" + ns + "/team-web"
	d.SetAnnotations(ann)
	js, err := d.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	force := true
	deps := enginetest.Clientset(t).AppsV1().Deployments(ns)
	if _, err := deps.Patch(ctx, "team-web", types.ApplyPatchType, js, metav1.PatchOptions{FieldManager: "argocd-controller", Force: &force}); err != nil {
		t.Fatal(err)
	}
	live, err := deps.Get(ctx, "team-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := live.Spec.Template.Spec.Containers[0].Image; img != "registry.example.com/web:1.28" || *live.Spec.Replicas != 4 || live.Spec.MinReadySeconds != 5 || live.Labels["tier"] != "front" {
		t.Fatalf("applied Deployment: image %s replicas %d minReadySeconds %d labels %v", img, *live.Spec.Replicas, live.Spec.MinReadySeconds, live.Labels)
	}

	e := newEngine(t, repo, nil)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	st := appStatus(t, e, "web")
	if st.Sync != status.SyncSynced || st.Owner != "Argo CD Application argocd/web" {
		t.Fatalf("objects applied from the overridden render must compare Synced:\n%s owner=%q", describe(st), st.Owner)
	}
	if _, ok := resource(st, "Deployment", "team-web"); !ok {
		t.Fatalf("the app does not track team-web:\n%s", describe(st))
	}
}
