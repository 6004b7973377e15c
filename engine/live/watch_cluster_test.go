package live_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/status"
)

// next waits for the change to one object, skipping others; the minute
// is a bound against a hang, not a speed target.
func next(t *testing.T, ch <-chan live.Change, ref status.ObjectRef, typ live.ChangeType) live.Change {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case c := <-ch:
			if c.Ref.Name == ref.Name && c.Ref.Namespace == ref.Namespace && c.Ref.Kind == ref.Kind && c.Type == typ {
				return c
			}
		case <-timeout:
			t.Fatalf("no %s change for %s", typ, ref)
		}
	}
}

// TestWatcherNotifiesChanges: a person's scale arrives as a notification,
// the cache serves the new object, tracked objects are listed, and the
// informers stop with their context.
func TestWatcherNotifiesChanges(t *testing.T) {
	cs := clientSet(t)
	ns := namespace(t, cs)
	desired := decode(t, deploymentDoc(ns, "render"))
	applyAs(t, cs, desired, live.FieldManager)
	ref := live.RefOf(desired)

	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan live.Change, 64)
	w := cs.NewWatcher(ctx, ch)
	deploy := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	if err := w.Watch(ctx, deploy, ns); err != nil {
		t.Fatal(err)
	}
	if err := w.WatchTracked(ctx, deploy); err != nil {
		t.Fatal(err)
	}
	// Watching twice reuses the informer.
	if err := w.Watch(ctx, deploy, ns); err != nil {
		t.Fatal(err)
	}

	got, err := w.Get(ctx, ref)
	if err != nil || got == nil || got.GetName() != "render" {
		t.Fatalf("cached get = %v, %v", got, err)
	}
	gone := ref
	gone.Name = "absent"
	if got, err := w.Get(ctx, gone); err != nil || got != nil {
		t.Fatalf("absent object = %v, %v; want nil, nil", got, err)
	}

	kubectl(t, nil, "-n", ns, "scale", "deployment/render", "--replicas=5")
	c := next(t, ch, ref, live.Updated)
	for c.StatusOnly {
		c = next(t, ch, ref, live.Updated)
	}
	if c.Context != cs.Context || c.Ref.Group != "apps" {
		t.Fatalf("change = %+v", c)
	}
	waitFor(t, "the cache to see 5 replicas", func() bool {
		got, err := w.Get(ctx, ref)
		if err != nil || got == nil {
			return false
		}
		r, ok := got.Object["spec"].(map[string]any)["replicas"]
		return ok && r == int64(5)
	})

	// Other tests' Deployments in other namespaces belong to render-prod
	// too: count this namespace's.
	tracked, err := w.ListTracked(ctx, deploy, "render-prod")
	var mine []string
	for _, o := range tracked {
		if o.GetNamespace() == ns {
			mine = append(mine, o.GetName())
		}
	}
	if err != nil || len(mine) != 1 || mine[0] != "render" {
		t.Fatalf("tracked in %s = %v, %v", ns, mine, err)
	}
	if other, err := w.ListTracked(ctx, deploy, "another-app"); err != nil || len(other) != 0 {
		t.Fatalf("tracked of another app = %v, %v", other, err)
	}

	cm := decode(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: later, namespace: `+ns+`}, data: {a: b}}`)
	if err := w.Watch(ctx, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, ns); err != nil {
		t.Fatal(err)
	}
	applyAs(t, cs, cm, live.FieldManager)
	next(t, ch, live.RefOf(cm), live.Added)
	kubectl(t, nil, "-n", ns, "delete", "configmap/later")
	next(t, ch, live.RefOf(cm), live.Deleted)

	// After the context ends, no more changes arrive.
	cancel()
	time.Sleep(200 * time.Millisecond)
	for len(ch) > 0 {
		<-ch
	}
	kubectl(t, nil, "-n", ns, "scale", "deployment/render", "--replicas=4")
	select {
	case c := <-ch:
		if c.Ref.Name == "render" {
			t.Fatalf("change after the watcher stopped: %+v", c)
		}
	case <-time.After(2 * time.Second):
	}
}
