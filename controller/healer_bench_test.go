package controller

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/healer"
	"kdrift.dev/kdrift/engine/leader"
	"kdrift.dev/kdrift/engine/publish"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

var benchRounds atomic.Int32

// benchNS is a namespace of its own for each round of a benchmark (the
// testing package runs a benchmark function more than once): each round
// has its own repository, whose objects another's must not find.
func benchNS(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, benchRounds.Add(1))
}

// benchSettings are short Lease timings, so a fail-over takes seconds.
var benchSettings = leader.Settings{Duration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 250 * time.Millisecond}

// sharedRepo is a bare remote with a person's clone that tracks it; the
// remote holds apps Apps, each a Deployment of 2 replicas (objects
// ConfigMaps more) in namespace ns, self-healing.
func sharedRepo(b testing.TB, ns string, apps, objects int) (remote, clone *gittest.Repo) {
	b.Helper()
	if _, err := enginetest.Clientset(b).CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	files := sharedFiles(ns, apps, objects)
	if err := publish.Ensure(context.Background(), enginetest.Clientset(b), enginetest.Dynamic(b), ns); err != nil {
		b.Fatal(err)
	}
	clone = gittest.Init(b)
	clone.Commit("apps", files)
	remote = gittest.InitBare(b)
	clone.Git("remote", "add", "origin", remote.Dir)
	clone.Git("push", "-q", "-u", "origin", "main")
	return remote, clone
}

// sharedFiles are sharedRepo's files: apps Apps, each a Deployment of 2
// replicas and objects ConfigMaps in namespace ns, self-healing.
func sharedFiles(ns string, apps, objects int) map[string]string {
	files := map[string]string{}
	for i := 0; i < apps; i++ {
		name := fmt.Sprintf("%s-%02d", ns, i)
		files[".kdrift/"+name+".yaml"] = fmt.Sprintf("apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: %s\nspec:\n  path: apps/%s\n  destination:\n    namespace: %s\n  syncPolicy:\n    selfHeal: true\n", name, name, ns)
		files["apps/"+name+"/web.yaml"] = fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: %s}\n  template:\n    metadata:\n      labels: {app: %s}\n    spec:\n      containers:\n      - name: main\n        image: registry.example/web:1.0\n", name, name, name)
		for j := 0; j < objects; j++ {
			files[fmt.Sprintf("apps/%s/cm-%d.yaml", name, j)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-%d\ndata:\n  k: v\n", name, j)
		}
	}
	return files
}

// candidate is one kdrift (an engine with its Lease) on the shared remote.
type candidate struct {
	e      *engine.Engine
	h      *healer.Healer
	events *eventLog
	cancel func()
}

// startCandidate runs an engine and its healer until stop; keep leaves
// the Lease held on stop, as a killed process would.
func startCandidate(b testing.TB, remote *gittest.Repo, ns string, keep bool) *candidate {
	return startReplica(b, remote, ns, keep, 1, "")
}

// startReplica is startCandidate for one replica of a controller with
// shards shards (1: not sharded), named holder ("": a default name).
func startReplica(b testing.TB, remote *gittest.Repo, ns string, keep bool, shards int, holder string) *candidate {
	b.Helper()
	gate := &leader.Gate{}
	opts := engine.Options{Repo: remote.URL(), Kubeconfig: enginetest.Kubeconfig(), CacheDir: b.TempDir(), MayWrite: gate.Open}
	if shards > 1 {
		gate.Sharded()
		opts.Serves = gate.Serves
	}
	e, err := engine.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &candidate{e: e, events: &eventLog{}}
	ch, stop := e.SubscribeAll()
	go c.events.run(ch)
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	hctx, stopH := context.WithCancel(context.Background())
	h, err := healer.Start(hctx, healer.Options{Engine: e, Gate: gate, Client: enginetest.Clientset(b), Dynamic: enginetest.Dynamic(b), Namespace: ns, Settings: benchSettings, KeepOnStop: keep, Shards: shards, Holder: holder})
	if err != nil {
		b.Fatal(err)
	}
	c.h = h
	var once sync.Once
	c.cancel = func() {
		once.Do(func() {
			cancel()
			<-done
			stop()
			stopH()
			h.Wait()
		})
	}
	b.Cleanup(c.cancel)
	return c
}

