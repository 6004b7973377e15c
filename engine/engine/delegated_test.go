package engine_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

const hpaYAML = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
`

const canaryYAML = `apiVersion: flagger.app/v1beta1
kind: Canary
metadata:
  name: api
spec:
  provider: kubernetes
  targetRef: {apiVersion: apps/v1, kind: Deployment, name: api}
  service: {port: 8080}
  analysis: {interval: 1m, threshold: 5, maxWeight: 50, stepWeight: 10}
`

// TestDelegatedFieldsNeverHealed: with self-heal on, spec.replicas
// rewritten by the HPA controller (through the scale subresource, as
// kube-controller-manager) and by Flagger (scaling its Canary's target to
// zero) is shown delegated to the HPA and the Canary, never healed, never
// a fight, with no ignore rule; Flagger's -primary Deployment is a
// Generated child of the Canary, and the Canary's progress is the app's.
func TestDelegatedFieldsNeverHealed(t *testing.T) {
	ctx := context.Background()
	enginetest.InstallCRDs(t, "canaries.flagger.app.yaml")
	ns := namespace(t, "delegated")
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/app.yaml":    appYAML("delegated", "deploy/app", ns, true, false, ""),
		"deploy/app/web.yaml": deploymentYAML("web", 2),
		"deploy/app/hpa.yaml": hpaYAML,
		"deploy/app/api.yaml": deploymentYAML("api", 2),
		"deploy/app/can.yaml": canaryYAML,
	})
	e := newEngine(t, repo, nil)
	if _, err := e.Sync(ctx, "delegated", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	cs := enginetest.Clientset(t)
	deps := cs.AppsV1().Deployments(ns)
	canaries := enginetest.Dynamic(t).Resource(schema.GroupVersionResource{Group: "flagger.app", Version: "v1beta1", Resource: "canaries"}).Namespace(ns)

	// Flagger: a -primary copy owned by the Canary, the target scaled to
	// zero, the analysis under way.
	can, err := canaries.Get(ctx, "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	primary := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "api-primary", Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "flagger.app/v1beta1", Kind: "Canary", Name: "api", UID: can.GetUID(), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api-primary"}},
			Template: corev1PodTemplate("api-primary")},
	}
	if _, err := deps.Create(ctx, primary, metav1.CreateOptions{FieldManager: "flagger"}); err != nil {
		t.Fatal(err)
	}
	can.Object["status"] = map[string]any{"phase": "Progressing", "canaryWeight": int64(20), "failedChecks": int64(1), "iterations": int64(0),
		"conditions": []any{map[string]any{"type": "Promoted", "status": "Unknown", "reason": "Progressing", "message": "New revision detected, progressing canary analysis."}}}
	if _, err := canaries.UpdateStatus(ctx, can, metav1.UpdateOptions{FieldManager: "flagger"}); err != nil {
		t.Fatal(err)
	}

	// Each controller writes again after every pass: without delegation
	// that is a heal each time and a fight by the third.
	for i := range 4 {
		if _, err := deps.UpdateScale(ctx, "web", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: int32(5 + i)}}, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil {
			t.Fatal(err)
		}
		if _, err := deps.Patch(ctx, "api", types.MergePatchType, []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{FieldManager: "flagger"}); err != nil {
			t.Fatal(err)
		}
		if err := e.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
	}
	a := appStatus(t, e, "delegated")
	if len(a.Fights) > 0 {
		t.Fatalf("delegated fields must never be a fight: %+v", a.Fights)
	}
	if a.Sync != status.SyncSynced {
		t.Fatalf("delegated fields are not drift:\n%s", describe(a))
	}
	web, _ := deps.Get(ctx, "web", metav1.GetOptions{})
	api, _ := deps.Get(ctx, "api", metav1.GetOptions{})
	if *web.Spec.Replicas != 8 || *api.Spec.Replicas != 0 {
		t.Fatalf("replicas web=%d api=%d, want the controllers' 8 and 0: kdrift healed a delegated field", *web.Spec.Replicas, *api.Spec.Replicas)
	}
	for _, c := range []struct{ dep, kind, manager string }{{"web", "HorizontalPodAutoscaler", "kube-controller-manager"}, {"api", "Canary", "flagger"}} {
		r, _ := resource(a, "Deployment", c.dep)
		f, ok := field(r, "/spec/replicas")
		if !ok || f.Delegated == nil || f.Delegated.Controller.Kind != c.kind || f.Delegated.Manager != c.manager {
			t.Errorf("%s /spec/replicas: %+v, want delegated to %s as %s", c.dep, f, c.kind, c.manager)
		}
	}
	gen, ok := resource(a, "Deployment", "api-primary")
	if !ok || gen.Status != status.ResourceGenerated || gen.Parent == nil || gen.Parent.Kind != "Canary" {
		t.Errorf("api-primary: %+v, want Generated under Canary/api", gen)
	}
	if len(a.Canaries) != 1 || a.Canaries[0].Weight != 20 || a.Canaries[0].Controller != "Flagger" {
		t.Errorf("canaries: %+v, want Flagger at 20%%", a.Canaries)
	}
	if r, _ := resource(a, "Canary", "api"); r.Health != status.HealthProgressing || r.HealthDetail == nil || r.HealthDetail.Rule != "Canary" {
		t.Errorf("Canary health: %+v", r.HealthDetail)
	}

	// With delegation off, the same rewrite is drift and healed.
	repo.Commit("delegation off", map[string]string{
		".kdrift/app.yaml": appYAML("delegated", "deploy/app", ns, true, false, "  delegation:\n    disabled: true\n"),
	})
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "api healed back to 2 replicas", func() bool {
		if err := e.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		api, _ := deps.Get(ctx, "api", metav1.GetOptions{})
		return *api.Spec.Replicas == 2
	})
}

func corev1PodTemplate(app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example/" + app + ":1.0"}}},
	}
}
