package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	cadvisorapi "github.com/google/cadvisor/lib/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	remote "k8s.io/cri-client/pkg"
	fakeremote "k8s.io/cri-client/pkg/fake"
	"k8s.io/klog/v2"
	kubeletapp "k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	cadvisortest "k8s.io/kubernetes/pkg/kubelet/cadvisor/testing"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	"k8s.io/kubernetes/pkg/kubemark"
)

// Every hollow node offers this much, so a demo's 12 render workers at
// 500m CPU and 1Gi each fit on two nodes. The containers run nowhere: the
// capacity is what the scheduler and the kubelet's admission count against.
const (
	nodeCPUCores = 16
	nodeMemory   = 64 << 30
	nodeMaxPods  = 110
)

// nodeName is the name of hollow node i (1-based).
func nodeName(i int) string { return fmt.Sprintf("localcluster-node-%d", i) }

// bigMachine is kubemark's fake cAdvisor with a larger machine.
type bigMachine struct{ cadvisortest.Fake }

// MachineInfo reports nodeCPUCores cores and nodeMemory bytes.
func (m *bigMachine) MachineInfo(logger klog.Logger) (*cadvisorapi.MachineInfo, error) {
	info, err := m.Fake.MachineInfo(logger)
	if err != nil {
		return nil, err
	}
	info.NumCores = nodeCPUCores
	info.MemoryCapacity = nodeMemory
	return info, nil
}

// hollowNodeCommand is the first argument that makes this binary run one
// hollow node instead of a control plane (see runHollowNode).
const hollowNodeCommand = "hollow-node"

// hollowNodes are the hollow nodes' processes.
type hollowNodes struct {
	procs []*exec.Cmd
	// Done receives the first node process's exit.
	Done chan error
}

// startNodes starts n hollow nodes. Each runs in a process of its own (this
// binary again, with hollowNodeCommand): the kubelet registers process-wide
// metrics and state, so two cannot share a process. Their logs go to
// logOut; each one's files live under work, removed with it.
func startNodes(kubeconfig, work string, n int, logOut io.Writer) (*hollowNodes, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this binary to start the nodes: %w", err)
	}
	ns := &hollowNodes{Done: make(chan error, n)}
	for i := 1; i <= n; i++ {
		name := nodeName(i)
		cmd := exec.Command(self, hollowNodeCommand, "--name", name, "--kubeconfig", kubeconfig,
			"--dir", filepath.Join(work, fmt.Sprintf("node-%d", i)))
		cmd.Stdout = logOut
		cmd.Stderr = logOut
		if err := cmd.Start(); err != nil {
			ns.stop()
			return nil, fmt.Errorf("start node %s: %w", name, err)
		}
		ns.procs = append(ns.procs, cmd)
		go func() {
			err := cmd.Wait()
			if err == nil {
				err = errors.New("exited")
			}
			ns.Done <- fmt.Errorf("node %s: %w", name, err)
		}()
	}
	return ns, nil
}