// eventLog keeps an engine's events.
type eventLog struct {
	mu  sync.Mutex
	evs []status.Event
}

func (l *eventLog) run(ch <-chan status.Event) {
	for ev := range ch {
		l.mu.Lock()
		l.evs = append(l.evs, ev)
		l.mu.Unlock()
	}
}

func (l *eventLog) count(typ status.EventType) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ev := range l.evs {
		if ev.Type() == typ {
			n++
		}
	}
	return n
}

// countApp counts the events of type typ about App app.
func (l *eventLog) countApp(typ status.EventType, app string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ev := range l.evs {
		if ev.Type() == typ && ev.AppName() == app {
			n++
		}
	}
	return n
}

func waitB(b *testing.B, what string, timeout time.Duration, cond func() bool) {
	b.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkFreezeToLeader: a freeze (then an unfreeze) committed and
// pushed from a person's clone, the leader told (publish.Nudge, as the
// CLI and UI do), until the leader's engine holds the new freeze state.
// Reports the p50 from the pushed commit to honoured. Target: p50 ≤ 2 s.
func BenchmarkFreezeToLeader(b *testing.B) {
	ns := benchNS("bench-freeze")
	remote, clone := sharedRepo(b, ns, 1, 0)
	app := ns + "-00"
	l := startCandidate(b, remote, ns, false)
	waitB(b, "the leader to lead and publish", 60*time.Second, func() bool {
		a, ok := l.e.App(app)
		return l.h.Leading() && ok && a.Sync == status.SyncSynced
	})
	ctx := context.Background()
	repo, err := actions.Open(ctx, actions.RepoOptions{Repo: clone.Dir, Author: "Bench <bench@example.com>"})
	if err != nil {
		b.Fatal(err)
	}
	id, err := repo.RepoIdentity()
	if err != nil || id != l.e.RepoIdentity() {
		b.Fatalf("the clone's identity %q (%v) is not the leader's %q", id, err, l.e.RepoIdentity())
	}
	var took []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		frozen := i%2 == 0
		var res actions.Result
		if frozen {
			res, err = repo.Freeze(ctx, actions.FreezeRequest{Selection: actions.Selection{Apps: []string{app}}, Reason: fmt.Sprintf("INC-%d", i)})
		} else {
			res, err = repo.Unfreeze(ctx, actions.UnfreezeRequest{Selection: actions.Selection{Apps: []string{app}}, Reason: fmt.Sprintf("INC-%d over", i)})
		}
		if err != nil || !res.Pushed {
			b.Fatalf("action: %v %+v", err, res)
		}
		pushed := time.Now()
		if n := publish.Nudge(ctx, enginetest.Clientset(b), enginetest.Dynamic(b), ns, id, res.Commit, res.Apps); !n.Told {
			b.Fatalf("the leader was not told: %s", n.Why)
		}
		waitB(b, "the leader to honour the action", 30*time.Second, func() bool {
			a, _ := l.e.App(app)
			return (a.SelfHeal == status.SelfHealFrozen) == frozen && a.Revision == res.Commit[:len(a.Revision)]
		})
		took = append(took, time.Since(pushed))
	}
	b.StopTimer()
	b.ReportMetric(float64(median(took).Milliseconds()), "p50-ms")
}

