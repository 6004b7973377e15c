// Command localcluster runs a throwaway Kubernetes control plane in one
// process: an embedded etcd, the real kube-apiserver and, behind a flag, a
// kube-controller-manager with the controllers that give Deployments status
// and let namespaces finish deleting.
//
// It writes an admin kubeconfig, prints "ready" on stdout once /readyz
// answers ok, and on SIGTERM or SIGINT stops and removes every file it made,
// the kubeconfig included. On Linux it dies with its parent process.
//
//	localcluster --kubeconfig PATH [--controller-manager] [--log FILE|-]
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
	"syscall"
	"time"
)

func main() {
	var (
		kubeconfig = flag.String("kubeconfig", "", "where to write the admin kubeconfig (required)")
		withKCM    = flag.Bool("controller-manager", false, "also run a kube-controller-manager (Deployments get ReplicaSets and status)")
		logPath    = flag.String("log", "", `where control-plane logs go: a file, "-" for stderr, empty to discard`)
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
	if err := dieWithParent(); err != nil {
		fmt.Fprintf(os.Stderr, "localcluster: %v\n", err)
		os.Exit(1)
	}
	if err := run(*kubeconfig, *withKCM, *logPath); err != nil {
		fmt.Fprintf(os.Stderr, "localcluster: %v\n", err)
		os.Exit(1)
	}
}

func run(kubeconfigPath string, withKCM bool, logPath string) (err error) {
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

	apiCtx, cancelAPI := context.WithCancel(ctx)
	defer cancelAPI()
	api, err := startAPIServer(apiCtx, apiServerConfig{
		work:        work,
		pki:         pki,
		etcdURL:     etcd.ClientURL(),
		serviceAcct: withKCM,
	})
	if err != nil {
		return fmt.Errorf("start kube-apiserver: %w", err)
	}

	if err := writeKubeconfig(kubeconfigPath, api.URL, pki.CACertPEM, pki.AdminToken); err != nil {
		return err
	}

	if err := waitReady(ctx, api, 60*time.Second); err != nil {
		return err
	}

	kcmDone := make(chan error, 1)
	if withKCM {
		adminKubeconfig := filepath.Join(work, "kcm.kubeconfig")
		if err := writeKubeconfig(adminKubeconfig, api.URL, pki.CACertPEM, pki.AdminToken); err != nil {
			return err
		}
		go func() { kcmDone <- runControllerManager(apiCtx, adminKubeconfig, pki) }()
	}

	fmt.Println("ready")

	select {
	case <-ctx.Done():
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
	}
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
