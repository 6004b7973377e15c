package engine_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// TestAdoptedObjectDefaultsAreNotDrift: a Deployment first made with
// `kubectl create` leaves kubectl owning every field the apiserver
// defaulted. When Git then declares it, those defaults must not read as a
// person's hand-added drift; a label the person really set still does.
func TestAdoptedObjectDefaultsAreNotDrift(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "adopt")
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: map[string]string{"app": "web", "owner": "lao-li"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:1"}}},
			},
		},
	}
	if _, err := enginetest.Clientset(t).AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatal(err)
	}
	repo := gittest.Init(t)
	repo.Commit("adopt web", map[string]string{
		".kdrift/adopt.yaml": appYAML("adopt", "deploy/web", ns, false, false, ""),
		"deploy/web/web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.example/web:1
`,
	})
	e := newEngine(t, repo, nil)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a := appStatus(t, e, "adopt")
	r, ok := resource(a, "Deployment", "web")
	if !ok {
		t.Fatalf("no Deployment/web in %s", describe(a))
	}
	for _, f := range r.Fields {
		if f.Extra && f.Class == status.OwnerPerson && f.Path != "/metadata/labels/owner" {
			t.Errorf("defaulted field %s reported as a person's extra drift", f.Path)
		}
	}
	if f, ok := field(r, "/metadata/labels/owner"); !ok || !f.Extra || f.Class != status.OwnerPerson {
		t.Errorf("the label the person set by hand must stay drift: %+v (found %v)\n%s", f, ok, describe(a))
	}
}