// BenchmarkAttachedStart1000Apps: a viewer attaching to 1,000 published
// AppStatuses (20 resources each): one LIST, decoded, until its view has
// every App. Target: ≤ 1 s.
func BenchmarkAttachedStart1000Apps(b *testing.B) {
	ns := "bench-attach"
	if _, err := enginetest.Clientset(b).CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	const id = "git.example/bench/attach#main"
	ctx := context.Background()
	if err := publish.Ensure(ctx, enginetest.Clientset(b), enginetest.Dynamic(b), ns); err != nil {
		b.Fatal(err)
	}
	pub := publish.NewPublisher(enginetest.Dynamic(b), ns, id)
	// What an earlier round of the benchmark published is not written
	// again.
	seed := publish.NewWatcher(enginetest.Dynamic(b), ns, id)
	sctx, stopSeed := context.WithCancel(ctx)
	if !seed.Run(sctx, nil) {
		b.Fatal("the watch did not sync")
	}
	pub.Seed(seed.Hashes())
	stopSeed()
	apps := fleet(1000)
	var wg sync.WaitGroup
	errs := make(chan error, len(apps))
	sem := make(chan struct{}, 8)
	for _, a := range apps {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := pub.Publish(ctx, a); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		wctx, cancel := context.WithCancel(ctx)
		w := publish.NewWatcher(enginetest.Dynamic(b), ns, id)
		if !w.Run(wctx, nil) {
			b.Fatal("the watch did not sync")
		}
		if n := len(w.Apps()); n != 1000 {
			b.Fatalf("attached view has %d apps, want 1000", n)
		}
		cancel()
	}
}

// unattachedFleet is 1,000 Apps of 20 objects each (sharedFiles: a
// Deployment and 19 ConfigMaps), committed in a repository outside any
// one benchmark's temporary folder and synced once per process: the
// testing package runs a benchmark function once per -count, and 20,000
// objects take minutes to create. TestMain's AfterTests removes it.
var unattachedFleet struct {
	once sync.Once
	dir  string
	err  error
}

const unattachedApps, unattachedObjects = 1000, 20

func unattachedRepo(b *testing.B) string {
	unattachedFleet.once.Do(func() {
		unattachedFleet.dir, unattachedFleet.err = makeUnattachedRepo(b)
	})
	if unattachedFleet.err != nil {
		b.Fatal(unattachedFleet.err)
	}
	return unattachedFleet.dir
}

func makeUnattachedRepo(b *testing.B) (string, error) {
	const ns = "bench-unattached"
	ctx := context.Background()
	if _, err := enginetest.Clientset(b).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	dir, err := os.MkdirTemp("", "kdrift-unattached-")
	if err != nil {
		return "", err
	}
	for name, body := range sharedFiles(ns, unattachedApps, unattachedObjects-1) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return dir, err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return dir, err
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=Bench", "-c", "user.email=bench@example.com", "commit", "-qm", "fleet"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return dir, fmt.Errorf("git %v: %v: %s", args, err, out)
		}
	}
	e, err := engine.New(engine.Options{Repo: dir, Kubeconfig: enginetest.Kubeconfig(), CacheDir: filepath.Join(dir, ".git", "kdrift-cache")})
	if err != nil {
		return dir, err
	}
	// One engine running over every App (self-heal is on) creates the
	// objects: one read of the repository, informers instead of Lists. A
	// Sync per App would read all 21,000 files of the repository 1,000
	// times.
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(rctx) }()
	deadline := time.Now().Add(30 * time.Minute)
	for synced := syncedApps(e.Apps()); synced != unattachedApps; synced = syncedApps(e.Apps()) {
		if time.Now().After(deadline) {
			cancel()
			<-done
			return dir, fmt.Errorf("creating the fleet: %d of %d Apps Synced after 30 minutes", synced, unattachedApps)
		}
		time.Sleep(time.Second)
	}
	cancel()
	if err := <-done; err != nil {
		return dir, err
	}
	return dir, nil
}

// syncedApps counts the Apps that compared Synced.
func syncedApps(apps []status.AppStatus) int {
	n := 0
	for _, a := range apps {
		if a.Sync == status.SyncSynced {
			n++
		}
	}
	return n
}

// removeUnattachedRepo is TestMain's AfterTests hook.
func removeUnattachedRepo() {
	if unattachedFleet.dir != "" {
		_ = os.RemoveAll(unattachedFleet.dir)
	}
}

