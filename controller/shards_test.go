package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/engine/leader"
	"kdrift.dev/kdrift/engine/publish"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
)

// shardReplica is one replica's Leases: its repository Lease candidate
// and its shard table, without an engine.
type shardReplica struct {
	holder string
	el     *leader.Elector
	s      *leader.Sharder
	stop   func()
}

func startShardReplica(t *testing.T, ns, identity, holder string, shards int, keep bool) *shardReplica {
	t.Helper()
	cs := enginetest.Clientset(t)
	s, err := leader.NewSharder(leader.ShardOptions{Client: cs, Namespace: ns, Identity: identity, Holder: holder, Shards: shards, Settings: benchSettings, KeepOnStop: keep})
	if err != nil {
		t.Fatal(err)
	}
	el, err := leader.New(leader.Options{Client: cs, Namespace: ns, Identity: identity, Holder: holder, Settings: benchSettings, Shards: shards, KeepOnStop: keep, OnStarted: s.Poke})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); el.Run(ctx) }()
	go func() { defer wg.Done(); s.Run(ctx) }()
	r := &shardReplica{holder: holder, el: el, s: s}
	var once sync.Once
	r.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(r.stop)
	return r
}

func shardNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1e9)
	if _, err := enginetest.Clientset(t).CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return ns
}

// appOfShard is an App name in shard k of n.
func appOfShard(k, n int) string {
	for i := 0; ; i++ {
		if name := fmt.Sprintf("app-%d", i); leader.ShardOf(name, n) == k {
			return name
		}
	}
}

// writers watches who may write each shard, every 5 ms, and records any
// moment two replicas may write the same shard.
type writers struct {
	mu       sync.Mutex
	replicas []*shardReplica
	double   atomic.Value // string
}

func (w *writers) set(rs []*shardReplica) {
	w.mu.Lock()
	w.replicas = rs
	w.mu.Unlock()
}

