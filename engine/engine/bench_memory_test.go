package engine_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/memlimit"
)

// heapDir, when set, receives a heap profile (heap-N.pprof) of each
// BenchmarkRSSPerObject size, taken when its figures are read.
var heapDir = flag.String("heapdir", "", "write BenchmarkRSSPerObject heap profiles to this folder")

// rssSizes are BenchmarkRSSPerObject's fleet sizes, in objects; each is
// made of apps of rssObjects objects, and each size's fleet holds the
// smaller ones' (objects are only added). $KDRIFT_BENCH_RSS_OBJECTS, a
// comma-separated list of sizes, replaces them (up to 100000: making the
// objects then takes most of an hour).
var rssSizes = []int{500, 1000, 2000, 5000, 20000}

// rssSizesEnv names the variable that replaces rssSizes.
const rssSizesEnv = "KDRIFT_BENCH_RSS_OBJECTS"

// benchRSSSizes are rssSizes, or the sizes $KDRIFT_BENCH_RSS_OBJECTS
// gives, in increasing order.
func benchRSSSizes(b *testing.B) []int {
	v := os.Getenv(rssSizesEnv)
	if v == "" {
		return rssSizes
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < rssObjects || n%rssObjects != 0 || (len(out) > 0 && n <= out[len(out)-1]) {
			b.Fatalf("%s=%q: give increasing numbers of objects, each a multiple of %d, such as 500,1000,2000,5000,20000,50000,100000", rssSizesEnv, v, rssObjects)
		}
		out = append(out, n)
	}
	return out
}

const (
	rssObjects   = 20
	rssNamespace = "bench-rss"
)

// rssFleet is the repository and live objects of BenchmarkRSSPerObject,
// grown to each size in turn.
var rssFleet struct {
	mu  sync.Mutex
	dir string
	// cache is the engines' cache folder, outside the work tree.
	cache string
	id    string // the repository identity the tracking annotations name
	apps  int    // apps committed and applied so far
}

// rssLast is the previous size's figures, for the slope.
var rssLast struct {
	objects int
	rssMB   float64
	heapMB  float64
}

// BenchmarkRSSPerObject: a running read-only engine (informers and
// caches) over 500, 1,000, 2,000, 5,000 and 20,000 live objects (apps of 20: two
// Deployments of 0 replicas and 18 ConfigMaps, applied as kdrift applies
// them, co-owned by a second manager that applied the same values, and
// every fourth carrying kubectl's last-applied annotation written by
// kubectl-client-side-apply). After the first full pass it reports Go
// heap and process RSS, both per object, and the slope between this size
// and the previous one (KB per added object), which leaves out what does
// not grow with the fleet. Making the objects is not timed; 20,000 take
// a few minutes. Run it with -benchtime=1x, all sizes in one run so the
// slopes are measured; -heapdir keeps a heap profile of each size.
func BenchmarkRSSPerObject(b *testing.B) {
	// The runtime as `kdrift controller` tunes it.
	memlimit.Apply(memlimit.DefaultOptions())
	startRSSFleet(b)
	for _, n := range benchRSSSizes(b) {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			dir, cache := growRSSFleet(b, n/rssObjects)
			var rss, heap float64
			for i := 0; i < b.N; i++ {
				rss, heap = measureRSS(b, dir, cache, n)
			}
			b.ReportMetric(heap, "heap-MB")
			b.ReportMetric(rss, "rss-MB")
			b.ReportMetric(rss*(1<<20)/float64(n), "rss-B/object")
			b.ReportMetric(heap*(1<<20)/float64(n), "heap-B/object")
			if rssLast.objects > 0 && rssLast.objects < n {
				added := float64(n - rssLast.objects)
				b.ReportMetric((rss-rssLast.rssMB)*1024/added, "rss-slope-KB/object")
				b.ReportMetric((heap-rssLast.heapMB)*1024/added, "heap-slope-KB/object")
			}
			rssLast.objects, rssLast.rssMB, rssLast.heapMB = n, rss, heap
		})
	}
}

