package engine_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// Cold-start fleet: coldApps apps of coldObjects objects each (one
// Deployment and ConfigMaps), started from nothing coldRuns times.
const (
	coldApps    = 100
	coldObjects = 10
	coldRuns    = 20
)

// TestColdStartEveryAppSynced: a Run started on a fleet whose objects do
// not exist yet creates them all and, every time, ends with every app
// Synced: a heal or a live change that lands while an app's pass runs is
// never lost (the app would stay OutOfSync/Missing until the resync).
// One cluster is reused; each run has its own namespace and app names, and
// its objects are deleted afterwards.
func TestColdStartEveryAppSynced(t *testing.T) {
	if testing.Short() {
		t.Skip("slow tier: 20 cold starts of 100 apps x 10 objects (run without -short)")
	}
	ctx := context.Background()
	var took []time.Duration
	for run := 0; run < coldRuns; run++ {
		took = append(took, coldStart(t, ctx, run))
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("%d cold starts of %d apps x %d objects, every app Synced each time; until all Synced: median %s, max %s",
		coldRuns, coldApps, coldObjects, took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
}

// coldStart runs one cold start and returns how long it took until every
// app was Synced.
func coldStart(t *testing.T, ctx context.Context, run int) time.Duration {
	t.Helper()
	ns := namespace(t, fmt.Sprintf("cold-%02d", run))
	repo := gittest.Init(t)
	files := map[string]string{}
	for i := 0; i < coldApps; i++ {
		name := fmt.Sprintf("c%02d-app-%03d", run, i)
		files[".kdrift/"+name+".yaml"] = appYAML(name, "deploy/"+name, ns, true, false, "")
		files["deploy/"+name+"/dep.yaml"] = deploymentYAML(name, 1)
		for j := 1; j < coldObjects; j++ {
			files[fmt.Sprintf("deploy/%s/cm-%d.yaml", name, j)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-%d\ndata:\n  n: %q\n", name, j, fmt.Sprint(j))
		}
	}
	repo.Commit("fleet", files)
	e := newEngine(t, repo, nil)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- e.Run(rctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run %d: Run: %v", run, err)
		}
		cs := enginetest.Clientset(t)
		sel := metav1.ListOptions{}
		if err := cs.AppsV1().Deployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
			t.Errorf("run %d: clean up Deployments: %v", run, err)
		}
		if err := cs.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
			t.Errorf("run %d: clean up ConfigMaps: %v", run, err)
		}
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		apps := e.Apps()
		synced := 0
		var behind []string
		for _, a := range apps {
			if a.Sync == status.SyncSynced {
				synced++
			} else if len(behind) < 5 {
				behind = append(behind, describe(a))
			}
		}
		if synced == coldApps {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %d: %d of %d apps Synced after 2 minutes (the resync is 5 minutes: a lost wake-up); %d apps have a status; some that are not:\n%s",
				run, synced, coldApps, len(apps), strings.Join(behind, ""))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
