package controlplane

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Options says how to run a control plane.
type Options struct {
	// Binary is the localcluster binary (see Binary).
	Binary string
	// ControllerManager also runs a kube-controller-manager, so
	// Deployments get ReplicaSets and status and namespaces finish deleting.
	ControllerManager bool
	// Nodes, when above 0, also runs the kube-scheduler and this many
	// hollow nodes (the real kubelet with a fake container runtime), so
	// Pods are scheduled and become Running and Ready and workloads become
	// healthy. It implies ControllerManager. Start returns once every node
	// is Ready; each node costs a process of its own (about 50 MB).
	Nodes int
	// Kubeconfig is where the admin kubeconfig is written. Default: a new
	// file in the system temp folder, removed by the control plane on exit.
	Kubeconfig string
	// Log receives the control plane's own logs; nil keeps only the last
	// lines, for error messages.
	Log io.Writer
	// StartTimeout bounds the wait for "ready". Default 90s: a cold start
	// on a busy 2-core machine takes several seconds.
	StartTimeout time.Duration
	// PriorityAndFairness keeps the apiserver's API Priority and Fairness
	// on: FlowSchemas and PriorityLevelConfigurations are honoured and
	// requests beyond a level's concurrency get 429. Off by default.
	PriorityAndFairness bool
	// Faults lets the caller inject faults into the running control
	// plane: RestartAPIServer and SetEtcdLatency.
	Faults bool
}

// ControlPlane is a running local control plane.
type ControlPlane struct {
	// Kubeconfig is the admin kubeconfig's path.
	Kubeconfig string
	// Config is a client configuration for the admin user.
	Config *rest.Config

	cmd      *exec.Cmd
	exited   chan struct{}
	exitErr  error
	logs     *ringBuffer
	stopOnce sync.Once

	// Under Options.Faults: commands go to stdin, answers come back on
	// answers, one at a time.
	cmdMu   sync.Mutex
	stdin   io.WriteCloser
	answers chan string
}

// Start runs the control plane and waits until it prints "ready". The
// process dies with its parent (Pdeathsig), so a crashed caller never leaves
// it behind; Stop ends it cleanly and it removes every file it made.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	if opts.Binary == "" {
		return nil, errors.New("control plane: no binary given (see controlplane.Binary)")
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 90 * time.Second
	}
	if opts.Kubeconfig == "" {
		f, err := os.CreateTemp("", "kdrift-localcluster-*.kubeconfig")
		if err != nil {
			return nil, fmt.Errorf("control plane: kubeconfig file: %w", err)
		}
		opts.Kubeconfig = f.Name()
		f.Close()
		// The control plane writes it atomically once up, and removes it.
		os.Remove(opts.Kubeconfig)
	}
	cp := &ControlPlane{Kubeconfig: opts.Kubeconfig, exited: make(chan struct{}), logs: newRingBuffer(60)}
	args := []string{"--kubeconfig", opts.Kubeconfig, "--log", "-"}
	if opts.ControllerManager {
		args = append(args, "--controller-manager")
	}
	if opts.Nodes > 0 {
		args = append(args, "--nodes", strconv.Itoa(opts.Nodes))
	}
	if opts.PriorityAndFairness {
		args = append(args, "--priority-and-fairness")
	}
	if opts.Faults {
		args = append(args, "--faults")
	}
	cmd := exec.Command(opts.Binary, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
	if opts.Faults {
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		cp.stdin, cp.answers = in, make(chan string, 1)
	}
	var logOut io.Writer = cp.logs
	if opts.Log != nil {
		logOut = io.MultiWriter(cp.logs, opts.Log)
	}
	cmd.Stderr = logOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("control plane: start %s: %w", opts.Binary, err)
	}
	cp.cmd = cmd

	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			if line == "ready" && !signalled {
				signalled = true
				close(ready)
				continue
			}
			if cp.answers != nil && (strings.HasPrefix(line, "ok ") || strings.HasPrefix(line, "error ")) {
				select {
				case cp.answers <- line:
				default: // nobody asked: keep it in the logs
					fmt.Fprintln(logOut, line)
				}
				continue
			}
			fmt.Fprintln(logOut, line)
		}
	}()
	go func() {
		cp.exitErr = cmd.Wait()
		close(cp.exited)
	}()

	timer := time.NewTimer(opts.StartTimeout)
	defer timer.Stop()
	select {
	case <-ready:
	case <-cp.exited:
		return nil, fmt.Errorf("control plane exited before it was ready (%v); its last log lines:\n%s", cp.exitErr, cp.logs.String())
	case <-timer.C:
		cp.Stop()
		return nil, fmt.Errorf("control plane not ready within %s; its last log lines:\n%s", opts.StartTimeout, cp.logs.String())
	case <-ctx.Done():
		cp.Stop()
		return nil, ctx.Err()
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", opts.Kubeconfig)
	if err != nil {
		cp.Stop()
		return nil, fmt.Errorf("control plane: read its kubeconfig %s: %w", opts.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	cp.Config = cfg
	return cp, nil
}

// Stop sends SIGTERM, waits up to 20s for a clean exit (the control plane
// removes its files), then kills it. It is safe to call more than once.
func (cp *ControlPlane) Stop() error {
	var err error
	cp.stopOnce.Do(func() {
		if cp.cmd == nil || cp.cmd.Process == nil {
			return
		}
		_ = cp.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-cp.exited:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cp.cmd.Process.Pid, syscall.SIGKILL)
			<-cp.exited
			err = fmt.Errorf("control plane did not stop within 20s and was killed")
		}
		// Only a killed process leaves its kubeconfig behind.
		if _, statErr := os.Stat(cp.Kubeconfig); statErr == nil && filepath.IsAbs(cp.Kubeconfig) {
			_ = os.Remove(cp.Kubeconfig)
		}
	})
	return err
}

