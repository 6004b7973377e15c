package controller

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/fight"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

func TestMain(m *testing.M) {
	enginetest.Main(m, enginetest.Options{AfterTests: removeUnattachedRepo})
}

// appRepo commits an App (selfHeal as given) with one Deployment of 2
// replicas into a new repository.
func appRepo(t *testing.T, app, ns string, selfHeal bool) *gittest.Repo {
	t.Helper()
	if _, err := enginetest.Clientset(t).CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/app.yaml": fmt.Sprintf("apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: %s\nspec:\n  path: deploy\n  destination:\n    namespace: %s\n  syncPolicy:\n    selfHeal: %v\n", app, ns, selfHeal),
		"deploy/web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: main
        image: registry.example/web:1.0
`,
	})
	return repo
}

// startOps builds an engine on repo with ops as its observer, syncs it
// once (so the test starts from a synced app, before ops counts), starts
// ops and returns both; Run is left to the test.
func startOps(t *testing.T, repo *gittest.Repo, app string, mod func(*engine.Options), ropts RecorderOptions) (*engine.Engine, *Ops) {
	t.Helper()
	ops := New(Options{MetricsAddr: "127.0.0.1:0", Kubeconfig: enginetest.Kubeconfig(), Leader: true, Recorder: ropts})
	opts := engine.Options{Repo: repo.Dir, Kubeconfig: enginetest.Kubeconfig(), CacheDir: t.TempDir(), Observer: ops.Observer()}
	if mod != nil {
		mod(&opts)
	}
	e, err := engine.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Sync(context.Background(), app, engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := ops.Start(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ops.Stop)
	return e, ops
}

func runEngine(t *testing.T, e *engine.Engine) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// get returns the status code and body of a GET.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// sample finds the value of one series in a text exposition: name with
// exactly the labels given (in the order Prometheus writes them, sorted).
func sample(t *testing.T, exposition, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(exposition, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return v
		}
	}
	t.Fatalf("no series %s in /metrics:\n%s", series, exposition)
	return 0
}

// waitFor waits until cond holds, polling every 10 ms, and says how long
// that took.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for deadline := start.Add(timeout); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
	}
	return time.Since(start)
}

// kdriftEvents lists kdrift's Events about one object.
func kdriftEvents(t *testing.T, ns, kind, name, reason string) []eventsv1.Event {
	t.Helper()
	list, err := enginetest.Clientset(t).EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason && e.ReportingController == ReportingController {
			out = append(out, e)
		}
	}
	return out
}

func scale(t *testing.T, ns, name string, replicas int32, manager string) {
	t.Helper()
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	if _, err := enginetest.Clientset(t).AppsV1().Deployments(ns).UpdateScale(context.Background(), name, s, metav1.UpdateOptions{FieldManager: manager}); err != nil {
		t.Fatal(err)
	}
}

// TestMetricsProbesAndEventAcrossAHeal: /readyz is 503 before the first
// pass and 200 after; a person's scale shows in /metrics as OutOfSync with
// its timestamp and a drifted resource; the heal moves the app back to
// Synced, zeroes the timestamp, counts one heal and one successful apply,
// and leaves exactly one Healed Event on the Deployment (with its UID, so
// kubectl describe shows it).
func TestMetricsProbesAndEventAcrossAHeal(t *testing.T) {
	ctx := context.Background()
	const app, ns = "metrics", "ops-metrics"
	repo := appRepo(t, app, ns, false)
	e, ops := startOps(t, repo, app, nil, RecorderOptions{})
	base := "http://" + ops.Addr()

	if code, body := get(t, base+"/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz before Run: %d %q, want 503", code, body)
	}
	if code, _ := get(t, base+"/healthz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/healthz before Run: %d, want 503 (no heartbeat yet)", code)
	}
	runEngine(t, e)
	waitFor(t, "/readyz 200", 30*time.Second, func() bool { code, _ := get(t, base+"/readyz"); return code == http.StatusOK })
	if code, body := get(t, base+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz: %d %q", code, body)
	}

	_, before := get(t, base+"/metrics")
	lbl := `{app="` + app + `"}`
	if v := sample(t, before, `kdrift_app_sync_status{app="metrics",status="Synced"}`); v != 1 {
		t.Fatalf("sync Synced = %v before the drift", v)
	}
	if v := sample(t, before, "kdrift_app_out_of_sync_since_timestamp_seconds"+lbl); v != 0 {
		t.Fatalf("out of sync since = %v before the drift", v)
	}
	if v := sample(t, before, "kdrift_heals_total"+lbl); v != 0 {
		t.Fatalf("heals = %v before the drift", v)
	}
	if v := sample(t, before, "kdrift_leader"); v != 1 {
		t.Fatalf("kdrift_leader = %v", v)
	}
	sample(t, before, `kdrift_app_info{app="metrics",destination="current/ops-metrics",path="deploy"}`)

	scaledAt := time.Now()
	scale(t, ns, "web", 5, "kubectl")
	var drifted string
	waitFor(t, "OutOfSync in /metrics", 30*time.Second, func() bool {
		_, drifted = get(t, base+"/metrics")
		return strings.Contains(drifted, `kdrift_app_sync_status{app="metrics",status="OutOfSync"} 1`)
	})
	since := sample(t, drifted, "kdrift_app_out_of_sync_since_timestamp_seconds"+lbl)
	if d := time.Duration((since - float64(scaledAt.UnixNano())/1e9) * float64(time.Second)); d < -time.Second || d > 30*time.Second {
		t.Fatalf("out of sync since %v is %s from the scale", since, d)
	}
	if v := sample(t, drifted, "kdrift_app_drifted_resources"+lbl); v != 1 {
		t.Fatalf("drifted resources = %v", v)
	}

	if _, err := e.Sync(ctx, app, engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	var after string
	// A pass Run starts on the heal's own change may still read the
	// informer's older copy for a moment; the status settles on Synced.
	waitFor(t, "the heal in /metrics", 30*time.Second, func() bool {
		_, after = get(t, base+"/metrics")
		return strings.Contains(after, `kdrift_heals_total{app="metrics"} 1`) && strings.Contains(after, `kdrift_app_sync_status{app="metrics",status="Synced"} 1`)
	})
	for series, want := range map[string]float64{
		`kdrift_app_sync_status{app="metrics",status="Synced"}`:    1,
		`kdrift_app_sync_status{app="metrics",status="OutOfSync"}`: 0,
		"kdrift_app_out_of_sync_since_timestamp_seconds" + lbl:     0,
		"kdrift_app_drifted_resources" + lbl:                       0,
		"kdrift_git_reachable":                                     1,
	} {
		if v := sample(t, after, series); v != want {
			t.Errorf("%s = %v after the heal, want %v", series, v, want)
		}
	}
	for _, series := range []string{`kdrift_apply_requests_total{result="success",verb="apply"}`, "kdrift_render_duration_seconds_count", "kdrift_compare_duration_seconds_count", `kdrift_compares_total{tier="dry-run"}`, `workqueue_adds_total{name="kdrift"}`} {
		if v := sample(t, after, series); v < 1 {
			t.Errorf("%s = %v, want at least 1", series, v)
		}
	}
	if !strings.Contains(after, "rest_client_requests_total{") {
		t.Errorf("no client-go REST client metrics in /metrics")
	}

	live, err := enginetest.Clientset(t).AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a Healed Event on Deployment web", 30*time.Second, func() bool { return len(kdriftEvents(t, ns, "Deployment", "web", ReasonHealed)) > 0 })
	time.Sleep(time.Second) // a second Event would have been written by now
	evs := kdriftEvents(t, ns, "Deployment", "web", ReasonHealed)
	if len(evs) != 1 {
		t.Fatalf("%d Healed Events on Deployment web, want 1: %+v", len(evs), evs)
	}
	ev := evs[0]
	if ev.Regarding.UID != live.UID || ev.Regarding.APIVersion != "apps/v1" || ev.Type != corev1.EventTypeNormal || ev.Action != "Heal" || !strings.Contains(ev.Note, "/spec/replicas") {
		t.Fatalf("Healed Event: %+v", ev)
	}
}

// TestFightIsOneAggregatedEvent: a controller that scales back after every
// heal makes kdrift heal several times and then stop; the heals are one
// Healed Event whose series counts them all, not one Event per heal, and
// the fight is one Warning Event.
func TestFightIsOneAggregatedEvent(t *testing.T) {
	const app, ns = "tug", "ops-fight"
	repo := appRepo(t, app, ns, true)
	e, ops := startOps(t, repo, app, func(o *engine.Options) { o.Fight = fight.Options{Rewrites: 3, Window: 10 * time.Minute} },
		RecorderOptions{Window: 2 * time.Second})
	runEngine(t, e)
	base := "http://" + ops.Addr()
	waitFor(t, "/readyz 200", 30*time.Second, func() bool { code, _ := get(t, base+"/readyz"); return code == http.StatusOK })

	heals := func() float64 {
		_, m := get(t, base+"/metrics")
		return sample(t, m, `kdrift_heals_total{app="tug"}`)
	}
	for i := 1; i <= 4; i++ {
		scale(t, ns, "web", 9, "horizontal-pod-autoscaler")
		if i < 4 {
			waitFor(t, fmt.Sprintf("heal %d", i), 30*time.Second, func() bool {
				d, err := enginetest.Clientset(t).AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
				return err == nil && *d.Spec.Replicas == 2 && heals() >= float64(i)
			})
		}
	}
	waitFor(t, "the fight in /metrics", 30*time.Second, func() bool {
		_, m := get(t, base+"/metrics")
		return sample(t, m, `kdrift_fights_total{app="tug"}`) == 1 && sample(t, m, `kdrift_app_fighting_fields{app="tug"}`) == 1
	})
	n := heals()
	if n < 3 {
		t.Fatalf("%v heals before the fight, want at least 3", n)
	}
	// The recorder writes the count within a window of the last heal.
	waitFor(t, "one Healed Event counting every heal", 15*time.Second, func() bool {
		evs := kdriftEvents(t, ns, "Deployment", "web", ReasonHealed)
		return len(evs) == 1 && evs[0].Series != nil && float64(evs[0].Series.Count) == n
	})
	if evs := kdriftEvents(t, ns, "Deployment", "web", ReasonHealed); len(evs) != 1 {
		t.Fatalf("%d Healed Events, want 1", len(evs))
	}
	fights := kdriftEvents(t, ns, "Deployment", "web", ReasonFight)
	if len(fights) != 1 || fights[0].Type != corev1.EventTypeWarning || !strings.Contains(fights[0].Note, "horizontal-pod-autoscaler") || !strings.Contains(fights[0].Note, "/spec/replicas") {
		t.Fatalf("Fight Events: %+v", fights)
	}
}
