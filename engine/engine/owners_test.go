package engine_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/metrics"

	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// replicasWriters is the writers of Deployment spec.replicas, as
// "manager count" pairs, or "" when there is no such row.
func replicasWriters(m diff.OwnerMap) string {
	for _, k := range m.Kinds {
		for _, r := range k.Rows {
			if k.Kind == "Deployment" && r.Field == "spec.replicas" {
				var ws []string
				for _, w := range r.Writers {
					ws = append(ws, w.Label())
				}
				return strings.Join(ws, ",")
			}
		}
	}
	return ""
}

// TestOwnersAndOrphansUnderRun: a running engine builds the ownership map
// and the orphan list from its informers, and sees an autoscaler's scale
// and a hand-made ConfigMap as they happen.
func TestOwnersAndOrphansUnderRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ns := namespace(t, "owners-run")
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/apps.yaml":   appYAML("owned", "deploy/owned", ns, false, false, ""),
		"deploy/owned/a.yaml": deploymentYAML("a", 2),
		"deploy/owned/b.yaml": deploymentYAML("b", 2),
		"deploy/owned/c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: prod\n",
	})
	e := newEngine(t, repo, nil)
	if _, err := e.Sync(ctx, "owned", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() { cancel(); <-done }()
	eventually(t, "the app compared under Run", func() bool {
		a, ok := e.App("owned")
		return ok && a.Sync == status.SyncSynced
	})

	cs := enginetest.Clientset(t)
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 4}}
	if _, err := cs.AppsV1().Deployments(ns).UpdateScale(ctx, "a", s, metav1.UpdateOptions{FieldManager: "horizontal-pod-autoscaler"}); err != nil {
		t.Fatal(err)
	}
	hand := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hotfix", Namespace: ns}, Data: map[string]string{"flag": "on"}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, hand, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatal(err)
	}

	var got string
	eventually(t, "the autoscaler in the replicas row", func() bool {
		m, err := e.Owners(ctx, diff.OwnerMapOptions{}, "owned")
		if err != nil {
			t.Fatal(err)
		}
		got = replicasWriters(m)
		return got == "horizontal-pod-autoscaler,kdrift" || got == "kdrift,horizontal-pod-autoscaler"
	})
	var orphans []status.Orphan
	eventually(t, "the hand-made ConfigMap as an orphan", func() bool {
		var err error
		if orphans, err = e.Orphans(ctx, "owned"); err != nil {
			t.Fatal(err)
		}
		return len(orphans) == 1
	})
	o := orphans[0]
	if o.Ref.Kind != "ConfigMap" || o.Ref.Name != "hotfix" || o.Creator.Manager != "kubectl-create" || o.Creator.Class != status.OwnerPerson || o.Creator.Time == nil || len(o.Apps) != 1 || o.Apps[0] != "owned" {
		t.Errorf("orphan = %+v", o)
	}
	if _, err := e.Owners(ctx, diff.OwnerMapOptions{}, "nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("Owners of an unknown app: %v", err)
	}
}

// requestCounter counts every request this process's REST clients send,
// through client-go's request metrics.
type requestCounter struct{ n atomic.Int64 }

// Increment counts one request.
func (c *requestCounter) Increment(context.Context, string, string, string) { c.n.Add(1) }

var requests = &requestCounter{}

func init() { metrics.Register(metrics.RegisterOpts{RequestResult: requests}) }

// BenchmarkOwners50x20: with the engine running (informers filled), the
// ownership map of the 50x20 fleet; it must send no request.
func BenchmarkOwners50x20(b *testing.B) {
	e, ctx, stop := runningFleet(b)
	defer stop()
	before := requests.n.Load()
	if before == 0 {
		b.Fatal("the request counter saw none of the passes' requests: client-go's request metrics are not reaching it")
	}
	cpu := processCPU()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m, err := e.Owners(ctx, diff.OwnerMapOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if m.Objects != fleetApps*fleetObjects {
			b.Fatalf("map of %d objects, want %d", m.Objects, fleetApps*fleetObjects)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	sent := requests.n.Load() - before
	b.ReportMetric(float64(sent)/float64(b.N), "requests/op")
	if sent != 0 {
		b.Fatalf("the ownership map sent %d requests to the apiserver, want 0", sent)
	}
}
