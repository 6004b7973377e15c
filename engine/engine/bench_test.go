package engine_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/fight"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// percentiles reports p50 and p99 of durations in milliseconds.
func percentiles(b *testing.B, prefix string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	b.ReportMetric(float64(at(0.50).Microseconds())/1000, prefix+"-p50-ms")
	b.ReportMetric(float64(at(0.99).Microseconds())/1000, prefix+"-p99-ms")
}

// benchApp makes a namespace, a repository with one Deployment app and a
// running engine that has synced it.
func benchApp(b *testing.B, name string, selfHeal bool) (*engine.Engine, *recorderB, func(int32)) {
	ctx := context.Background()
	keepNamespace(b, name)
	repo := gittest.Init(b)
	repo.Commit("app", map[string]string{
		".kdrift/app.yaml":    appYAML(name, "deploy/app", name, selfHeal, false, ""),
		"deploy/app/dep.yaml": deploymentYAML("web", 2),
	})
	// The benchmark is a deliberate tug of war: no fight detection.
	e, err := engine.New(engine.Options{Repo: repo.Dir, Kubeconfig: enginetest.Kubeconfig(), CacheDir: b.TempDir(), Fight: fight.Options{Rewrites: 1 << 30}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.Sync(ctx, name, engine.SyncOptions{}); err != nil {
		b.Fatal(err)
	}
	rec := &recorderB{}
	ch, stop := e.SubscribeAll()
	go rec.run(ch)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()
	b.Cleanup(func() { cancel(); <-done; stop() })
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if a, _ := e.App(name); a.Sync == status.SyncSynced {
			break
		}
	}
	deps := enginetest.Clientset(b).AppsV1().Deployments(name)
	scale := func(n int32) {
		s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: name}, Spec: autoscalingv1.ScaleSpec{Replicas: n}}
		if _, err := deps.UpdateScale(ctx, "web", s, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
			b.Fatal(err)
		}
	}
	return e, rec, scale
}

// recorderB signals each event to waiters.
type recorderB struct {
	mu     sync.Mutex
	events []status.Event
	wake   chan struct{}
}

func (r *recorderB) run(ch <-chan status.Event) {
	for ev := range ch {
		r.mu.Lock()
		r.events = append(r.events, ev)
		w := r.wake
		r.mu.Unlock()
		if w != nil {
			select {
			case w <- struct{}{}:
			default:
			}
		}
	}
}

// waitFor waits for an event after index from matching f; it returns the
// time it arrived and the new index.
func (r *recorderB) waitFor(b *testing.B, from int, f func(status.Event) bool) int {
	r.mu.Lock()
	r.wake = make(chan struct{}, 1)
	r.mu.Unlock()
	deadline := time.After(60 * time.Second)
	for {
		r.mu.Lock()
		for i := from; i < len(r.events); i++ {
			if f(r.events[i]) {
				r.mu.Unlock()
				return i + 1
			}
		}
		from = len(r.events)
		w := r.wake
		r.mu.Unlock()
		select {
		case <-w:
		case <-time.After(5 * time.Millisecond):
		case <-deadline:
			b.Fatal("timed out waiting for an event")
		}
	}
}

func (r *recorderB) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// BenchmarkDetectionLatency: another manager's write (a scale as kubectl)
// to the engine's DriftDetected event showing the new value.
func BenchmarkDetectionLatency(b *testing.B) {
	_, rec, scale := benchApp(b, "bench-detect", false)
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		want := int64(3 + i%50)
		from := rec.len()
		start := time.Now()
		scale(int32(want))
		rec.waitFor(b, from, func(ev status.Event) bool {
			d, ok := ev.(status.DriftDetected)
			if !ok {
				return false
			}
			f, ok := field(d.Resource, "/spec/replicas")
			return ok && fmt.Sprint(f.Live) == strconv.FormatInt(want, 10)
		})
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	percentiles(b, "detect", lat)
}

