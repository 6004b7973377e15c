// Command localcluster runs a throwaway Kubernetes control plane in one
// process: an embedded etcd, the real kube-apiserver and, behind flags, a
// kube-controller-manager with the controllers that give Deployments status
// and let namespaces finish deleting, and nodes that run Pods: the real
// kube-scheduler and N hollow kubelets (kubemark's: the real kubelet with a
// fake container runtime), so workloads become Ready.
//
// It writes an admin kubeconfig, prints "ready" on stdout once /readyz
// answers ok (and, with --nodes, once every node is Ready), and on SIGTERM or
// SIGINT stops and removes every file it made, the kubeconfig included. On
// Linux it dies with its parent process.
//
// --priority-and-fairness keeps the apiserver's API Priority and Fairness
// on (off by default: it costs a little at start and tests rarely need
// it). --faults reads fault commands on stdin, a line each, answered on
// stdout: "restart-apiserver" restarts the kube-apiserver on its port,
// "etcd-latency 200ms" slows every request it sends to etcd.
//
//	localcluster --kubeconfig PATH [--controller-manager] [--nodes N] [--log FILE|-]
//	             [--priority-and-fairness] [--faults]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/tools/cache"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == hollowNodeCommand {
		signal.Ignore(syscall.SIGPIPE)
		if err := runHollowNode(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "localcluster %s: %v\n", hollowNodeCommand, err)
			os.Exit(1)
		}
		return
	}
	var (
		kubeconfig = flag.String("kubeconfig", "", "where to write the admin kubeconfig (required)")
		withKCM    = flag.Bool("controller-manager", false, "also run a kube-controller-manager (Deployments get ReplicaSets and status)")
		nodes      = flag.Int("nodes", 0, "run the kube-scheduler and this many hollow nodes, so Pods run and become Ready (implies --controller-manager)")
		logPath    = flag.String("log", "", `where control-plane logs go: a file, "-" for stderr, empty to discard`)
		apf        = flag.Bool("priority-and-fairness", false, "keep the apiserver's API Priority and Fairness on (FlowSchemas are honoured)")
		faults     = flag.Bool("faults", false, `read fault commands on stdin ("restart-apiserver", "etcd-latency DURATION")`)
	)
	flag.Parse()
	// Logs and "ready" may go to pipes whose reader dies first (a crashed
	// test binary). Without this, the first write after that kills the
	// process with SIGPIPE before it removes its files.
	signal.Ignore(syscall.SIGPIPE)
	if *kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "localcluster: --kubeconfig PATH is required: it names the file the admin kubeconfig is written to")
		os.Exit(2)
	}
	if *nodes < 0 || *nodes > maxNodes {
		fmt.Fprintf(os.Stderr, "localcluster: --nodes %d: give a number of nodes from 0 to %d\n", *nodes, maxNodes)
		os.Exit(2)
	}
	if *nodes > 0 {
		*withKCM = true
	}
	if err := dieWithParent(); err != nil {
		fmt.Fprintf(os.Stderr, "localcluster: %v\n", err)
		os.Exit(1)
	}
	if err := run(*kubeconfig, *withKCM, *nodes, *logPath, *apf, *faults); err != nil {
		fmt.Fprintf(os.Stderr, "localcluster: %v\n", err)
		os.Exit(1)
	}
}

// maxNodes bounds --nodes: each hollow node is a whole kubelet in a
// process of its own.
const maxNodes = 20

