// Package deliverytest builds and runs the real progressive-delivery
// controllers, Argo Rollouts and Flagger, from their Go module releases,
// against a test control plane: kdrift's delegation and health rules are
// checked against what those controllers really write, not against
// objects shaped by hand.
package deliverytest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"kdrift.dev/kdrift/internal/controlplane"
)

// Controller is one delivery controller: the module release it is built
// from, its main package, its CRDs in that release and how it is started.
type Controller struct {
	// Name is the binary's name. It must be the name the controller's
	// image runs it as: client-go takes the default field manager from
	// it, and kdrift recognises the controller by that manager.
	Name string
	// Module and Version name the release on the Go module proxy.
	Module, Version string
	// Package is the main package inside the module.
	Package string
	// CRDs are the release's CRD files, relative to the module.
	CRDs []string
	// args are its command-line flags for a kubeconfig, a namespace to
	// watch and two free local ports.
	args func(kubeconfig, namespace string, ports [2]int) []string
}

// Rollouts is Argo Rollouts' controller. v1.10.0 is the newest release
// this repository's Go (1.26.8) builds: later ones require 1.26.10.
var Rollouts = Controller{
	Name:    "rollouts-controller",
	Module:  "github.com/argoproj/argo-rollouts",
	Version: "v1.10.0",
	Package: "./cmd/rollouts-controller",
	CRDs: []string{
		"manifests/crds/rollout-crd.yaml",
		"manifests/crds/analysis-run-crd.yaml",
		"manifests/crds/analysis-template-crd.yaml",
		"manifests/crds/cluster-analysis-template-crd.yaml",
		"manifests/crds/experiment-crd.yaml",
	},
	args: func(kubeconfig, namespace string, ports [2]int) []string {
		return []string{"--kubeconfig", kubeconfig, "--namespace", namespace, "--namespaced",
			"--leader-elect=false", "--metricsPort", strconv.Itoa(ports[0]), "--healthzPort", strconv.Itoa(ports[1]),
			"--loglevel", "info"}
	},
}

// Flagger is Flagger with its Kubernetes provider (no service mesh: the
// canary is a Deployment beside a -primary copy, promoted by iterations).
var Flagger = Controller{
	Name:    "flagger",
	Module:  "github.com/fluxcd/flagger",
	Version: "v1.41.0",
	Package: "./cmd/flagger",
	CRDs:    []string{"artifacts/flagger/crd.yaml"},
	args: func(kubeconfig, namespace string, ports [2]int) []string {
		// No Prometheus here: the analysis has no metric checks, and a
		// closed local port fails fast where the default host would
		// wait for DNS.
		return []string{"-kubeconfig", kubeconfig, "-namespace", namespace, "-mesh-provider", "kubernetes",
			"-metrics-server", "http://127.0.0.1:" + strconv.Itoa(ports[1]), "-port", strconv.Itoa(ports[0]),
			"-control-loop-interval", "1s", "-enable-config-tracking=false", "-log-level", "info"}
	},
}

// All are the controllers `make delivery` builds.
var All = []Controller{Rollouts, Flagger}

// Subject names the controller's build in progress lines.
func (c Controller) Subject() controlplane.Subject {
	return controlplane.Subject{What: c.Name, From: c.Release(), Cold: "a few minutes"}
}

// Release is the module path and version, as the go command names it.
func (c Controller) Release() string { return c.Module + "@" + c.Version }

// Source downloads the release into the module cache (once) and returns
// its folder there.
func (c Controller) Source(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", c.Release())
	// Outside any module: the release is fetched on its own, not as a
	// dependency of kdrift's.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GO111MODULE=on", "GOFLAGS=")
	out, err := cmd.Output()
	var m struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &m); jerr == nil && m.Error != "" {
		return "", fmt.Errorf("go mod download %s: %s", c.Release(), m.Error)
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("go mod download %s: %w\n%s", c.Release(), err, ee.Stderr)
		}
		return "", fmt.Errorf("go mod download %s: %w", c.Release(), err)
	}
	if m.Dir == "" {
		return "", fmt.Errorf("go mod download %s: no folder in its answer", c.Release())
	}
	return m.Dir, nil
}

