package controller

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/publish"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
	"kdrift.dev/kdrift/internal/memlimit"
)

// scaleAppsEnv names the environment variable that sizes
// BenchmarkFleetAtScale, in Apps of scaleObjects objects; unset, 250
// Apps (5,000 objects), so that `make bench` stays minutes.
const scaleAppsEnv = "KDRIFT_BENCH_FLEET_APPS"

const (
	scaleObjects = 20
	// scalePerNamespace Apps share a namespace.
	scalePerNamespace = 100
	// scaleHeals is how many heals the latency's median is of.
	scaleHeals = 9
	// scaleRest is how long requests are counted at rest.
	scaleRest = 30 * time.Second
)

// BenchmarkFleetAtScale: a controller's figures on a synced fleet of
// $KDRIFT_BENCH_FLEET_APPS Apps (default 250) of 20 objects each (a
// Deployment and 19 ConfigMaps), 100 Apps to a namespace, made once per
// run by parallel Server-Side Apply as kdrift applies (not timed). For one
// replica, then four replicas of a controller with 4 shards (engines with
// their healers in this process, as in BenchmarkShardedFailover), from a
// cold start: the time until every App compared Synced (cold-start-ms),
// the share of objects that needed a dry-run (%dry-run), the apiserver
// requests per minute at rest once synced (every replica's watches and
// Lease renewals: req/min, and per replica), the median of 9 heals (a
// Deployment scaled as kubectl until self-heal put it back: heal-p50-ms),
// and the process's peak RSS from the start (peak-rss-MB; with 4 replicas
// in one process, all four). The runtime is tuned as `kdrift controller`
// tunes it (internal/memlimit). Run it with -benchtime=1x.
func BenchmarkFleetAtScale(b *testing.B) {
	apps := 250
	if v := os.Getenv(scaleAppsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: give a number of Apps (of %d objects each), such as 5000", scaleAppsEnv, v, scaleObjects)
		}
		apps = n
	}
	memlimit.Apply(memlimit.DefaultOptions())
	remote, home := makeScaleFleet(b, apps)
	for _, shards := range []int{1, 4} {
		b.Run(fmt.Sprintf("apps=%d/shards=%d", apps, shards), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				measureScale(b, remote, home, apps, shards)
			}
		})
	}
}

// scaleApp names App i of the scale fleet and its namespace.
func scaleApp(i int) (name, ns string) {
	return fmt.Sprintf("scale-%05d", i), fmt.Sprintf("bench-scale-%d", i/scalePerNamespace)
}

// scaleDocs are App name's objects as YAML documents.
func scaleDocs(name string) []string {
	docs := []string{fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %[1]s\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: %[1]s}\n  template:\n    metadata:\n      labels: {app: %[1]s}\n    spec:\n      containers:\n      - name: main\n        image: registry.example/web:1.0\n", name)}
	for j := 1; j < scaleObjects; j++ {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-%02d\ndata:\n  key: value-%d\n  level: info\n", name, j, j))
	}
	return docs
}

// makeScaleFleet commits the fleet's Apps to a bare remote, applies their
// objects as kdrift would, and returns the remote and the namespace of
// the Leases and AppStatuses.
func makeScaleFleet(b *testing.B, apps int) (*gittest.Repo, string) {
	ctx := context.Background()
	cs := enginetest.Clientset(b)
	home := benchNS("bench-scale-home")
	for _, ns := range append([]string{home}, scaleSpaces(apps)...) {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			b.Fatal(err)
		}
	}
	if err := publish.Ensure(ctx, cs, enginetest.Dynamic(b), home); err != nil {
		b.Fatal(err)
	}
	files := map[string]string{}
	for i := 0; i < apps; i++ {
		name, ns := scaleApp(i)
		files[".kdrift/"+name+".yaml"] = fmt.Sprintf("apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: %s\nspec:\n  path: apps/%s\n  destination:\n    namespace: %s\n  syncPolicy:\n    selfHeal: true\n", name, name, ns)
		files["apps/"+name+"/objects.yaml"] = strings.Join(scaleDocs(name), "---\n")
	}
	clone := gittest.Init(b)
	clone.Commit("fleet", files)
	remote := gittest.InitBare(b)
	clone.Git("remote", "add", "origin", remote.Dir)
	clone.Git("push", "-q", "-u", "origin", "main")
	e, err := engine.New(engine.Options{Repo: remote.URL(), Kubeconfig: enginetest.Kubeconfig(), CacheDir: b.TempDir(), ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := applyScaleFleet(ctx, apps, e.RepoIdentity()); err != nil {
		b.Fatal(err)
	}
	b.Logf("made %d objects in %s", apps*scaleObjects, time.Since(start).Round(time.Second))
	return remote, home
}

// scaleSpaces are the fleet's namespaces.
func scaleSpaces(apps int) []string {
	var out []string
	for i := 0; i < apps; i += scalePerNamespace {
		_, ns := scaleApp(i)
		out = append(out, ns)
	}
	return out
}

// applyScaleFleet server-side applies every App's objects as kdrift does
// (tracked, forced, as manager kdrift), 32 requests at a time.
func applyScaleFleet(ctx context.Context, apps int, repoID string) error {
	cfg := enginetest.Config()
	cfg.QPS, cfg.Burst = 5000, 10000
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var g errgroup.Group
	g.SetLimit(32)
	for i := 0; i < apps; i++ {
		name, ns := scaleApp(i)
		for _, doc := range scaleDocs(name) {
			g.Go(func() error {
				u := &unstructured.Unstructured{}
				if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
					return err
				}
				u = apply.Track(u, name, repoID)
				u.SetNamespace(ns)
				gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
				if u.GetKind() == "Deployment" {
					gvr = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
				}
				if _, err := dyn.Resource(gvr).Namespace(ns).Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: apply.Manager, Force: true}); err != nil {
					return fmt.Errorf("apply %s/%s: %w", ns, u.GetName(), err)
				}
				return nil
			})
		}
	}
	return g.Wait()
}