func run(kubeconfigPath string, withKCM bool, nodes int, logPath string, apf, faults bool) (err error) {
	kubeconfigPath, err = filepath.Abs(kubeconfigPath)
	if err != nil {
		return err
	}
	logOut, closeLog, err := openLog(logPath)
	if err != nil {
		return err
	}
	defer closeLog()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	work, err := os.MkdirTemp("", "kdrift-localcluster-")
	if err != nil {
		return fmt.Errorf("create work folder: %w", err)
	}
	// Everything made lives in work, except the kubeconfig the caller named.
	defer func() {
		if rmErr := os.RemoveAll(work); rmErr != nil && err == nil {
			err = fmt.Errorf("remove work folder %s: %w", work, rmErr)
		}
	}()
	defer os.Remove(kubeconfigPath)

	configureLogging(logOut)

	pki, err := newPKI(work)
	if err != nil {
		return fmt.Errorf("make certificates: %w", err)
	}

	etcd, err := startEtcd(filepath.Join(work, "etcd"), logOut)
	if err != nil {
		return fmt.Errorf("start etcd: %w", err)
	}
	defer etcd.Close()

	// Under --faults the apiserver reaches etcd through a proxy that
	// can slow it.
	etcdURL := etcd.ClientURL()
	var slow *latencyProxy
	if faults {
		if slow, err = newLatencyProxy(strings.TrimPrefix(etcdURL, "http://")); err != nil {
			return fmt.Errorf("etcd proxy: %w", err)
		}
		defer slow.Close()
		etcdURL = slow.URL()
	}

	// The components other than the apiserver stop with apiCtx; the
	// apiserver with srvCtx, which a restart replaces.
	apiCtx, cancelAPI := context.WithCancel(ctx)
	defer cancelAPI()
	srvCtx, cancelSrv := context.WithCancel(apiCtx)
	defer func() { cancelSrv() }()
	apiCfg := apiServerConfig{
		work:        work,
		pki:         pki,
		etcdURL:     etcdURL,
		serviceAcct: withKCM,
		apf:         apf,
		restartable: faults,
	}
	if apiCfg.informerName, err = cache.NewInformerName("kube-apiserver"); err != nil {
		return err
	}
	api, err := startAPIServer(srvCtx, apiCfg)
	if err != nil {
		return fmt.Errorf("start kube-apiserver: %w", err)
	}
	apiCfg.port = api.Port

	if err := writeKubeconfig(kubeconfigPath, api.URL, pki.CACertPEM, pki.AdminToken); err != nil {
		return err
	}

	if err := waitReady(ctx, api, 60*time.Second); err != nil {
		return err
	}

	kcmDone := make(chan error, 1)
	schedDone := make(chan error, 1)
	var hollow *hollowNodes
	defer func() { hollow.stop() }()
	var nodesDone <-chan error
	if withKCM || nodes > 0 {
		adminKubeconfig := filepath.Join(work, "admin.kubeconfig")
		if err := writeKubeconfig(adminKubeconfig, api.URL, pki.CACertPEM, pki.AdminToken); err != nil {
			return err
		}
		go func() { kcmDone <- runControllerManager(apiCtx, adminKubeconfig, pki, nodes > 0) }()
		if nodes > 0 {
			go func() { schedDone <- runScheduler(apiCtx, adminKubeconfig) }()
			if hollow, err = startNodes(adminKubeconfig, work, nodes, logOut); err != nil {
				return fmt.Errorf("hollow nodes: %w", err)
			}
			nodesDone = hollow.Done
			if err := waitNodesReady(ctx, adminKubeconfig, hollow, nodes, 60*time.Second); err != nil {
				return err
			}
		}
	}

	fmt.Println("ready")

	var commands <-chan string
	if faults {
		commands = readCommands(os.Stdin)
	}
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case line, open := <-commands:
			if !open {
				commands = nil
				continue
			}
			name, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
			switch name {
			case cmdRestartAPIServer:
				cancelSrv()
				select {
				case <-api.Done:
				case <-time.After(90 * time.Second):
					return errors.New("restart-apiserver: the kube-apiserver did not stop within 90s")
				}
				srvCtx, cancelSrv = context.WithCancel(apiCtx)
				if api, err = startAPIServer(srvCtx, apiCfg); err != nil {
					return fmt.Errorf("restart-apiserver: start kube-apiserver: %w", err)
				}
				if err := waitReady(ctx, api, 60*time.Second); err != nil {
					return fmt.Errorf("restart-apiserver: %w", err)
				}
				answer(line, nil)
			case cmdEtcdLatency:
				d, perr := time.ParseDuration(arg)
				if perr == nil && (d < 0 || d > maxEtcdLatency) {
					perr = fmt.Errorf("give a duration from 0s to %s", maxEtcdLatency)
				}
				if perr == nil {
					slow.setDelay(d)
				}
				answer(line, perr)
			default:
				answer(line, fmt.Errorf("unknown command; known: %s, %s DURATION", cmdRestartAPIServer, cmdEtcdLatency))
			}
		case err := <-api.Done:
			if err == nil {
				err = errors.New("kube-apiserver stopped on its own")
			}
			return fmt.Errorf("kube-apiserver: %w", err)
		case err := <-kcmDone:
			if err == nil {
				err = errors.New("stopped on its own")
			}
			return fmt.Errorf("kube-controller-manager: %w", err)
		case err := <-schedDone:
			if err == nil {
				err = errors.New("stopped on its own")
			}
			return fmt.Errorf("kube-scheduler: %w", err)
		case err := <-nodesDone:
			return fmt.Errorf("hollow %w", err)
		}
	}

	hollow.stop()
	cancelAPI()
	select {
	case <-api.Done:
	case <-time.After(15 * time.Second):
		fmt.Fprintln(logOut, "localcluster: kube-apiserver did not stop within 15s; exiting anyway")
	}
	return nil
}

func openLog(path string) (io.Writer, func(), error) {
	switch path {
	case "":
		return io.Discard, func() {}, nil
	case "-":
		return os.Stderr, func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("open log file: %w", err)
	}
	return f, func() { _ = f.Close() }, nil
}