// BuildOptions are the control plane builder's options for this
// controller, its sources in dir (from Source).
func (c Controller) BuildOptions(dir string) controlplane.BuildOptions {
	return controlplane.BuildOptions{SourceDir: dir, Name: c.Name, Package: c.Package, Release: c.Release(), LDFlags: []string{"-s", "-w"}}
}

// Build builds (or finds cached) the controller's binary; log and
// progress are as for the control plane's build.
func (c Controller) Build(ctx context.Context, log io.Writer, progress func(controlplane.BuildProgress)) (string, error) {
	dir, err := c.Source(ctx)
	if err != nil {
		return "", err
	}
	opts := c.BuildOptions(dir)
	opts.Log, opts.Progress = log, progress
	return controlplane.Binary(ctx, opts)
}

// Running is a started controller.
type Running struct {
	mu  sync.Mutex
	log bytes.Buffer
}

// Log is what the controller has printed so far.
func (r *Running) Log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.String()
}

func (r *Running) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.Write(p)
}

// Start builds (or finds cached) the controller, installs its release's
// CRDs on the control plane at cfg, and runs it against that control
// plane, watching namespace, until the test ends. A failure to build or
// start fails the test with the reason.
func (c Controller) Start(t *testing.T, cfg *rest.Config, kubeconfig, namespace string) *Running {
	t.Helper()
	ctx := context.Background()
	dir, err := c.Source(ctx)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	opts := c.BuildOptions(dir)
	opts.Log, opts.Progress = controlplane.BuildOutputOf(os.Stderr, c.Subject(), "start it")
	bin, err := controlplane.Binary(ctx, opts)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	if err := installCRDs(ctx, cfg, dir, c.CRDs); err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	ports, err := freePorts()
	if err != nil {
		t.Fatal(err)
	}
	r := &Running{}
	cmd := exec.Command(bin, c.args(kubeconfig, namespace, ports)...)
	cmd.Stdout, cmd.Stderr = r, r
	cmd.Dir = t.TempDir()
	// A test binary killed by its timeout must not leave the controller
	// running against the next control plane.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s's log (last 60 lines):\n%s", c.Name, tail(r.Log(), 60))
		}
	})
	// Both serve a health endpoint once their informers run.
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-done:
			t.Fatalf("%s exited at start: %v\n%s", c.Name, err, tail(r.Log(), 40))
		default:
		}
		if c.ready(ports) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within 60s:\n%s", c.Name, tail(r.Log(), 40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ready asks the controller's own health endpoint.
func (c Controller) ready(ports [2]int) bool {
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[1])
	if c.Name == Flagger.Name {
		url = fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[0])
	}
	resp, err := probe.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

// installCRDs creates the CRDs in files (multi-document YAML, relative to
// dir) and waits until the apiserver serves them.
func installCRDs(ctx context.Context, cfg *rest.Config, dir string, files []string) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	var names []string
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return fmt.Errorf("CRD: %w", err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return fmt.Errorf("CRD %s: %w", f, err)
			}
			if obj.GetKind() != "CustomResourceDefinition" {
				continue
			}
			if _, err := crds.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("CRD %s from %s: %w", obj.GetName(), f, err)
			}
			names = append(names, obj.GetName())
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, name := range names {
		for {
			crd, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err == nil && established(crd) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CRD %s not established within 30s (%v)", name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// probe asks a health endpoint, briefly.
var probe = &http.Client{Timeout: 2 * time.Second}

// freePorts finds two local ports nobody listens on.
func freePorts() ([2]int, error) {
	var ports [2]int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return ports, err
		}
		lns = append(lns, ln)
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}