// BenchmarkUnattachedStart1000Apps: what a terminal with no leader to
// follow does on start, on the same 1,000 Apps of 20 objects as
// BenchmarkAttachedStart1000Apps (here real, synced objects): a new
// engine (nothing cached on disk) runs until every App has compared
// Synced, its own cold compare of 20,000 objects. Reported, no target;
// run it with -benchtime=1x (one iteration takes minutes; the first run
// in a process also creates the objects, outside the timer).
func BenchmarkUnattachedStart1000Apps(b *testing.B) {
	dir := unattachedRepo(b)
	var took []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cache := b.TempDir()
		start := time.Now()
		b.StartTimer()
		b.StopTimer()
		requests := apiserverRequests(b)
		b.StartTimer()
		e, err := engine.New(engine.Options{Repo: dir, Kubeconfig: enginetest.Kubeconfig(), CacheDir: cache, MayWrite: func(string) bool { return false }})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		waitB(b, "every App compared Synced", 30*time.Minute, func() bool {
			apps := e.Apps()
			return len(apps) == unattachedApps && syncedApps(apps) == unattachedApps
		})
		b.StopTimer()
		took = append(took, time.Since(start))
		// Load-independent: what the compare cost the apiserver per object
		// (the scrape itself counts once, the informers' Lists and Watches
		// count in), and the share of objects that needed a dry-run.
		objects := float64(unattachedApps * unattachedObjects)
		st := e.Stats()
		b.ReportMetric(float64(st.DryRuns), "dryruns/op")
		b.ReportMetric((apiserverRequests(b)-requests)/objects, "requests/object")
		b.ReportMetric(100*float64(st.DryRuns)/objects, "%dry-run")
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(median(took).Milliseconds()), "p50-ms")
}

// apiserverRequests sums apiserver_request_total over every series.
func apiserverRequests(b *testing.B) float64 {
	b.Helper()
	raw, err := enginetest.Clientset(b).CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	sum := 0.0
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

// BenchmarkSteadyStateRequests: apiserver requests over 20 s of steady
// state (the sum of apiserver_request_total, read before and after) with
// a leader alone on 10 Apps, then with five attached viewers (each what an
// attached UI runs: one watch of the AppStatuses and one of the Lease).
// Reports both counts and their ratio. Target: ratio ≤ 1.2. Run it with
// -benchtime=1x: one iteration takes 40 s.
func BenchmarkSteadyStateRequests(b *testing.B) {
	ns := benchNS("bench-steady")
	remote, _ := sharedRepo(b, ns, 10, 1)
	l := startCandidate(b, remote, ns, false)
	waitB(b, "the leader to publish 10 synced Apps", 120*time.Second, func() bool {
		if !l.h.Leading() {
			return false
		}
		apps := l.e.Apps()
		n := 0
		for _, a := range apps {
			if a.Sync == status.SyncSynced {
				n++
			}
		}
		return n == 10
	})
	const window = 20 * time.Second
	measure := func() float64 {
		before := apiserverRequests(b)
		time.Sleep(window)
		// The reading itself is one request.
		return apiserverRequests(b) - before - 1
	}
	time.Sleep(2 * time.Second) // the last publishes settle
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		alone := measure()
		ctx, cancel := context.WithCancel(context.Background())
		for v := 0; v < 5; v++ {
			w := publish.NewWatcher(enginetest.Dynamic(b), ns, l.e.RepoIdentity())
			if !w.Run(ctx, nil) {
				b.Fatal("a viewer's watch did not sync")
			}
			leader.Watch(ctx, enginetest.Clientset(b), ns, l.e.RepoIdentity(), func(leader.Observation) {})
		}
		time.Sleep(time.Second)
		with := measure()
		cancel()
		b.ReportMetric(alone, "req-leader-alone")
		b.ReportMetric(with, "req-with-5-viewers")
		b.ReportMetric(with/alone, "ratio")
	}
}

