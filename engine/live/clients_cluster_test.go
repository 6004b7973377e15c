package live_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
)

// TestCRDInstalledAfterStart: the RESTMapper is built, then a CRD is
// installed; its kind is found by resetting discovery once.
func TestCRDInstalledAfterStart(t *testing.T) {
	cs := clientSet(t)
	ctx := context.Background()
	if _, err := cs.Mapping(ctx, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}); err != nil {
		t.Fatalf("mapping before the CRD: %v", err)
	}
	widget := schema.GroupVersionKind{Group: "kdrift-test.example.com", Version: "v1", Kind: "Widget"}
	_, err := cs.Mapping(ctx, widget)
	if err == nil || !strings.Contains(err.Error(), "kdrift-test.example.com/v1/Widget") || !strings.Contains(err.Error(), "CustomResourceDefinition") {
		t.Fatalf("unknown kind error = %v, want one naming the kind and the fix", err)
	}

	crd := decode(t, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.kdrift-test.example.com}
spec:
  group: kdrift-test.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
`)
	applyAs(t, cs, crd, live.FieldManager)
	waitFor(t, "the Widget CRD to be established", func() bool {
		got, err := cs.Get(ctx, live.RefOf(crd))
		if err != nil || got == nil {
			return false
		}
		conds, _, err := unstructuredSlice(got.Object, "status", "conditions")
		if err != nil {
			return false
		}
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
				return true
			}
		}
		return false
	})
	ns := namespace(t, cs)
	w := decode(t, fmt.Sprintf(`{apiVersion: kdrift-test.example.com/v1, kind: Widget, metadata: {name: w1, namespace: %s}, spec: {size: 3}}`, ns))
	// The apiserver publishes a new group in discovery shortly after the
	// CRD is established; the engine retries on its next pass, so does this.
	var lastErr error
	waitFor(t, "Widget to be mapped", func() bool {
		_, lastErr = cs.DryRunApply(ctx, w)
		return lastErr == nil
	})
	applyAs(t, cs, w, live.FieldManager)
	if r := compare(t, cs, w); r.Status != status.ResourceSynced {
		t.Fatalf("widget: %s", describe(r))
	}
}

func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: gone
  cluster: {server: %s, insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: abc}
contexts:
- name: prod-eu
  context: {cluster: gone, user: u}
current-context: prod-eu
`, server)
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestUnreachableAPIServer: a refused connection and a server that never
// answers both fail within the client timeouts, naming the context, the
// server and what failed.
func TestUnreachableAPIServer(t *testing.T) {
	// A port nothing listens on: connection refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "https://" + l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// A listener that accepts and never says a word.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := silent.Close(); err != nil {
			t.Logf("close the silent listener: %v", err)
		}
	})
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			// The client hangs up first; closing our end after it can
			// only report that, so the error says nothing.
			t.Cleanup(func() { c.Close() }) //nolint:errcheck
		}
	}()
	silentURL := "https://" + silent.Addr().String()

	for _, server := range []string{refused, silentURL} {
		clients := live.NewClients(writeKubeconfig(t, server), live.Options{RequestTimeout: 2 * time.Second, DialTimeout: time.Second})
		cs, err := clients.For("")
		if err != nil {
			t.Fatalf("building clients must not contact the server: %v", err)
		}
		if cs.Context != "prod-eu" || cs.Server != server {
			t.Fatalf("context %q server %q", cs.Context, cs.Server)
		}
		// The outer bound only guards against a hang; the client's own
		// timeouts end the calls.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err = cs.Check(ctx)
		t.Logf("Check: %v", err)
		var ce *live.ClusterError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), `context "prod-eu"`) || !strings.Contains(err.Error(), server) || !strings.Contains(err.Error(), "version check failed") {
			t.Errorf("Check on %s = %v", server, err)
		}
		d := decode(t, deploymentDoc("prod", "render"))
		_, err = cs.DryRunApply(ctx, d)
		t.Logf("DryRunApply: %v", err)
		if err == nil || !strings.HasPrefix(err.Error(), "Deployment/prod/render: ") || !strings.Contains(err.Error(), server) {
			t.Errorf("DryRunApply on %s = %v", server, err)
		}
		cancel()
	}

	if _, err := live.NewClients(writeKubeconfig(t, refused), live.Options{}).For("nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "prod-eu") {
		t.Errorf("unknown context error = %v", err)
	}
}

// TestOneConnectionPerContext: the clients of one context (discovery and
// the version check, dynamic requests, dry-runs, watches) share one
// transport, so a one-shot command started cold opens one connection to
// the apiserver, not one per client, even when its first requests go out
// together.
func TestOneConnectionPerContext(t *testing.T) {
	cs, err := live.NewClients(enginetest.Kubeconfig(), live.Options{}).For("")
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(cs.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	before := apiserverSockets(t, u.Port())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The first request alone opens the connection; the rest, at once,
	// must reuse it.
	if err := cs.Check(ctx); err != nil {
		t.Fatal(err)
	}
	cm := decode(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one-connection, namespace: default}\ndata: {k: v}\n")
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for _, f := range []func() error{
		func() error { return cs.Discover(ctx) },
		func() error {
			_, err := cs.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("default").List(ctx, metav1.ListOptions{})
			return err
		},
		func() error { _, err := cs.DryRunApply(ctx, cm); return err },
		func() error {
			w := cs.NewWatcher(ctx, make(chan live.Change, 16))
			return w.Watch(ctx, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "default")
		},
	} {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- f() }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var opened []string
	for inode := range apiserverSockets(t, u.Port()) {
		if !before[inode] {
			opened = append(opened, inode)
		}
	}
	if len(opened) != 1 {
		t.Fatalf("connections opened to %s: %d (sockets %v), want 1 shared by every client of the context", cs.Config.Host, len(opened), opened)
	}
}

// apiserverSockets returns the inodes of this process's established TCP
// connections to port, from /proc.
func apiserverSockets(t *testing.T, port string) map[string]bool {
	t.Helper()
	mine := map[string]bool{}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("list open files: %v", err)
	}
	for _, fd := range fds {
		l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if inode, ok := strings.CutPrefix(l, "socket:["); err == nil && ok {
			mine[strings.TrimSuffix(inode, "]")] = true
		}
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatalf("apiserver port %q: %v", port, err)
	}
	want := fmt.Sprintf(":%04X", p)
	out := map[string]bool{}
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		raw, err := os.ReadFile(table)
		if err != nil {
			t.Fatalf("read %s: %v", table, err)
		}
		for _, line := range strings.Split(string(raw), "\n")[1:] {
			f := strings.Fields(line)
			// remote address, state (01: established), inode
			if len(f) > 9 && strings.HasSuffix(f[2], want) && f[3] == "01" && mine[f[9]] {
				out[f[9]] = true
			}
		}
	}
	return out
}
