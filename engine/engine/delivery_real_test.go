package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/controlplane"
	"kdrift.dev/kdrift/internal/deliverytest"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// deliveryCluster is a second control plane, with hollow nodes so that
// Pods run and become Ready (the delivery controllers' among them), and a
// namespace ns on it.
func deliveryCluster(t *testing.T, ns string) (*controlplane.ControlPlane, kubernetes.Interface, dynamic.Interface) {
	t.Helper()
	if testing.Short() {
		t.Skip("slow tier: -short (a control plane with nodes and a real delivery controller)")
	}
	ctx := context.Background()
	cp, err := enginetest.Start(ctx, enginetest.Options{Nodes: 2})
	if err != nil {
		t.Fatalf("control plane with nodes: %v", err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stop the control plane: %v", err)
		}
	})
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return cp, cs, dyn
}

// healerWatch runs kdrift's healing passes of one app beside a delivery
// controller and checks, after every pass, what must always hold: no
// fight, and kdrift never takes back a field the controller scaled (once
// the controller owns a Deployment's spec.replicas, kdrift's apply never
// owns it again).
type healerWatch struct {
	t      *testing.T
	e      *engine.Engine
	cs     kubernetes.Interface
	app    string
	ns     string
	deploy string
	// taken is set once the controller owns the Deployment's replicas.
	taken  bool
	passes int
	seen   []string
	// phase, when set, is the controller's own phase, shown beside the
	// app's states in seen.
	phase func() string
	start time.Time
}