// BenchmarkFailover: the leader is killed (its Lease is not released, as
// with SIGKILL) and a Deployment is scaled at once; measured until the
// standby healed it. Bounded by the Lease's duration (3 s here, 15 s by
// default) plus one retry period. Run it with -benchtime=3x.
func BenchmarkFailover(b *testing.B) {
	ns := benchNS("bench-failover")
	remote, _ := sharedRepo(b, ns, 1, 0)
	app := ns + "-00"
	cs := enginetest.Clientset(b)
	cands := []*candidate{startCandidate(b, remote, ns, true), startCandidate(b, remote, ns, true)}
	var took []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var lead, standby int
		waitB(b, "a leader with the App synced", 60*time.Second, func() bool {
			for j, c := range cands {
				if a, ok := c.e.App(app); c.h.Leading() && ok && a.Sync == status.SyncSynced {
					lead, standby = j, 1-j
					return true
				}
			}
			return false
		})
		healed := cands[standby].events.count(status.EventHealed)
		cands[lead].cancel()
		killed := time.Now()
		s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: int32(5 + i)}}
		if _, err := cs.AppsV1().Deployments(ns).UpdateScale(context.Background(), app, s, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
			b.Fatal(err)
		}
		waitB(b, "the standby to heal", 60*time.Second, func() bool { return cands[standby].events.count(status.EventHealed) > healed })
		took = append(took, time.Since(killed))
		b.StopTimer()
		cands[lead] = startCandidate(b, remote, ns, true)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(median(took).Milliseconds()), "p50-kill-to-heal-ms")
}

// BenchmarkShardedFailover: 3 replicas of a controller with 6 shards on
// 3,000 self-healing Apps (one Deployment each). Once every App is
// Synced in exactly one replica, the replica holding the most shards is
// killed (its Leases left held, as SIGKILL leaves them) and 50 of its
// Apps are scaled at once; measured until the others healed all 50.
// Reports the kill-to-heal time, the Lease duration it is bounded by,
// and how many of the 50 Apps two replicas healed (target: 0). Run it
// with -benchtime=1x: setting up the fleet takes minutes.
func BenchmarkShardedFailover(b *testing.B) {
	const apps, shards, sample = 3000, 6, 50
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ns := benchNS("bench-shards")
		remote, _ := sharedRepo(b, ns, apps, 0)
		reps := []*candidate{
			startReplica(b, remote, ns, true, shards, "r0"),
			startReplica(b, remote, ns, true, shards, "r1"),
			startReplica(b, remote, ns, true, shards, "r2"),
		}
		waitB(b, "every App Synced in one replica, 2 shards each", 30*time.Minute, func() bool {
			n := 0
			for _, c := range reps {
				if len(c.h.Sharder().Held()) != 2 {
					return false
				}
				n += syncedApps(c.e.Apps())
			}
			return n == apps
		})
		victim := reps[0]
		var orphans []string
		for _, a := range victim.e.Apps() {
			if len(orphans) < sample {
				orphans = append(orphans, a.Name)
			}
		}
		rest := reps[1:]
		healed := func(name string) int {
			return rest[0].events.countApp(status.EventHealed, name) + rest[1].events.countApp(status.EventHealed, name)
		}
		before := map[string]int{}
		for _, n := range orphans {
			before[n] = healed(n)
		}
		b.StartTimer()
		victim.cancel()
		killed := time.Now()
		cs := enginetest.Clientset(b)
		for _, n := range orphans {
			s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 7}}
			if _, err := cs.AppsV1().Deployments(ns).UpdateScale(context.Background(), n, s, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
				b.Fatal(err)
			}
		}
		waitB(b, "the killed replica's Apps healed by the others", 10*time.Minute, func() bool {
			for _, n := range orphans {
				if healed(n) == before[n] {
					return false
				}
			}
			return true
		})
		took := time.Since(killed)
		b.StopTimer()
		twice := 0
		for _, n := range orphans {
			if rest[0].events.countApp(status.EventHealed, n) > 0 && rest[1].events.countApp(status.EventHealed, n) > 0 {
				twice++
			}
		}
		b.ReportMetric(float64(took.Milliseconds()), "kill-to-heal-ms")
		b.ReportMetric(float64(benchSettings.Duration.Milliseconds()), "lease-ms")
		b.ReportMetric(float64(twice), "healed-twice")
		for _, c := range rest {
			c.cancel()
		}
		b.StartTimer()
	}
}