// BenchmarkHealingLatency: another manager's write to the field restored
// by self-heal (seen by polling the apiserver).
func BenchmarkHealingLatency(b *testing.B) {
	_, _, scale := benchApp(b, "bench-heal", true)
	deps := enginetest.Clientset(b).AppsV1().Deployments("bench-heal")
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		scale(9)
		for {
			d, err := deps.Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if *d.Spec.Replicas == 2 {
				break
			}
			if time.Since(start) > 60*time.Second {
				b.Fatal("not healed")
			}
			time.Sleep(5 * time.Millisecond)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	percentiles(b, "heal", lat)
}

// fleet is 50 apps of 20 objects each, synced once per process.
var fleet struct {
	once sync.Once
	dir  string
	err  error
}

const fleetApps, fleetObjects = 50, 20

func fleetRepo(b *testing.B) string {
	fleet.once.Do(func() {
		ns := "bench-fleet"
		if err := makeNamespace(ns); err != nil {
			fleet.err = err
			return
		}
		dir, err := os.MkdirTemp("", "kdrift-fleet-")
		if err != nil {
			fleet.err = err
			return
		}
		files := map[string]string{}
		for a := 0; a < fleetApps; a++ {
			name := fmt.Sprintf("fleet-%02d", a)
			files[".kdrift/"+name+".yaml"] = appYAML(name, "deploy/"+name, ns, false, false, "")
			var docs []string
			for o := 0; o < fleetObjects; o++ {
				if o%4 == 0 {
					docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata:\n  name: %s-svc-%02d\nspec:\n  selector: {app: %s}\n  ports:\n  - port: 80\n    targetPort: 8080\n", name, o, name))
					continue
				}
				docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-cm-%02d\ndata:\n  key: value-%d\n  other: \"%d\"\n", name, o, o, a))
			}
			files["deploy/"+name+"/objects.yaml"] = strings.Join(docs, "---\n")
		}
		if err := writeRepo(dir, files); err != nil {
			fleet.err = err
			return
		}
		fleet.dir = dir
		e, err := engine.New(engine.Options{Repo: dir, Kubeconfig: enginetest.Kubeconfig(), CacheDir: filepath.Join(dir, ".cache")})
		if err != nil {
			fleet.err = err
			return
		}
		for a := 0; a < fleetApps; a++ {
			if _, err := e.Sync(context.Background(), fmt.Sprintf("fleet-%02d", a), engine.SyncOptions{}); err != nil {
				fleet.err = err
				return
			}
		}
	})
	if fleet.err != nil {
		b.Fatal(fleet.err)
	}
	return fleet.dir
}

func writeRepo(dir string, files map[string]string) error {
	if err := writeFiles(dir, files); err != nil {
		return err
	}
	return runGit(dir, []string{"init", "-q", "-b", "main"}, []string{"add", "-A"}, []string{"-c", "user.name=Bench", "-c", "user.email=bench@example.com", "commit", "-qm", "fleet"})
}

// writeFiles writes files (path: content) below dir.
func writeFiles(dir string, files map[string]string) error {
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// runGit runs git commands in dir, in order, until one fails.
func runGit(dir string, cmds ...[]string) error {
	for _, args := range cmds {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v: %s", args, err, out)
		}
	}
	return nil
}