func (w *writers) run(ctx context.Context, n int) {
	apps := make([]string, n)
	for k := range apps {
		apps[k] = appOfShard(k, n)
	}
	for ctx.Err() == nil {
		w.mu.Lock()
		rs := w.replicas
		w.mu.Unlock()
		for k, app := range apps {
			var who []string
			for _, r := range rs {
				if r.s.MayWrite(app) {
					who = append(who, r.holder)
				}
			}
			if len(who) > 1 && w.double.Load() == nil {
				w.double.Store(fmt.Sprintf("shard %d writable by %v at once", k, who))
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// holding reports each replica's count of shards it may write now, and
// whether every shard is writable by one of them.
func holding(rs []*shardReplica, n int) (counts []int, all bool) {
	covered := make([]bool, n)
	for _, r := range rs {
		c := 0
		for k := 0; k < n; k++ {
			if r.s.MayWrite(appOfShard(k, n)) {
				c++
				covered[k] = true
			}
		}
		counts = append(counts, c)
	}
	return counts, !slices.Contains(covered, false)
}

// TestShardLeases runs the shard protocol on the real apiserver: three
// replicas share 6 shards 2 each; one killed (its Leases left held, as
// SIGKILL leaves them) has its shards taken by the others (how soon is
// logged; BenchmarkShardedFailover measures it); a fourth replica gets its share back; a single
// healer never takes the repository's Lease while shards are held and
// takes it once the replicas stop; at no moment may two replicas write
// one shard.
func TestShardLeases(t *testing.T) {
	const n = 6
	ns := shardNamespace(t, "shards")
	id := "git.example/org/fleet#main-" + ns
	w := &writers{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rs := []*shardReplica{
		startShardReplica(t, ns, id, "r0", n, true),
		startShardReplica(t, ns, id, "r1", n, false),
		startShardReplica(t, ns, id, "r2", n, false),
	}
	w.set(rs)
	go w.run(ctx, n)

	took := waitFor(t, "3 replicas holding 2 shards each", 30*time.Second, func() bool {
		c, all := holding(rs, n)
		return all && slices.Equal(c, []int{2, 2, 2})
	})
	t.Logf("3 replicas started: every shard held, 2 each, after %s", took.Round(time.Millisecond))

	// Kill r0: its shards (and the repository's Lease, if it held it)
	// stay held until they expire.
	rs[0].stop()
	rest := rs[1:]
	took = waitFor(t, "the killed replica's shards taken over", 20*time.Second, func() bool {
		c, all := holding(rest, n)
		return all && c[0]+c[1] == n
	})
	t.Logf("replica killed: its shards healed by the others after %s (Lease duration %s)", took.Round(time.Millisecond), benchSettings.Duration)

	r3 := startShardReplica(t, ns, id, "r3", n, false)
	rest = append(rest, r3)
	w.set(rest)
	took = waitFor(t, "the new replica's share", 30*time.Second, func() bool {
		c, all := holding(rest, n)
		return all && slices.Equal(c, []int{2, 2, 2})
	})
	t.Logf("a fourth replica joined: 2 shards each again after %s", took.Round(time.Millisecond))

	// A single healer (a terminal, a controller without --shards) waits.
	single, stopSingle := startSingleHealer(t, ns, id)
	defer stopSingle()
	for end := time.Now().Add(2 * benchSettings.Duration); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if single.Leading() {
			t.Fatal("a single healer took the repository's Lease while shards were held")
		}
	}
	for _, r := range rest {
		r.stop()
	}
	waitFor(t, "the single healer to lead once the replicas stopped", 3*benchSettings.Duration, single.Leading)
	if d := w.double.Load(); d != nil {
		t.Fatal(d)
	}
}

// TestShardsWaitForASingleHealer: while a single healer holds the
// repository's Lease, a sharded replica takes no shard.
func TestShardsWaitForASingleHealer(t *testing.T) {
	ns := shardNamespace(t, "shards-single")
	id := "git.example/org/fleet#main-" + ns
	single, stopSingle := startSingleHealer(t, ns, id)
	waitFor(t, "the single healer to lead", 10*time.Second, single.Leading)
	r := startShardReplica(t, ns, id, "r0", 3, false)
	for end := time.Now().Add(2 * benchSettings.Duration); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if held := r.s.Held(); len(held) > 0 {
			t.Fatalf("the replica took shards %v while a single healer led", held)
		}
	}
	// The single healer quits (releasing the Lease): the replica takes
	// the Lease and every shard.
	stopSingle()
	waitFor(t, "the replica to hold every shard", 10*time.Second, func() bool {
		c, all := holding([]*shardReplica{r}, 3)
		return all && c[0] == 3
	})
}

// TestShardedReplicasHealEachAppOnce: three replicas of a sharded
// controller (engines with their healers) on 24 self-healing Apps: each
// App is compared, healed and published by the one replica holding its
// shard; a replica killed without releasing its Leases has its Apps
// healed by exactly one other (how soon is logged; the benchmark
// BenchmarkShardedFailover measures it).
func TestShardedReplicasHealEachAppOnce(t *testing.T) {
	const apps, shards = 24, 3
	ns := shardNamespace(t, "sharded")
	remote, _ := sharedRepo(t, ns, apps, 0)
	reps := []*candidate{
		startReplica(t, remote, ns, true, shards, "r0"),
		startReplica(t, remote, ns, false, shards, "r1"),
		startReplica(t, remote, ns, false, shards, "r2"),
	}
	names := make([]string, apps)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%02d", ns, i)
	}
	// owner is the one replica whose engine lists name, Synced; -1 when
	// none or more than one does.
	owner := func(rs []*candidate, name string) int {
		who := -1
		for i, c := range rs {
			if a, ok := c.e.App(name); ok && a.Sync == status.SyncSynced && c.h.Sharder() != nil && c.h.Sharder().MayWrite(name) {
				if who >= 0 {
					return -1
				}
				who = i
			}
		}
		return who
	}
	waitFor(t, "one shard each, every App Synced in exactly one replica", 90*time.Second, func() bool {
		for _, c := range reps {
			if len(c.h.Sharder().Held()) != 1 {
				return false
			}
		}
		for _, n := range names {
			if owner(reps, n) < 0 {
				return false
			}
		}
		return true
	})
	for i, c := range reps {
		for _, a := range c.e.Apps() {
			if !c.h.Sharder().Serves(a.Name) {
				t.Errorf("replica %d lists App %s of a shard it does not hold", i, a.Name)
			}
		}
	}
	// Every App's status is published, by its shard's holder.
	waitFor(t, "24 AppStatuses published", 30*time.Second, func() bool {
		list, err := enginetest.Dynamic(t).Resource(publish.GVR).Namespace(ns).List(context.Background(), metav1.ListOptions{LabelSelector: leader.LabelRepo + "=" + leader.Hash(reps[0].e.RepoIdentity())})
		return err == nil && len(list.Items) == apps
	})

	scaleAll := func(names []string, replicas int32) {
		for _, n := range names {
			scaleTo(t, ns, n, replicas)
		}
	}
	// Heals counted from here: the first replica may have created every
	// object before the others joined and took their share.
	base := map[string][]int{}
	for _, n := range names {
		for _, c := range reps {
			base[n] = append(base[n], c.events.countApp(status.EventHealed, n))
		}
	}
	healedBy := func(rs []*candidate, name string) []int {
		var who []int
		for i, c := range rs {
			if c.events.countApp(status.EventHealed, name) > base[name][i] {
				who = append(who, i)
			}
		}
		return who
	}
	scaleAll(names, 5)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var unhealed []string
		for _, n := range names {
			if len(healedBy(reps, n)) == 0 {
				unhealed = append(unhealed, n)
			}
		}
		if len(unhealed) == 0 {
			break
		}
		if time.Now().After(deadline) {
			n := unhealed[0]
			var who []string
			for i, c := range reps {
				a, _ := c.e.App(n)
				who = append(who, fmt.Sprintf("r%d: shards %v, serves %v, may write %v, status %s", i, c.h.Sharder().Held(), c.h.Sharder().Serves(n), c.h.Sharder().MayWrite(n), a.Sync))
			}
			t.Fatalf("Apps %v not healed after 60 s; %s: %v", unhealed, n, who)
		}
	}
	for _, n := range names {
		if who := healedBy(reps, n); len(who) != 1 {
			t.Errorf("App %s healed by replicas %v, want exactly one", n, who)
		}
	}

	// Kill r0 as SIGKILL would: its Leases stay held until they expire.
	var orphans []string
	for _, n := range names {
		if reps[0].h.Sharder().Serves(n) {
			orphans = append(orphans, n)
		}
	}
	if len(orphans) == 0 {
		t.Fatal("r0 held no shard")
	}
	reps[0].cancel()
	rest := reps[1:]
	before := map[string]int{}
	for _, n := range orphans {
		before[n] = rest[0].events.countApp(status.EventHealed, n) + rest[1].events.countApp(status.EventHealed, n)
	}
	scaleAll(orphans, 6)
	took := waitFor(t, "the killed replica's Apps healed by another", 60*time.Second, func() bool {
		for _, n := range orphans {
			if rest[0].events.countApp(status.EventHealed, n)+rest[1].events.countApp(status.EventHealed, n) == before[n] {
				return false
			}
		}
		return true
	})
	t.Logf("replica killed: its %d Apps healed again after %s (Lease duration %s)", len(orphans), took.Round(time.Millisecond), benchSettings.Duration)
	for _, n := range orphans {
		var who []int
		for i, c := range rest {
			if c.events.countApp(status.EventHealed, n) > base[n][i+1] {
				who = append(who, i+1)
			}
		}
		if len(who) != 1 {
			t.Errorf("orphaned App %s healed by replicas %v, want exactly one", n, who)
		}
	}
}

// startSingleHealer runs a candidate for the repository's Lease without
// shards (a terminal) until stop.
func startSingleHealer(t *testing.T, ns, identity string) (*leader.Elector, func()) {
	t.Helper()
	single, err := leader.New(leader.Options{Client: enginetest.Clientset(t), Namespace: ns, Identity: identity, Holder: "terminal", Settings: benchSettings})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); single.Run(ctx) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return single, stop
}

// scaleTo scales Deployment name as kubectl scale would.
func scaleTo(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	if _, err := enginetest.Clientset(t).AppsV1().Deployments(ns).UpdateScale(context.Background(), name, s, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
}