// measureScale starts shards replicas (one when shards is 1) cold on the
// fleet and reports BenchmarkFleetAtScale's figures.
func measureScale(b *testing.B, remote *gittest.Repo, home string, apps, shards int) {
	resetPeakRSS(b)
	requests := apiserverRequests(b)
	start := time.Now()
	reps := make([]*candidate, 0, shards)
	for r := 0; r < shards; r++ {
		reps = append(reps, startReplica(b, remote, home, false, shards, fmt.Sprintf("r%d", r)))
	}
	defer func() {
		for _, c := range reps {
			c.cancel()
		}
	}()
	waitB(b, "every App compared Synced", 60*time.Minute, func() bool {
		n := 0
		for _, c := range reps {
			n += syncedApps(c.e.Apps())
		}
		return n == apps
	})
	took := time.Since(start)
	var dry int64
	for _, c := range reps {
		dry += c.e.Stats().DryRuns
	}
	objects := float64(apps * scaleObjects)
	b.ReportMetric(float64(took.Milliseconds()), "cold-start-ms")
	b.ReportMetric(100*float64(dry)/objects, "%dry-run")
	b.ReportMetric((apiserverRequests(b)-requests)/objects, "start-requests/object")
	waitB(b, "every shard led", 2*time.Minute, func() bool {
		for _, c := range reps {
			if !c.h.Leading() {
				return false
			}
		}
		return true
	})
	time.Sleep(5 * time.Second) // the first publishes settle
	before := apiserverRequests(b)
	time.Sleep(scaleRest)
	perMin := (apiserverRequests(b) - before - 1) * float64(time.Minute) / float64(scaleRest)
	b.ReportMetric(perMin, "rest-req/min")
	b.ReportMetric(perMin/float64(shards), "rest-req/min/replica")
	b.ReportMetric(medianHeal(b, apps).Seconds()*1000, "heal-p50-ms")
	b.ReportMetric(peakRSSMB(b), "peak-rss-MB")
}

// medianHeal scales scaleHeals Deployments spread over the fleet as
// kubectl would and times each until self-heal put back its 2 replicas.
func medianHeal(b *testing.B, apps int) time.Duration {
	ctx := context.Background()
	cs := enginetest.Clientset(b)
	var took []time.Duration
	for k := 0; k < scaleHeals; k++ {
		name, ns := scaleApp((k*7919 + 13) % apps)
		deps := cs.AppsV1().Deployments(ns)
		s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 7}}
		start := time.Now()
		if _, err := deps.UpdateScale(ctx, name, s, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
			b.Fatal(err)
		}
		for {
			d, err := deps.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if *d.Spec.Replicas == 2 {
				break
			}
			if time.Since(start) > time.Minute {
				b.Fatalf("%s/%s not healed within a minute", ns, name)
			}
			time.Sleep(5 * time.Millisecond)
		}
		took = append(took, time.Since(start))
	}
	return median(took)
}

// resetPeakRSS starts the process's peak resident set (VmHWM) again from
// its current one.
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Fatalf("reset the peak RSS: %v", err)
	}
}

// peakRSSMB is the process's peak resident set since resetPeakRSS.
func peakRSSMB(b *testing.B) float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatal("no VmHWM in /proc/self/status")
	return 0
}