// measureRSS runs a read-only engine on dir until all its apps compared
// Synced, and returns the process RSS and the live Go heap (MB) after a
// collection, then stops the engine and gives its memory back.
func measureRSS(b *testing.B, dir, cache string, objects int) (rss, heap float64) {
	apps := objects / rssObjects
	// What the set-up left is given back, so RSS starts from the same
	// floor at every size.
	debug.FreeOSMemory()
	e, err := engine.New(engine.Options{Repo: dir, Kubeconfig: enginetest.Kubeconfig(), CacheDir: cache, ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() {
		cancel()
		<-done
		runtime.GC()
		debug.FreeOSMemory()
	}()
	for deadline := time.Now().Add(15 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		synced, other := 0, ""
		for _, a := range e.Apps() {
			if a.Sync == status.SyncSynced {
				synced++
			} else if other == "" {
				other = fmt.Sprintf("%s: %s %s", a.Name, a.Sync, a.Error)
			}
		}
		if synced == apps {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d apps synced (%s)", synced, apps, other)
		}
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap, rss = float64(ms.HeapAlloc)/(1<<20), rssMB()
	st := e.Stats()
	b.ReportMetric(100*float64(st.DryRuns)/float64(max(1, st.DryRuns+st.LocalCompares)), "%dry-run")
	if *heapDir != "" {
		f, err := os.Create(filepath.Join(*heapDir, fmt.Sprintf("heap-%d.pprof", objects)))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			b.Fatal(err)
		}
	}
	return rss, heap
}

// startRSSFleet makes BenchmarkRSSPerObject's namespace and its
// repository, empty, removed when b ends.
func startRSSFleet(b *testing.B) {
	rssFleet.mu.Lock()
	defer rssFleet.mu.Unlock()
	if rssFleet.dir != "" {
		return
	}
	keepNamespace(b, rssNamespace)
	dir, err := os.MkdirTemp("", "kdrift-rss-")
	if err != nil {
		b.Fatal(err)
	}
	cache := dir + ".cache"
	b.Cleanup(func() {
		os.RemoveAll(dir)
		os.RemoveAll(cache)
		rssFleet.dir, rssFleet.apps = "", 0
	})
	if err := writeRepo(dir, map[string]string{"README.md": "rss fleet\n"}); err != nil {
		b.Fatal(err)
	}
	e, err := engine.New(engine.Options{Repo: dir, Kubeconfig: enginetest.Kubeconfig(), CacheDir: cache, ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	rssFleet.dir, rssFleet.cache, rssFleet.id = dir, cache, e.RepoIdentity()
}

// growRSSFleet makes sure the repository declares apps rss-0000 up to
// apps-1 and their objects are live, adding what an earlier size did not
// make, and returns the repository and the engines' cache folder.
func growRSSFleet(b *testing.B, apps int) (dir, cache string) {
	rssFleet.mu.Lock()
	defer rssFleet.mu.Unlock()
	if apps <= rssFleet.apps {
		return rssFleet.dir, rssFleet.cache
	}
	files := map[string]string{}
	var objs []*unstructured.Unstructured
	for a := rssFleet.apps; a < apps; a++ {
		name := fmt.Sprintf("rss-%04d", a)
		files[".kdrift/"+name+".yaml"] = appYAML(name, "deploy/"+name, rssNamespace, false, false, "")
		var docs []string
		for o := 0; o < rssObjects; o++ {
			var doc string
			if o%10 == 0 {
				doc = deploymentYAML(fmt.Sprintf("%s-web-%02d", name, o), 0)
			} else {
				doc = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-cm-%02d\n  labels: {tier: bench}\ndata:\n  key: value-%d\n  other: \"%d\"\n  settings.yaml: |\n    level: info\n    replicas: %d\n", name, o, o, a, o)
			}
			docs = append(docs, doc)
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
				b.Fatal(err)
			}
			u = apply.Track(u, name, rssFleet.id)
			u.SetNamespace(rssNamespace)
			objs = append(objs, u)
		}
		files["deploy/"+name+"/objects.yaml"] = strings.Join(docs, "---\n")
	}
	start := time.Now()
	if err := applyFleet(objs); err != nil {
		b.Fatal(err)
	}
	b.Logf("made %d objects in %s", len(objs), time.Since(start).Round(time.Second))
	if err := commitFiles(rssFleet.dir, files, fmt.Sprintf("%d apps", apps)); err != nil {
		b.Fatal(err)
	}
	rssFleet.apps = apps
	return rssFleet.dir, rssFleet.cache
}

// applyFleet puts objs in the cluster as kdrift's apply would (forced
// Server-Side Apply as manager kdrift), then has a second manager apply
// the same values of part of each, and writes kubectl's last-applied
// annotation on every fourth as kubectl's client-side apply does: so
// managedFields hold two or three entries, as they do where people and
// tools share a cluster. Requests run in parallel.
func applyFleet(objs []*unstructured.Unstructured) error {
	cfg := enginetest.Config()
	cfg.QPS, cfg.Burst = 2000, 4000
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	var g errgroup.Group
	g.SetLimit(16)
	for i, u := range objs {
		g.Go(func() error {
			gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
			if u.GetKind() == "Deployment" {
				gvr = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
			}
			ri := dyn.Resource(gvr).Namespace(u.GetNamespace())
			if _, err := ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: apply.Manager, Force: true}); err != nil {
				return fmt.Errorf("apply %s: %w", u.GetName(), err)
			}
			// A second manager applies the same value of one field: it
			// co-owns it, no value changes, nothing drifts.
			co := &unstructured.Unstructured{Object: map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(),
				"metadata": map[string]any{"name": u.GetName(), "namespace": u.GetNamespace()}}}
			if u.GetKind() == "Deployment" {
				co.Object["spec"] = map[string]any{"replicas": int64(0)}
			} else {
				co.Object["data"] = map[string]any{"key": u.Object["data"].(map[string]any)["key"]}
			}
			if _, err := ri.Apply(ctx, u.GetName(), co, metav1.ApplyOptions{FieldManager: "kubectl"}); err != nil {
				return fmt.Errorf("apply %s as kubectl: %w", u.GetName(), err)
			}
			if i%4 != 0 {
				return nil
			}
			last, err := json.Marshal(u.Object)
			if err != nil {
				return err
			}
			patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(last) + "\n"}}})
			if err != nil {
				return err
			}
			if _, err := ri.Patch(ctx, u.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
				return fmt.Errorf("annotate %s: %w", u.GetName(), err)
			}
			return nil
		})
	}
	return g.Wait()
}

// commitFiles writes files into the repository at dir and commits them.
func commitFiles(dir string, files map[string]string, msg string) error {
	if err := writeFiles(dir, files); err != nil {
		return err
	}
	return runGit(dir, []string{"add", "-A"}, []string{"-c", "user.name=Bench", "-c", "user.email=bench@example.com", "commit", "-qm", msg})
}