// stop ends the node processes: SIGTERM, then SIGKILL after 10s.
func (ns *hollowNodes) stop() {
	if ns == nil {
		return
	}
	for _, p := range ns.procs {
		_ = p.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range ns.procs {
		for time.Now().Before(deadline) {
			if err := p.Process.Signal(syscall.Signal(0)); err != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = p.Process.Kill()
	}
}

// runHollowNode is `localcluster hollow-node`: one hollow node until SIGTERM
// or the parent's death. It is how the control plane starts its nodes, not
// a command for people.
func runHollowNode(args []string) error {
	fs := flag.NewFlagSet(hollowNodeCommand, flag.ContinueOnError)
	name := fs.String("name", "", "the Node's name")
	kubeconfig := fs.String("kubeconfig", "", "an admin kubeconfig of the control plane")
	dir := fs.String("dir", "", "a folder for the node's files")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *name == "" || *kubeconfig == "" || *dir == "" {
		return errors.New("hollow-node needs --name, --kubeconfig and --dir")
	}
	if err := dieWithParent(); err != nil {
		return err
	}
	configureLogging(os.Stderr)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	restCfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	restCfg.QPS, restCfg.Burst = 50, 100
	// The kubelet sets RLIMIT_NOFILE to its MaxOpenFiles: keep what the
	// process has rather than kubemark's 1024.
	maxFiles := int64(1 << 20)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		maxFiles = int64(lim.Cur)
	}
	if err := startNode(ctx, restCfg, *dir, *name, hostIP(), maxFiles); err != nil {
		return fmt.Errorf("node %s: %w", *name, err)
	}
	<-ctx.Done()
	return nil
}

// startNode starts one hollow kubelet in this process, its files in dir.
// It returns once the kubelet's loops run; they stop with ctx.
func startNode(ctx context.Context, restCfg *rest.Config, dir, name string, nodeIP net.IP, maxFiles int64) error {
	flags, cfg := kubemark.GetHollowKubeletConfig(&kubemark.HollowKubeletOptions{
		NodeName:    name,
		MaxPods:     nodeMaxPods,
		NodeLabels:  map[string]string{"kdrift.dev/localcluster": "hollow"},
		KubeletPort: 10250, // not served: EnableServer is off below
	})
	// kubemark made its folders in the system temp folder; this node's
	// live under work instead, which the control plane removes on exit.
	_ = os.RemoveAll(flags.RootDirectory)
	flags.RootDirectory = dir
	flags.CertDirectory = filepath.Join(dir, "pki")
	cfg.StaticPodPath = filepath.Join(dir, "static-pods")
	cfg.PodLogsDir = filepath.Join(dir, "pod-logs")
	for _, d := range []string{dir, cfg.StaticPodPath, cfg.PodLogsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if nodeIP != nil {
		flags.NodeIP = nodeIP.String()
	}
	// Nothing reaches a hollow kubelet (no logs or exec: there are no
	// containers), and N of them would fight over one port.
	cfg.EnableServer = false
	cfg.ReadOnlyPort = 0
	cfg.MaxOpenFiles = maxFiles
	// Resync every Pod every 5s rather than kubemark's 10s: a Pod whose
	// update was missed reaches its status sooner.
	cfg.SyncFrequency.Duration = 5 * time.Second
	cfg.NodeStatusUpdateFrequency.Duration = 10 * time.Second

	client, err := clientset.NewForConfig(withAgent(restCfg, "hollow-kubelet/"+name))
	if err != nil {
		return err
	}
	hb := withAgent(restCfg, "hollow-kubelet/"+name)
	hb.Timeout = cfg.NodeStatusUpdateFrequency.Duration
	hb.QPS = -1
	heartbeat, err := clientset.NewForConfig(hb)
	if err != nil {
		return err
	}

	runtime := fakeremote.NewFakeRemoteRuntime()
	endpoint := "unix://" + filepath.Join(dir, "cri.sock")
	if err := runtime.Start(endpoint); err != nil {
		return fmt.Errorf("fake container runtime: %w", err)
	}
	go func() { <-ctx.Done(); runtime.Stop() }()
	runtimeService, err := remote.NewRemoteRuntimeServiceBuilder().
		WithEndpoint(endpoint).
		WithConnectionTimeout(15 * time.Second).
		Build(ctx)
	if err != nil {
		return fmt.Errorf("fake container runtime client: %w", err)
	}

	hk := kubemark.NewHollowKubelet(flags, cfg, client, heartbeat,
		&bigMachine{cadvisortest.Fake{NodeName: name}},
		runtime.ImageService, runtimeService, cm.NewStubContainerManager())
	// RunKubelet starts the kubelet's loops and returns; they stop with ctx.
	return kubeletapp.RunKubelet(ctx, &options.KubeletServer{
		KubeletFlags:         *hk.KubeletFlags,
		KubeletConfiguration: *hk.KubeletConfiguration,
	}, hk.KubeletDeps)
}

func withAgent(c *rest.Config, agent string) *rest.Config {
	c = rest.CopyConfig(c)
	c.UserAgent = agent
	c.ContentType = "application/vnd.kubernetes.protobuf"
	return c
}

// hostIP is the address the hollow nodes report as theirs: the kubelet
// wants a non-loopback address of a local interface. Nil when there is none
// (the kubelet then finds one itself or leaves the node without one).
func hostIP() net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip := ipn.IP
		if ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsMulticast() || ip.IsUnspecified() {
			continue
		}
		if ip.To4() != nil {
			return ip
		}
	}
	return nil
}

// nodeSchedulable reports whether node is Ready and no longer carries the
// not-ready taint it was created with.
func nodeSchedulable(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady {
			return false
		}
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitNodesReady waits until n Nodes report Ready, or a node process ends.
func waitNodesReady(ctx context.Context, kubeconfig string, ns *hollowNodes, n int, timeout time.Duration) error {
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	cs, err := clientset.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	last := "no Node registered yet"
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-ns.Done:
			return false, fmt.Errorf("hollow %w", err)
		default:
		}
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		ready := 0
		for _, node := range nodes.Items {
			if nodeSchedulable(&node) {
				ready++
			}
		}
		last = fmt.Sprintf("%d of %d Nodes registered, %d Ready without the not-ready taint", len(nodes.Items), n, ready)
		return ready >= n, nil
	})
	if err != nil {
		return fmt.Errorf("nodes not Ready within %s (%s): %w", timeout, last, err)
	}
	return nil
}
