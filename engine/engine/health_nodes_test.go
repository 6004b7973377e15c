package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/gittest"
)

// healthManifests is an app whose Pods run on the control plane's hollow
// nodes: a Deployment (minReadySeconds keeps each rollout visibly
// Progressing for a few seconds), a StatefulSet and a Service.
func healthManifests(image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  minReadySeconds: 4
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: main
        image: %s
        resources:
          requests: {cpu: 500m, memory: 256Mi}
        readinessProbe:
          httpGet: {path: /healthz, port: 8080}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: 2
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: db
        image: registry.example/db:7.2
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
`, image)
}

// TestWorkloadHealthOnNodes: on a control plane with nodes, a synced app is
// Progressing while its Pods start and Healthy once the Deployment
// controller's own status says they are available, every workload with it;
// a new image in Git rolls out the same way, Progressing then Healthy.
func TestWorkloadHealthOnNodes(t *testing.T) {
	cp, cs, _ := deliveryCluster(t, "health")
	ctx := context.Background()

	repo := gittest.Init(t)
	repo.Commit("web", map[string]string{
		".kdrift/web.yaml":  appYAML("web", "apps/web", "health", false, false, ""),
		"apps/web/web.yaml": healthManifests("registry.example/web:1.0"),
	})
	e, err := engine.New(engine.Options{Repo: repo.Dir, Kubeconfig: cp.Kubeconfig, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}

	rollout := func(what string) {
		t.Helper()
		res, err := e.Sync(ctx, "web", engine.SyncOptions{})
		if err != nil || res.Err != "" || res.Failed() > 0 {
			t.Fatalf("%s: sync: %v %s %v", what, err, res.Err, res.Objects)
		}
		var seen []status.Health
		deadline := time.Now().Add(90 * time.Second)
		for {
			if err := e.Reconcile(ctx, "web"); err != nil {
				t.Fatal(err)
			}
			a := appStatus(t, e, "web")
			if len(seen) == 0 || seen[len(seen)-1] != a.Health {
				seen = append(seen, a.Health)
			}
			if a.Health == status.HealthHealthy {
				for _, r := range a.Resources {
					if r.Health != status.HealthHealthy {
						t.Fatalf("%s: app Healthy but %s/%s is %s", what, r.Ref.Kind, r.Ref.Name, r.Health)
					}
				}
				break
			}
			if time.Now().After(deadline) {
				var rs []string
				for _, r := range a.Resources {
					rs = append(rs, fmt.Sprintf("%s/%s %s", r.Ref.Kind, r.Ref.Name, r.Health))
				}
				t.Fatalf("%s: not Healthy within 90s; health went %v; resources: %s", what, seen, strings.Join(rs, ", "))
			}
			time.Sleep(250 * time.Millisecond)
		}
		if seen[0] != status.HealthProgressing {
			t.Fatalf("%s: health went %v, want Progressing first, then Healthy", what, seen)
		}
	}

	rollout("first sync")
	repo.Commit("web 1.1", map[string]string{"apps/web/web.yaml": healthManifests("registry.example/web:1.1")})
	rollout("new image")

	d, err := cs.AppsV1().Deployments("health").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry.example/web:1.1" || d.Status.UpdatedReplicas != 3 || d.Status.AvailableReplicas != 3 {
		t.Fatalf("after the rollout: image %s, updated %d, available %d", img, d.Status.UpdatedReplicas, d.Status.AvailableReplicas)
	}
	pods, err := cs.CoreV1().Pods("health").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	// The old Pods end (Succeeded, as the fake runtime stops them); the
	// new ones run on the nodes.
	running := 0
	for _, p := range pods.Items {
		if p.Spec.Containers[0].Image == "registry.example/web:1.1" && p.DeletionTimestamp == nil {
			if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
				t.Fatalf("pod %s: node %q phase %s", p.Name, p.Spec.NodeName, p.Status.Phase)
			}
			running++
		}
	}
	if running != 3 {
		t.Fatalf("%d Pods of the new image run, want 3", running)
	}
}
