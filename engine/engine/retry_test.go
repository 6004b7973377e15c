package engine_test

import (
	"context"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// switchProxy forwards TCP connections to the apiserver while up, and
// closes them at once while down: an apiserver that restarts, seen from
// kdrift (TLS passes through untouched).
type switchProxy struct {
	l  net.Listener
	up atomic.Bool
	wg sync.WaitGroup
}

func newSwitchProxy(t *testing.T, target string) *switchProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &switchProxy{l: l}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if !p.up.Load() {
				c.Close()
				continue
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				defer c.Close()
				s, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer s.Close()
				go func() { _, _ = io.Copy(s, c); s.Close() }()
				_, _ = io.Copy(c, s)
			}()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return p
}

// TestUnreachedClusterRetried: an engine whose first passes cannot reach
// the apiserver passes the app again by itself once it answers, long
// before the resync: no Git change and no watch event is needed.
func TestUnreachedClusterRetried(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := namespace(t, "retry")
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/apps.yaml":     appYAML("retry", "deploy/retry", ns, true, false, ""),
		"deploy/retry/dep.yaml": deploymentYAML("web", 2),
	})

	kc, err := clientcmd.LoadFromFile(enginetest.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	var proxy *switchProxy
	for _, c := range kc.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			t.Fatal(err)
		}
		proxy = newSwitchProxy(t, u.Host)
		u.Host = proxy.l.Addr().String()
		c.Server = u.String()
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}

	e := newEngine(t, repo, func(o *engine.Options) {
		o.Kubeconfig = path
		o.Resync = time.Hour
		o.FetchInterval = time.Hour
	})
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	eventually(t, "the app Unknown while the apiserver is down", func() bool {
		a, ok := e.App("retry")
		return ok && a.Sync == status.SyncUnknown && a.Error != ""
	})
	proxy.up.Store(true)
	eventually(t, "the app synced once the apiserver answers", func() bool {
		a, _ := e.App("retry")
		return a.Sync == status.SyncSynced && replicasOf(t, ns, "web") == 2
	})
}
