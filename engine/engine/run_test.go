package engine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/fight"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// recorder keeps every event a subscription delivers.
type recorder struct {
	mu     sync.Mutex
	events []status.Event
}

func record(t *testing.T, e *engine.Engine) *recorder {
	ch, stop := e.SubscribeAll()
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range ch {
			r.mu.Lock()
			r.events = append(r.events, ev)
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() { stop(); <-done })
	return r
}

// find returns the first event matching f.
func (r *recorder) find(f func(status.Event) bool) (status.Event, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range r.events {
		if f(ev) {
			return ev, true
		}
	}
	return nil, false
}

func (r *recorder) count(f func(status.Event) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ev := range r.events {
		if f(ev) {
			n++
		}
	}
	return n
}

// runEngine runs e until the test ends and waits for its goroutines.
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

// TestRunDetectsPatchAndEditAndHeals: with Run, a `kubectl patch` of a
// Deployment's image and a key added to a ConfigMap by an edit-style
// update reach the engine as events, are reported with the person as
// owner, and self-heal puts both back (the extra key removed).
func TestRunDetectsPatchAndEditAndHeals(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "run-heal")
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/apps.yaml":    appYAML("run-heal", "deploy/app", ns, true, false, ""),
		"deploy/app/dep.yaml":  deploymentYAML("web", 2),
		"deploy/app/conf.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: conf\ndata:\n  a: \"1\"\n",
	})
	e := newEngine(t, repo, nil)
	if _, err := e.Sync(ctx, "run-heal", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	rec := record(t, e)
	runEngine(t, e)
	eventually(t, "first pass", func() bool { a, _ := e.App("run-heal"); return a.Sync == status.SyncSynced })

	cs := enginetest.Clientset(t)
	if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, "web", types.StrategicMergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"registry.example/web:hotfix"}]}}}}`),
		metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
		t.Fatal(err)
	}
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "conf", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["hotfix"] = "on"
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}

	eventually(t, "DriftDetected for the image, owned by kubectl-patch", func() bool {
		_, ok := rec.find(func(ev status.Event) bool {
			d, ok := ev.(status.DriftDetected)
			if !ok || d.Resource.Ref.Name != "web" {
				return false
			}
			for _, f := range d.Resource.Fields {
				if f.Path == "/spec/template/spec/containers/0/image" && f.Class == status.OwnerPerson && len(f.Owners) > 0 && f.Owners[0].Manager == "kubectl-patch" && f.Owners[0].Operation == "Update" {
					return true
				}
			}
			return false
		})
		return ok
	})
	eventually(t, "DriftDetected for the extra ConfigMap key, owned by kubectl-edit", func() bool {
		_, ok := rec.find(func(ev status.Event) bool {
			d, ok := ev.(status.DriftDetected)
			if !ok || d.Resource.Ref.Name != "conf" {
				return false
			}
			f, ok := field(d.Resource, "/data/hotfix")
			return ok && f.Extra && f.Class == status.OwnerPerson
		})
		return ok
	})
	eventually(t, "image and ConfigMap healed", func() bool {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false
		}
		c, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "conf", metav1.GetOptions{})
		if err != nil {
			return false
		}
		_, extra := c.Data["hotfix"]
		return d.Spec.Template.Spec.Containers[0].Image == "registry.example/web:1.0" && !extra
	})
	eventually(t, "app Synced again", func() bool { a, _ := e.App("run-heal"); return a.Sync == status.SyncSynced })
	if _, ok := rec.find(func(ev status.Event) bool { _, ok := ev.(status.Healed); return ok }); !ok {
		t.Fatal("no Healed event")
	}
}

// TestRunFight: a manager that keeps scaling back after each heal makes a
// fight; kdrift stops healing spec.replicas and names the manager.
func TestRunFight(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "fight")
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/apps.yaml":   appYAML("fight", "deploy/app", ns, true, false, ""),
		"deploy/app/dep.yaml": deploymentYAML("tug", 2),
	})
	e := newEngine(t, repo, func(o *engine.Options) { o.Fight = fight.Options{Rewrites: 3, Window: 10 * time.Minute} })
	if _, err := e.Sync(ctx, "fight", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	rec := record(t, e)
	runEngine(t, e)
	deps := enginetest.Clientset(t).AppsV1().Deployments(ns)
	replicas := func() int32 {
		d, err := deps.Get(ctx, "tug", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *d.Spec.Replicas
	}
	healed := func() int {
		return rec.count(func(ev status.Event) bool { h, ok := ev.(status.Healed); return ok && h.Ref.Name == "tug" })
	}
	// The first write is plain drift; the next three, each after a heal,
	// are the rewrites that make the fight.
	for i := 1; i <= 4; i++ {
		s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "tug", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 7}}
		if _, err := deps.UpdateScale(ctx, "tug", s, metav1.UpdateOptions{FieldManager: "autoscaler-x"}); err != nil {
			t.Fatal(err)
		}
		if i < 4 {
			ok := false
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if healed() >= i && replicas() == 2 {
					ok = true
					break
				}
			}
			if !ok {
				a, _ := e.App("fight")
				rec.mu.Lock()
				for _, ev := range rec.events {
					t.Logf("event %s %+v", ev.Type(), ev)
				}
				rec.mu.Unlock()
				t.Fatalf("write %d not healed (replicas %d, healed %d):\n%s", i, replicas(), healed(), describe(a))
			}
		}
	}
	eventually(t, "Fight event", func() bool {
		_, ok := rec.find(func(ev status.Event) bool {
			f, ok := ev.(status.Fight)
			return ok && f.Manager == "autoscaler-x" && f.Field == "/spec/replicas" && f.Ref.Name == "tug"
		})
		return ok
	})
	eventually(t, "fight in the app status", func() bool { a, _ := e.App("fight"); return len(a.Fights) == 1 })
	// Healing of that field stopped: the other writer's value stays.
	if err := e.Reconcile(ctx, "fight"); err != nil {
		t.Fatal(err)
	}
	if got := replicas(); got != 7 {
		t.Fatalf("replicas = %d, want 7: kdrift must stop healing a fighting field", got)
	}
}