// until runs passes until cond holds for the app, for at most limit.
func (w *healerWatch) until(what string, limit time.Duration, cond func(a status.AppStatus) bool) status.AppStatus {
	w.t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(limit)
	for {
		if err := w.e.Reconcile(ctx, w.app); err != nil {
			w.t.Fatal(err)
		}
		w.passes++
		a := appStatus(w.t, w.e, w.app)
		if len(a.Fights) > 0 {
			w.t.Fatalf("%s: kdrift fights the delivery controller: %+v\n%s", what, a.Fights, describe(a))
		}
		w.checkReplicas(what)
		line := fmt.Sprintf("%s/%s", a.Sync, a.Health)
		if w.phase != nil {
			line += " (" + w.phase() + ")"
		}
		if w.start.IsZero() {
			w.start = time.Now()
		}
		if len(w.seen) == 0 || !strings.HasSuffix(w.seen[len(w.seen)-1], " "+line) {
			w.seen = append(w.seen, fmt.Sprintf("%.1fs %s", time.Since(w.start).Seconds(), line))
		}
		if cond(a) {
			return a
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("%s: not within %s; the app went %v:\n%s", what, limit, w.seen, describe(a))
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// checkReplicas fails the test if kdrift took the Deployment's replicas
// back after the controller had them.
func (w *healerWatch) checkReplicas(what string) {
	w.t.Helper()
	d, err := w.cs.AppsV1().Deployments(w.ns).Get(context.Background(), w.deploy, metav1.GetOptions{})
	if err != nil {
		return // not created yet
	}
	var kdriftOwns, otherOwns bool
	for _, mf := range d.ManagedFields {
		if mf.FieldsV1 == nil || !strings.Contains(mf.FieldsV1.GetRawString(), `"f:replicas"`) {
			continue
		}
		if mf.Manager == apply.Manager && mf.Operation == metav1.ManagedFieldsOperationApply {
			kdriftOwns = true
		} else {
			otherOwns = true
		}
	}
	if otherOwns && !kdriftOwns {
		w.taken = true
	}
	if w.taken && kdriftOwns {
		w.t.Fatalf("%s: kdrift applied spec.replicas of Deployment %s back (replicas %d) after the delivery controller had scaled it: a heal of a delegated field", what, w.deploy, *d.Spec.Replicas)
	}
}

func delegatedTo(r status.ResourceStatus, kind, manager string) bool {
	f, ok := field(r, "/spec/replicas")
	return ok && f.Delegated != nil && f.Delegated.Controller.Kind == kind && f.Delegated.Manager == manager
}

const rolloutAppYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: main
        image: %s
---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  workloadRef:
    apiVersion: apps/v1
    kind: Deployment
    name: web
    scaleDown: onsuccess
  strategy:
    canary:
      steps:
      - setWeight: 34
      - pause: {}
`

// TestRealArgoRolloutBesideTheHealer runs the real Argo Rollouts
// controller on the hollow nodes beside kdrift's healing passes of the
// same app: a Rollout whose workloadRef Deployment is in Git. The
// controller scales the Deployment to zero and runs each new template
// as a canary; kdrift shows the Deployment's replicas delegated to the
// Rollout (no ignore rule), never heals them and never fights, shows the
// canary's step and weight while it is paused, Healthy once promoted, and
// Degraded with the reason when it is aborted.
func TestRealArgoRolloutBesideTheHealer(t *testing.T) {
	const ns = "rollouts"
	cp, cs, dyn := deliveryCluster(t, ns)
	deliverytest.Rollouts.Start(t, cp.Config, cp.Kubeconfig, ns)
	ctx := context.Background()
	rollouts := dyn.Resource(schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}).Namespace(ns)

	repo := gittest.Init(t)
	repo.Commit("web", map[string]string{
		".kdrift/web.yaml":  appYAML("web", "apps/web", ns, true, false, ""),
		"apps/web/web.yaml": fmt.Sprintf(rolloutAppYAML, "registry.example/web:1.0"),
	})
	e, err := engine.New(engine.Options{Repo: repo.Dir, Kubeconfig: cp.Kubeconfig, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	w := &healerWatch{t: t, e: e, cs: cs, app: "web", ns: ns, deploy: "web"}
	w.phase = func() string {
		ro, err := rollouts.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return phase(ro)
	}

	// The first revision: the Rollout runs it at once, and then scales
	// the referenced Deployment to zero (scaleDown: onsuccess).
	a := w.until("first revision Healthy, the Deployment scaled down by the Rollout", 2*time.Minute, func(a status.AppStatus) bool {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && *d.Spec.Replicas == 0 && a.Health == status.HealthHealthy && a.Sync == status.SyncSynced
	})
	if dep, _ := resource(a, "Deployment", "web"); !delegatedTo(dep, "Rollout", deliverytest.Rollouts.Name) {
		f, _ := field(dep, "/spec/replicas")
		t.Fatalf("the Deployment's replicas: %+v, want delegated to Rollout/web as %s", f, deliverytest.Rollouts.Name)
	}
	ro, _ := resource(a, "Rollout", "web")
	if ro.HealthDetail == nil || ro.HealthDetail.Rule != "Rollout" || !strings.Contains(ro.HealthDetail.Message, "stable") {
		t.Fatalf("Rollout health: %+v", ro.HealthDetail)
	}
	generated := 0
	for _, r := range a.Resources {
		if r.Ref.Kind == "ReplicaSet" && r.Status == status.ResourceGenerated && r.Parent != nil && r.Parent.Kind == "Rollout" {
			generated++
		}
	}
	if generated == 0 {
		t.Fatalf("no ReplicaSet shown Generated under the Rollout:\n%s", describe(a))
	}

	// A new image in Git: kdrift applies the template (not the replicas),
	// the Rollout starts a canary and pauses after its first step.
	repo.Commit("web 1.1", map[string]string{"apps/web/web.yaml": fmt.Sprintf(rolloutAppYAML, "registry.example/web:1.1")})
	a = w.until("the canary paused at its first step", 2*time.Minute, func(a status.AppStatus) bool {
		return len(a.Canaries) == 1 && a.Canaries[0].Phase == "Paused"
	})
	c := a.Canaries[0]
	if c.Controller != "Argo Rollouts" || c.Weight != 34 || c.Steps != 2 || c.Step != 1 {
		t.Fatalf("canary progress %+v, want Argo Rollouts at step 1 of 2, weight 34", c)
	}
	if a.Health != status.HealthProgressing {
		t.Fatalf("app health during the paused canary: %s, want Progressing:\n%s", a.Health, describe(a))
	}
	ro, _ = resource(a, "Rollout", "web")
	if ro.HealthDetail == nil || !strings.Contains(ro.HealthDetail.Message, "paused at step 1/2") || !strings.Contains(ro.HealthDetail.Message, "CanaryPauseStep") {
		t.Fatalf("paused Rollout's health: %+v, want the step and the pause's reason", ro.HealthDetail)
	}

	// Promoted (as `kubectl argo rollouts promote` does): Healthy at the
	// new image, the Deployment still at zero.
	if _, err := rollouts.Patch(ctx, "web", types.MergePatchType, []byte(`{"status":{"pauseConditions":null}}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	w.until("promoted to Healthy", 2*time.Minute, func(a status.AppStatus) bool {
		ro, err := rollouts.Get(ctx, "web", metav1.GetOptions{})
		return err == nil && phase(ro) == "Healthy" && len(a.Canaries) == 0 && a.Health == status.HealthHealthy
	})

	// Another image, then aborted (as `kubectl argo rollouts abort`):
	// Degraded, and the reason is the controller's.
	repo.Commit("web 1.2", map[string]string{"apps/web/web.yaml": fmt.Sprintf(rolloutAppYAML, "registry.example/web:1.2")})
	w.until("the second canary paused", 2*time.Minute, func(a status.AppStatus) bool {
		return len(a.Canaries) == 1 && a.Canaries[0].Phase == "Paused"
	})
	if _, err := rollouts.Patch(ctx, "web", types.MergePatchType, []byte(`{"status":{"abort":true}}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	a = w.until("the aborted canary Degraded", 2*time.Minute, func(a status.AppStatus) bool {
		if a.Health != status.HealthDegraded {
			return false
		}
		ro, _ := resource(a, "Rollout", "web")
		if ro.HealthDetail == nil || !strings.HasPrefix(ro.HealthDetail.Message, "aborted: ") {
			t.Fatalf("the app is Degraded, but not for the abort: %+v", ro.HealthDetail)
		}
		// The first pass may see the abort before the controller acted
		// on it; its reason follows.
		return strings.Contains(ro.HealthDetail.Message, "RolloutAborted")
	})
	ro, _ = resource(a, "Rollout", "web")
	if ro.HealthDetail == nil || !strings.Contains(ro.HealthDetail.Message, "RolloutAborted: Rollout aborted update to revision") {
		t.Fatalf("aborted Rollout's health: %+v, want the abort and the controller's reason", ro.HealthDetail)
	}
	if d, _ := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); *d.Spec.Replicas != 0 {
		t.Fatalf("the Deployment has %d replicas after the canaries, want the Rollout's 0", *d.Spec.Replicas)
	}
	t.Logf("%d healing passes beside Argo Rollouts %s; the app went %v; Rollout health at the end: %s", w.passes, deliverytest.Rollouts.Version, w.seen, ro.HealthDetail.Message)
}

func phase(o *unstructured.Unstructured) string {
	p, _, _ := unstructured.NestedString(o.Object, "status", "phase")
	return p
}

const flaggerAppYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
spec:
  replicas: 2
  selector:
    matchLabels: {app: podinfo}
  template:
    metadata:
      labels: {app: podinfo}
    spec:
      containers:
      - name: main
        image: %s
        ports:
        - {name: http, containerPort: 9898}
---
apiVersion: flagger.app/v1beta1
kind: Canary
metadata:
  name: podinfo
spec:
  provider: kubernetes
  targetRef: {apiVersion: apps/v1, kind: Deployment, name: podinfo}
  progressDeadlineSeconds: 120
  service:
    port: 9898
  analysis:
    interval: 2s
    threshold: 2
    iterations: 2
%s`

// failingWebhook is a pre-rollout check that can never pass: Flagger
// counts each failure against the analysis threshold and rolls back.
const failingWebhook = `    webhooks:
    - name: smoke
      type: pre-rollout
      url: http://127.0.0.1:1/
      timeout: 1s
`

// TestRealFlaggerCanaryBesideTheHealer runs the real Flagger (Kubernetes
// provider) on the hollow nodes beside kdrift's healing passes of the same
// app: Flagger scales the Git-managed Deployment to zero behind its
// -primary copy, scales it up for each analysis and back down after the
// promotion. kdrift never heals those replicas and never fights, shows the
// -primary objects as Generated children of the Canary, the analysis
// while it runs, Healthy once promoted, and Degraded with the reason when
// the analysis fails.
func TestRealFlaggerCanaryBesideTheHealer(t *testing.T) {
	const ns = "flagger"
	cp, cs, dyn := deliveryCluster(t, ns)
	deliverytest.Flagger.Start(t, cp.Config, cp.Kubeconfig, ns)
	ctx := context.Background()
	canaries := dyn.Resource(schema.GroupVersionResource{Group: "flagger.app", Version: "v1beta1", Resource: "canaries"}).Namespace(ns)

	repo := gittest.Init(t)
	repo.Commit("podinfo", map[string]string{
		".kdrift/podinfo.yaml":      appYAML("podinfo", "apps/podinfo", ns, true, false, ""),
		"apps/podinfo/podinfo.yaml": fmt.Sprintf(flaggerAppYAML, "registry.example/podinfo:1.0", ""),
	})
	e, err := engine.New(engine.Options{Repo: repo.Dir, Kubeconfig: cp.Kubeconfig, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	w := &healerWatch{t: t, e: e, cs: cs, app: "podinfo", ns: ns, deploy: "podinfo"}
	canaryPhase := func() string {
		c, err := canaries.Get(ctx, "podinfo", metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return phase(c)
	}
	w.phase = canaryPhase

	// Initialised: the -primary copy serves, the target is at zero.
	a := w.until("the Canary initialised, the target scaled to zero", 2*time.Minute, func(a status.AppStatus) bool {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "podinfo", metav1.GetOptions{})
		return err == nil && *d.Spec.Replicas == 0 && canaryPhase() == "Initialized" && a.Health == status.HealthHealthy && a.Sync == status.SyncSynced
	})
	if dep, _ := resource(a, "Deployment", "podinfo"); !delegatedTo(dep, "Canary", deliverytest.Flagger.Name) {
		f, _ := field(dep, "/spec/replicas")
		t.Fatalf("the target's replicas: %+v, want delegated to Canary/podinfo as %s", f, deliverytest.Flagger.Name)
	}
	for _, g := range []struct{ kind, name string }{{"Deployment", "podinfo-primary"}, {"Service", "podinfo-primary"}, {"Service", "podinfo-canary"}} {
		r, ok := resource(a, g.kind, g.name)
		if !ok || r.Status != status.ResourceGenerated || r.Parent == nil || r.Parent.Kind != "Canary" {
			t.Errorf("%s/%s: %+v, want Generated under Canary/podinfo", g.kind, g.name, r)
		}
	}

	// A new image: Flagger scales the target up, runs two iterations,
	// promotes and scales it back to zero. kdrift shows the analysis.
	repo.Commit("podinfo 1.1", map[string]string{"apps/podinfo/podinfo.yaml": fmt.Sprintf(flaggerAppYAML, "registry.example/podinfo:1.1", "")})
	a = w.until("the analysis shown while it runs", 2*time.Minute, func(a status.AppStatus) bool {
		return len(a.Canaries) == 1 && a.Canaries[0].Phase == "Progressing"
	})
	if c := a.Canaries[0]; c.Controller != "Flagger" || !strings.Contains(c.Analysis, "failed checks of 2") {
		t.Fatalf("canary progress %+v, want Flagger's analysis", c)
	}
	w.until("promoted: Succeeded and Healthy", 3*time.Minute, func(a status.AppStatus) bool {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "podinfo", metav1.GetOptions{})
		return err == nil && *d.Spec.Replicas == 0 && canaryPhase() == "Succeeded" && len(a.Canaries) == 0 && a.Health == status.HealthHealthy
	})
	primary, err := cs.AppsV1().Deployments(ns).Get(ctx, "podinfo-primary", metav1.GetOptions{})
	if err != nil || primary.Spec.Template.Spec.Containers[0].Image != "registry.example/podinfo:1.1" {
		t.Fatalf("after the promotion the primary runs %v (%v), want 1.1", image(primary), err)
	}

	// A failing check: Flagger rolls back; the app is Degraded and says
	// why.
	repo.Commit("podinfo 1.2", map[string]string{"apps/podinfo/podinfo.yaml": fmt.Sprintf(flaggerAppYAML, "registry.example/podinfo:1.2", failingWebhook)})
	a = w.until("the failed canary Degraded", 3*time.Minute, func(a status.AppStatus) bool { return a.Health == status.HealthDegraded })
	can, _ := resource(a, "Canary", "podinfo")
	if can.HealthDetail == nil || can.HealthDetail.Message != "canary failed: Failed: Canary analysis failed, Deployment scaled to zero." {
		t.Fatalf("failed Canary's health: %+v, want the failure and its reason", can.HealthDetail)
	}
	if primary, _ = cs.AppsV1().Deployments(ns).Get(ctx, "podinfo-primary", metav1.GetOptions{}); image(primary) != "registry.example/podinfo:1.1" {
		t.Fatalf("after the rollback the primary runs %s, want 1.1", image(primary))
	}
	t.Logf("%d healing passes beside Flagger %s; the app went %v; Canary health at the end: %s", w.passes, deliverytest.Flagger.Version, w.seen, can.HealthDetail.Message)
}

func image(d *appsv1.Deployment) string {
	if d == nil || len(d.Spec.Template.Spec.Containers) == 0 {
		return ""
	}
	return d.Spec.Template.Spec.Containers[0].Image
}
