package engine_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/internal/enginetest"
)

// statusFleet is BenchmarkStatusOfManyApps' repository: statusFleetApps
// Apps of 10 objects (2 Deployments, 8 ConfigMaps), each in a namespace
// of its own, synced once per process.
var statusFleet struct {
	once sync.Once
	dir  string
	err  error
	// p50 is each size's median, for the ratio.
	mu  sync.Mutex
	p50 map[int]time.Duration
}

const statusFleetApps, statusFleetObjects = 100, 10

// statusApp names App i of the fleet (its namespace too).
func statusApp(i int) string { return fmt.Sprintf("bench-status-%03d", i) }

func statusFleetRepo(b *testing.B) string {
	statusFleet.once.Do(func() {
		files := map[string]string{}
		for a := 0; a < statusFleetApps; a++ {
			name := statusApp(a)
			if statusFleet.err = makeNamespace(name); statusFleet.err != nil {
				return
			}
			files[".kdrift/"+name+".yaml"] = appYAML(name, "apps/"+name, name, false, false, "")
			var docs []string
			for o := 0; o < statusFleetObjects; o++ {
				if o%5 == 0 {
					docs = append(docs, deploymentYAML(fmt.Sprintf("web-%d", o), 1))
					continue
				}
				docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  k: v%d\n", o, a))
			}
			files["apps/"+name+"/objects.yaml"] = strings.Join(docs, "---\n")
		}
		dir, err := os.MkdirTemp("", "kdrift-status-fleet-")
		if err != nil {
			statusFleet.err = err
			return
		}
		statusFleet.dir = dir
		if statusFleet.err = writeRepo(dir, files); statusFleet.err != nil {
			return
		}
		e, err := engine.New(engine.Options{Repo: dir, Kubeconfig: enginetest.Kubeconfig(), CacheDir: filepath.Join(dir, ".git", "kdrift-cache"), Workers: 8})
		if err != nil {
			statusFleet.err = err
			return
		}
		var g errgroup.Group
		g.SetLimit(8)
		for a := 0; a < statusFleetApps; a++ {
			g.Go(func() error {
				if res, err := e.Sync(context.Background(), statusApp(a), engine.SyncOptions{}); err != nil {
					return fmt.Errorf("sync %s: %v\n%+v", statusApp(a), err, res.Objects)
				}
				return nil
			})
		}
		statusFleet.err = g.Wait()
	})
	if statusFleet.err != nil {
		b.Fatal(statusFleet.err)
	}
	return statusFleet.dir
}

// BenchmarkStatusOfManyApps: `kdrift status --live` (the built binary,
// whole processes, cold but for the discovery and render caches warmed
// by one untimed run) of 20 of the fleet's Apps and of all 100 (10
// objects each, a namespace each, synced, on one cluster), medians of 9.
// The 100-App run reports its ratio to the 20-App one (x5-apps-time):
// a command about many Apps lists each kind once (ARCHITECTURE.md, "One
// List per kind for a fleet"), so five times the Apps should cost at
// most 5.5 times the time.
func BenchmarkStatusOfManyApps(b *testing.B) {
	bin := buildKdrift(b)
	dir := statusFleetRepo(b)
	for _, n := range []int{20, statusFleetApps} {
		b.Run(fmt.Sprintf("apps=%d", n), func(b *testing.B) {
			args := []string{"status", "--live", "--repo", dir, "--kubeconfig", enginetest.Kubeconfig()}
			if n < statusFleetApps {
				for a := 0; a < n; a++ {
					args = append(args, statusApp(a))
				}
			}
			cache := b.TempDir()
			run := func() time.Duration {
				cmd := exec.Command(bin, args...)
				cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
				start := time.Now()
				out, err := cmd.CombinedOutput()
				d := time.Since(start)
				if err != nil || strings.Count(string(out), "Synced") < n {
					b.Fatalf("kdrift %v: %v\n%s", args[:3], err, out)
				}
				return d
			}
			run()
			var ds []time.Duration
			b.ResetTimer()
			for i := 0; i < max(b.N, 9); i++ {
				ds = append(ds, run())
			}
			b.StopTimer()
			percentiles(b, "status", ds)
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			statusFleet.mu.Lock()
			defer statusFleet.mu.Unlock()
			if statusFleet.p50 == nil {
				statusFleet.p50 = map[int]time.Duration{}
			}
			statusFleet.p50[n] = ds[len(ds)/2]
			if small := statusFleet.p50[20]; n == statusFleetApps && small > 0 {
				b.ReportMetric(float64(ds[len(ds)/2])/float64(small), "x5-apps-time")
			}
		})
	}
}
