// Package enginetest runs one real local Kubernetes control plane per test
// package, in the spirit of net/http/httptest. Use it from TestMain:
//
//	func TestMain(m *testing.M) { enginetest.Main(m, enginetest.Options{}) }
//
// and reach the cluster with enginetest.Config() or enginetest.Kubeconfig().
// The control-plane binary is built once into a cache keyed by its sources,
// so only the first run on a machine pays for the build. When the binary
// cannot be built or started, the test binary fails and says why: tests
// never skip for want of a cluster.
package enginetest

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"kdrift.dev/kdrift/internal/controlplane"
)

// Options says what kind of control plane a package needs.
type Options struct {
	// ControllerManager also runs a kube-controller-manager (Deployments
	// get ReplicaSets and status). It costs memory and CPU; ask only when a
	// test needs what it does.
	ControllerManager bool
	// Nodes runs the kube-scheduler and this many hollow nodes, so Pods
	// run and workloads become healthy (see controlplane.Options.Nodes).
	// It implies ControllerManager; ask only when a test needs health.
	Nodes int
	// PriorityAndFairness keeps the apiserver's API Priority and Fairness
	// on (see controlplane.Options.PriorityAndFairness).
	PriorityAndFairness bool
	// Faults lets the package's tests restart the apiserver and slow etcd
	// (RestartAPIServer, SetEtcdLatency).
	Faults bool
	// AfterTests, when set, runs after the package's tests and before the
	// control plane stops: for what a package shares across tests and
	// benchmarks (a fixture repository) and must remove.
	AfterTests func()
}

var (
	mu      sync.Mutex
	current *controlplane.ControlPlane
)

// Main starts the control plane, runs the package's tests, stops the
// control plane and exits with the tests' code. If the control plane cannot
// start, it prints why and exits 1 without running any test.
func Main(m *testing.M, opts Options) {
	os.Exit(run(m, opts))
}

func run(m *testing.M, opts Options) int {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cp, err := Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: enginetest: %v\n", err)
		return 1
	}
	mu.Lock()
	current = cp
	mu.Unlock()
	// A panicking test exits the process without running this; the control
	// plane then gets SIGTERM from the kernel (Pdeathsig) and cleans up.
	defer func() {
		if err := cp.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "enginetest: %v\n", err)
		}
	}()
	code := m.Run()
	if opts.AfterTests != nil {
		opts.AfterTests()
	}
	return code
}

// Start builds (or finds in the cache) and starts a control plane. Most
// tests want Main; Start is for a test that needs a second, separate one.
func Start(ctx context.Context, opts Options) (*controlplane.ControlPlane, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	log, progress := buildOutput()
	bin, err := controlplane.Binary(ctx, controlplane.BuildOptions{
		SourceDir: filepath.Join(root, controlplane.ModuleDir),
		Log:       log,
		Progress:  progress,
	})
	if err != nil {
		return nil, err
	}
	return controlplane.Start(ctx, controlplane.Options{Binary: bin, ControllerManager: opts.ControllerManager, Nodes: opts.Nodes,
		PriorityAndFairness: opts.PriorityAndFairness, Faults: opts.Faults})
}

// buildOutput shows a build's progress on stderr, a line per tenth of the
// packages: a cold build takes minutes, and a person waiting for a test
// package should see why. (go test shows a package's output when the
// package ends unless it tests only one: `make test` builds the control
// plane first, where its progress shows live.)
func buildOutput() (io.Writer, func(controlplane.BuildProgress)) {
	return controlplane.BuildOutput(os.Stderr, "start the control plane and run the tests")
}

// RepoRoot finds kdrift's repository root (see controlplane.RepoRoot).
func RepoRoot() (string, error) { return controlplane.RepoRoot() }

func mustCurrent() *controlplane.ControlPlane {
	mu.Lock()
	defer mu.Unlock()
	if current == nil {
		panic("enginetest: no control plane: call enginetest.Main(m, ...) from TestMain")
	}
	return current
}

// Config returns a copy of the admin client configuration.
func Config() *rest.Config { return rest.CopyConfig(mustCurrent().Config) }

// Kubeconfig returns the admin kubeconfig's path.
func Kubeconfig() string { return mustCurrent().Kubeconfig }

// Clientset returns a typed client for the admin user.
func Clientset(t testing.TB) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(Config())
	if err != nil {
		t.Fatalf("enginetest: clientset: %v", err)
	}
	return c
}

// Dynamic returns a dynamic client for the admin user.
func Dynamic(t testing.TB) dynamic.Interface {
	t.Helper()
	c, err := dynamic.NewForConfig(Config())
	if err != nil {
		t.Fatalf("enginetest: dynamic client: %v", err)
	}
	return c
}

// RestartAPIServer restarts the package's kube-apiserver on its address
// and returns once it is ready (see controlplane.ControlPlane.RestartAPIServer);
// the package's TestMain must have asked for Options.Faults.
func RestartAPIServer(t testing.TB) {
	t.Helper()
	if err := mustCurrent().RestartAPIServer(context.Background()); err != nil {
		t.Fatalf("enginetest: restart the apiserver: %v", err)
	}
}

// SetEtcdLatency delays every request the package's kube-apiserver sends
// to etcd by d, 0 to end it (see controlplane.ControlPlane.SetEtcdLatency);
// the package's TestMain must have asked for Options.Faults.
func SetEtcdLatency(t testing.TB, d time.Duration) {
	t.Helper()
	if err := mustCurrent().SetEtcdLatency(context.Background(), d); err != nil {
		t.Fatalf("enginetest: etcd latency %s: %v", d, err)
	}
}

// Logs returns the control plane's last log lines, to print when a test
// fails on something the apiserver said.
func Logs() string { return mustCurrent().Logs() }