// BenchmarkFullCompare50x20: a cold engine compares 50 apps of 20 objects
// that kdrift synced: each is judged locally (no dry-run) unless the
// local tier defers; %dry-run says how many did.
func BenchmarkFullCompare50x20(b *testing.B) {
	dir := fleetRepo(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e, err := engine.New(engine.Options{Repo: dir, Kubeconfig: enginetest.Kubeconfig(), CacheDir: filepath.Join(dir, ".cache"), ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := e.Reconcile(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		for _, a := range e.Apps() {
			if a.Sync != status.SyncSynced {
				b.Fatalf("app %s: %s %s", a.Name, a.Sync, a.Error)
			}
		}
		st := e.Stats()
		b.ReportMetric(float64(st.DryRuns), "dryruns/op")
		b.ReportMetric(100*float64(st.DryRuns)/float64(st.DryRuns+st.LocalCompares), "%dry-run")
		b.StartTimer()
	}
}

// BenchmarkUnchangedPass50x20: with the engine running (informers
// filled), a pass over the same 50x20 apps with nothing changed; it must
// send no dry-run.
func BenchmarkUnchangedPass50x20(b *testing.B) {
	e, ctx, stop := runningFleet(b)
	defer stop()
	before := e.Stats().DryRuns
	cpu := processCPU()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := e.Reconcile(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	// CPU time says what a pass costs apart from how busy the machine is.
	b.ReportMetric(float64((processCPU()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
	dry := e.Stats().DryRuns - before
	if dry != 0 {
		b.Fatalf("unchanged passes sent %d dry-runs, want 0", dry)
	}
	b.ReportMetric(float64(dry)/float64(b.N), "dryruns/op")
}

// runningFleet starts a read-only engine on the 50x20 fleet and waits
// until every app compared Synced and one more pass cached every
// comparison against the informers; stop ends Run.
func runningFleet(b *testing.B) (*engine.Engine, context.Context, func()) {
	dir := fleetRepo(b)
	e, err := engine.New(engine.Options{Repo: dir, Kubeconfig: enginetest.Kubeconfig(), CacheDir: filepath.Join(dir, ".cache"), ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	stop := func() { cancel(); <-done }
	waitFleetSynced(b, e)
	if err := e.Reconcile(ctx); err != nil {
		stop()
		b.Fatal(err)
	}
	return e, ctx, stop
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitFleetSynced waits until every fleet app compares Synced.
func waitFleetSynced(b *testing.B, e *engine.Engine) {
	for deadline := time.Now().Add(180 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		synced := 0
		for _, a := range e.Apps() {
			if a.Sync == status.SyncSynced {
				synced++
			}
		}
		if synced == fleetApps {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d apps synced", synced)
		}
	}
}

// BenchmarkRSS1000Objects: a running engine (informers and caches) that
// tracks the 50x20 fleet; reports Go heap and process RSS after the first
// full pass.
func BenchmarkRSS1000Objects(b *testing.B) {
	dir := fleetRepo(b)
	for i := 0; i < b.N; i++ {
		e, err := engine.New(engine.Options{Repo: dir, Kubeconfig: enginetest.Kubeconfig(), CacheDir: filepath.Join(dir, ".cache"), ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		waitFleetSynced(b, e)
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MB")
		b.ReportMetric(rssMB(), "rss-MB")
		cancel()
		<-done
	}
}

// rssMB reads the process's resident set from /proc.
func rssMB() float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			kb, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return -1
			}
			return kb / 1024
		}
	}
	return -1
}

// BenchmarkDiffVsKubectl runs `kdrift diff APP --live` (its own compare) and
// `kubectl diff --server-side -k PATH` as whole processes on the same
// kustomize overlay (5 and 30 objects, one drifted), in the same run, and
// reports both medians and their ratio. Both start cold as a person's
// shell would, except for what each keeps on disk between runs (kubectl's
// discovery cache; kdrift's discovery and render caches): each has its own
// cache directory, warmed by one untimed run. A third series, kdrift-new,
// empties kdrift's render cache before each run: the first diff after a
// commit, which renders.
func BenchmarkDiffVsKubectl(b *testing.B) {
	bin := buildKdrift(b)
	for _, n := range []int{5, 30} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			benchDiffVsKubectl(b, bin, fleetShape{objects: n})
		})
	}
}

// BenchmarkDiffOneAppOfMany is BenchmarkDiffVsKubectl's 5-object overlay
// alone in its repository (others=0) and in a repository that also holds
// 200 other apps of 20 objects each, synced (others=200; one of them an
// Argo CD Application, so discovery looks for generated apps), with and
// without an upstream remote (which kdrift fetches first). What a one-app
// diff costs should not grow with the repository; kubectl reads one folder
// whatever the repository holds. kdrift-other commits a change to another
// app before each run: the first diff after a commit that changed another
// app only. kdrift-status is `kdrift status APP --live` on the same app.
// Each series' ratio to kubectl is reported (kubectl/kdrift...). The
// 200-app repositories go first, so that the app alone is measured on a
// cluster that already holds their 4,000 objects: what is compared is the
// repository's size, not the cluster's (a one-shot compare lists the
// App's objects by label, which the apiserver answers by scanning every
// object of the kind it caches).
func BenchmarkDiffOneAppOfMany(b *testing.B) {
	bin := buildKdrift(b)
	for _, others := range []int{200, 0} {
		for _, upstream := range []bool{false, true} {
			b.Run(fmt.Sprintf("others=%d/upstream=%v", others, upstream), func(b *testing.B) {
				benchDiffVsKubectl(b, bin, fleetShape{objects: 5, others: others, upstream: upstream})
			})
		}
	}
}

// buildKdrift builds the kdrift binary once for a benchmark.
func buildKdrift(b *testing.B) string {
	root, err := enginetest.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(b.TempDir(), "kdrift")
	if out, err := exec.Command("go", "build", "-o", bin, root).CombinedOutput(); err != nil {
		b.Fatalf("build kdrift: %v\n%s", err, out)
	}
	return bin
}

// fleetShape says what setupOverlay puts in the repository.
type fleetShape struct {
	// objects is the size of the overlay the benchmark diffs.
	objects int
	// others is how many other apps of 20 objects the repository holds
	// (synced); the first one is an Argo CD Application.
	others int
	// upstream gives the repository an upstream remote (a bare clone).
	upstream bool
}

// overlayRounds numbers setupOverlay's namespaces.
var overlayRounds atomic.Int64

// otherObjects is how many objects each of fleetShape's other apps has.
const otherObjects = 20

// setupOverlay makes a namespace and a repository with one kustomize
// overlay of shape.objects objects (every fifth a Deployment, the rest
// ConfigMaps), synced, with one Deployment scaled by hand, and
// shape.others other apps; it returns the repository (its work tree).
func setupOverlay(b *testing.B, shape fleetShape) string {
	ctx := context.Background()
	// A namespace per round: the benchmark function runs more than once
	// (b.N is calibrated), each round with a new repository, and kdrift
	// never takes over objects another repository tracks.
	round := overlayRounds.Add(1)
	ns := fmt.Sprintf("bench-diff-%d-%d", shape.objects, round)
	keepNamespace(b, ns)
	files := map[string]string{".kdrift/app.yaml": appYAML("overlay", "deploy/overlay", ns, false, false, "")}
	var res []string
	for o := 0; o < shape.objects; o++ {
		n := fmt.Sprintf("obj-%02d.yaml", o)
		res = append(res, n)
		if o%5 == 0 {
			files["deploy/base/"+n] = deploymentYAML(fmt.Sprintf("web-%02d", o), 2)
			continue
		}
		files["deploy/base/"+n] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%02d\ndata:\n  k: v\n", o)
	}
	files["deploy/base/kustomization.yaml"] = "resources:\n- " + strings.Join(res, "\n- ") + "\n"
	files["deploy/overlay/kustomization.yaml"] = "namespace: " + ns + "\nresources:\n- ../base\ncommonLabels:\n  tier: bench\n"
	dir := b.TempDir()
	otherNS := fmt.Sprintf("bench-others-%d", round)
	if shape.others > 0 {
		keepNamespace(b, otherNS)
	}
	var otherApps []string
	for a := 0; a < shape.others; a++ {
		name := fmt.Sprintf("other-%03d", a)
		folder := "apps/" + name
		var res []string
		for o := 0; o < otherObjects; o++ {
			n := fmt.Sprintf("obj-%02d.yaml", o)
			res = append(res, n)
			if o%5 == 0 {
				files[folder+"/"+n] = deploymentYAML(fmt.Sprintf("%s-web-%02d", name, o), 1)
				continue
			}
			files[folder+"/"+n] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-cm-%02d\ndata:\n  k: v\n", name, o)
		}
		files[folder+"/kustomization.yaml"] = "resources:\n- " + strings.Join(res, "\n- ") + "\n"
		if a == 0 {
			// An Argo CD Application of this repository: discovery must
			// look for the apps others generate.
			files["argocd/"+name+".yaml"] = fmt.Sprintf("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: %s\n  namespace: argocd\nspec:\n  source:\n    repoURL: %s\n    path: %s\n  destination:\n    namespace: %s\n", name, dir, folder, otherNS)
			continue
		}
		files[".kdrift/"+name+".yaml"] = appYAML(name, folder, otherNS, false, false, "")
		otherApps = append(otherApps, name)
	}
	if err := writeRepo(dir, files); err != nil {
		b.Fatal(err)
	}
	if shape.upstream {
		bare := dir + ".git"
		b.Cleanup(func() { os.RemoveAll(bare) })
		for _, args := range [][]string{{"clone", "-q", "--bare", dir, bare}, {"-C", dir, "remote", "add", "origin", bare}, {"-C", dir, "fetch", "-q", "origin"}, {"-C", dir, "branch", "-q", "-u", "origin/main"}} {
			if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
				b.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
	}
	e, err := engine.New(engine.Options{Repo: dir, Kubeconfig: enginetest.Kubeconfig(), CacheDir: b.TempDir(), Workers: 8})
	if err != nil {
		b.Fatal(err)
	}
	if res, err := e.Sync(ctx, "overlay", engine.SyncOptions{}); err != nil {
		b.Fatalf("%v\n%+v", err, res.Objects)
	}
	var g errgroup.Group
	g.SetLimit(8)
	for _, name := range otherApps {
		g.Go(func() error {
			if res, err := e.Sync(ctx, name, engine.SyncOptions{}); err != nil {
				return fmt.Errorf("sync %s: %v\n%+v", name, err, res.Objects)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web-00", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}}
	if _, err := enginetest.Clientset(b).AppsV1().Deployments(ns).UpdateScale(ctx, "web-00", s, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
		b.Fatal(err)
	}
	return dir
}

// commitOther commits a change to another app than the overlay (the
// first other app when there is one, else a README), pushed when the
// repository has an upstream.
func commitOther(b *testing.B, dir string, shape fleetShape, i int) {
	file := "README.md"
	if shape.others > 1 {
		file = "apps/other-001/obj-01.yaml"
	}
	body := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other-001-cm-01\ndata:\n  k: v%d\n", i)
	if err := os.WriteFile(filepath.Join(dir, file), []byte(body), 0o644); err != nil {
		b.Fatal(err)
	}
	cmds := [][]string{{"-C", dir, "add", "-A"}, {"-C", dir, "-c", "user.name=Bench", "-c", "user.email=bench@example.com", "commit", "-qm", fmt.Sprintf("other %d", i)}}
	if shape.upstream {
		cmds = append(cmds, []string{"-C", dir, "push", "-q", "origin", "main"})
	}
	for _, args := range cmds {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

func benchDiffVsKubectl(b *testing.B, bin string, shape fleetShape) {
	dir := setupOverlay(b, shape)
	kdriftCache, kubectlCache := b.TempDir(), b.TempDir()
	// timeRunExit times one whole process, which must exit with code.
	timeRunExit := func(code int, env []string, name string, args ...string) time.Duration {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), append(env, "KUBECONFIG="+enginetest.Kubeconfig(), "KUBECTL_EXTERNAL_DIFF=")...)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(start)
		got := 0
		if ee, ok := err.(*exec.ExitError); ok {
			got = ee.ExitCode()
		} else if err != nil {
			got = -1
		}
		if got != code {
			b.Fatalf("%s %v: want exit %d, got %v\n%s", name, args, code, err, out)
		}
		return d
	}
	timeRun := func(env []string, name string, args ...string) time.Duration {
		return timeRunExit(1, env, name, args...) // 1: drift
	}
	kdrift := func() time.Duration {
		return timeRun([]string{"XDG_CACHE_HOME=" + kdriftCache}, bin, "diff", "overlay", "--repo", dir, "--kubeconfig", enginetest.Kubeconfig(), "--live")
	}
	// kdrift-status is `kdrift status APP --live`: the same compare,
	// printed as the app's status (exit 0).
	kdriftStatus := func() time.Duration {
		return timeRunExit(0, []string{"XDG_CACHE_HOME=" + kdriftCache}, bin, "status", "overlay", "--repo", dir, "--kubeconfig", enginetest.Kubeconfig(), "--live")
	}
	kdriftNew := func() time.Duration {
		if err := os.RemoveAll(filepath.Join(kdriftCache, "kdrift", "render")); err != nil {
			b.Fatal(err)
		}
		return kdrift()
	}
	kubectl := func() time.Duration {
		return timeRun(nil, "/usr/bin/kubectl", "diff", "--server-side", "--force-conflicts", "-k", filepath.Join(dir, "deploy/overlay"), "--kubeconfig", enginetest.Kubeconfig(), "--cache-dir", kubectlCache)
	}
	// One untimed run of each loads both binaries into the page cache and
	// fills both discovery caches; at least 9 timed pairs make the
	// medians worth comparing even when the benchmark time allows only a
	// couple of iterations.
	kdrift()
	kubectl()
	var kd, kn, ko, ks, kc []time.Duration
	b.ResetTimer()
	for i := 0; i < max(b.N, 9); i++ {
		kd = append(kd, kdrift())
		kc = append(kc, kubectl())
		kn = append(kn, kdriftNew())
		ks = append(ks, kdriftStatus())
		if shape.others > 0 {
			b.StopTimer()
			commitOther(b, dir, shape, i)
			b.StartTimer()
			ko = append(ko, kdrift())
		}
	}
	b.StopTimer()
	percentiles(b, "kdrift", kd)
	percentiles(b, "kdrift-new", kn)
	percentiles(b, "kdrift-other", ko)
	percentiles(b, "kdrift-status", ks)
	percentiles(b, "kubectl", kc)
	for _, ds := range [][]time.Duration{kd, kn, ko, ks, kc} {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	}
	b.ReportMetric(float64(kc[len(kc)/2])/float64(kd[len(kd)/2]), "kubectl/kdrift")
	b.ReportMetric(float64(kc[len(kc)/2])/float64(kn[len(kn)/2]), "kubectl/kdrift-new")
	b.ReportMetric(float64(kc[len(kc)/2])/float64(ks[len(ks)/2]), "kubectl/kdrift-status")
	if len(ko) > 0 {
		b.ReportMetric(float64(kc[len(kc)/2])/float64(ko[len(ko)/2]), "kubectl/kdrift-other")
	}
}

// makeNamespace creates a namespace, keeping one that exists.
func makeNamespace(name string) error {
	cs, err := kubernetes.NewForConfig(enginetest.Config())
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// keepNamespace creates a namespace, keeping one that exists (one that
// other tests or rounds share, such as argocd or flux-system).
func keepNamespace(tb testing.TB, name string) {
	tb.Helper()
	if err := makeNamespace(name); err != nil {
		tb.Fatal(err)
	}
}