// RestartAPIServer stops the kube-apiserver and starts it again on the
// same address, with the same etcd data, certificates and tokens, and
// returns once it is ready. Clients see their connections closed and
// their requests refused while it is down, as in a rolling restart of a
// real control plane. It needs Options.Faults.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context) error {
	return cp.command(ctx, "restart-apiserver", 3*time.Minute)
}

// SetEtcdLatency delays every request the kube-apiserver sends to etcd by
// d (0 ends it; at most 2s), as a slow disk or network under etcd would.
// It needs Options.Faults.
func (cp *ControlPlane) SetEtcdLatency(ctx context.Context, d time.Duration) error {
	return cp.command(ctx, "etcd-latency "+d.String(), 10*time.Second)
}

// command sends one fault command and waits for its answer.
func (cp *ControlPlane) command(ctx context.Context, line string, timeout time.Duration) error {
	if cp.stdin == nil {
		return fmt.Errorf("control plane: %q needs a control plane started with Options.Faults", line)
	}
	cp.cmdMu.Lock()
	defer cp.cmdMu.Unlock()
	if _, err := io.WriteString(cp.stdin, line+"\n"); err != nil {
		return fmt.Errorf("control plane: send %q: %w; its last log lines:\n%s", line, err, cp.logs.String())
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case a := <-cp.answers:
		if a == "ok "+line {
			return nil
		}
		return fmt.Errorf("control plane: %s", strings.TrimPrefix(a, "error "))
	case <-cp.exited:
		return fmt.Errorf("control plane exited during %q (%v); its last log lines:\n%s", line, cp.exitErr, cp.logs.String())
	case <-timer.C:
		return fmt.Errorf("control plane: no answer to %q within %s; its last log lines:\n%s", line, timeout, cp.logs.String())
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Logs returns the control plane's last log lines.
func (cp *ControlPlane) Logs() string { return cp.logs.String() }

// ringBuffer keeps the last n lines written to it.
type ringBuffer struct {
	mu    sync.Mutex
	n     int
	lines []string
	part  string
}

func newRingBuffer(n int) *ringBuffer { return &ringBuffer{n: n} }

func (r *ringBuffer) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.part + string(p)
	parts := strings.Split(s, "\n")
	r.part = parts[len(parts)-1]
	for _, l := range parts[:len(parts)-1] {
		r.lines = append(r.lines, l)
		if len(r.lines) > r.n {
			r.lines = r.lines[len(r.lines)-r.n:]
		}
	}
	return len(p), nil
}

func (r *ringBuffer) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := strings.Join(r.lines, "\n")
	if r.part != "" {
		out += "\n" + r.part
	}
	if strings.TrimSpace(out) == "" {
		return "(no log output)"
	}
	return out
}

// Pid is the control plane's process id.
func (cp *ControlPlane) Pid() int { return cp.cmd.Process.Pid }
