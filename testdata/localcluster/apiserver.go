package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	goflag "flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

type apiServerConfig struct {
	work        string
	pki         *pki
	etcdURL     string
	serviceAcct bool // the controller-manager runs and creates ServiceAccounts
	// port is the port to serve on; 0 lets the kernel pick one. A
	// restarted apiserver takes its predecessor's.
	port int
	// apf keeps API Priority and Fairness on (FlowSchemas and priority
	// levels are honoured; requests beyond a level's share get 429).
	apf bool
	// restartable: the apiserver may be restarted (--faults).
	restartable bool
	// informerName names the apiserver's informers for their metrics.
	// A name is unique in a process and Run would register it again on
	// a restart: every apiserver of this process shares one.
	informerName *cache.InformerName
}

// apiServer is a running kube-apiserver.
type apiServer struct {
	URL  string
	Port int
	CA   []byte
	Auth string
	// Done receives Run's result once the server has stopped.
	Done chan error
}

// configureLogging sends klog (used by every control-plane component) to out,
// once per message: without one_output klog writes an error three times.
func configureLogging(out io.Writer) {
	fs := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(fs)
	for k, v := range map[string]string{
		"logtostderr":     "false",
		"alsologtostderr": "false",
		"one_output":      "true",
		"stderrthreshold": "FATAL",
		"v":               "0",
	} {
		if err := fs.Set(k, v); err != nil {
			panic(fmt.Sprintf("klog flag %s: %v", k, err))
		}
	}
	klog.SetOutput(out)
	// The control plane's own loopback clients must not print deprecation
	// warnings to our stderr.
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
}

func startAPIServer(ctx context.Context, c apiServerConfig) (*apiServer, error) {
	// The listener is open before the server starts, so no other process can
	// take the port between choosing it and binding it.
	ln, err := listenLoopback(c.port)
	if err != nil {
		return nil, fmt.Errorf("listen on loopback: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port

	s := options.NewServerRunOptions()
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	args := []string{
		"--etcd-servers=" + c.etcdURL,
		"--cert-dir=" + c.work,
		"--tls-cert-file=" + c.pki.ServingCert,
		"--tls-private-key-file=" + c.pki.ServingKey,
		"--client-ca-file=" + c.pki.CACertFile,
		"--token-auth-file=" + c.pki.TokenFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + c.pki.SAPubFile,
		"--service-account-signing-key-file=" + c.pki.SAKeyFile,
		"--service-cluster-ip-range=10.0.0.0/16",
		"--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	}
	if !c.apf {
		args = append(args, "--enable-priority-and-fairness=false")
	}
	if c.restartable {
		// A restart stops the server gracefully: without this, open
		// watches hold the HTTP server's shutdown for the whole request
		// timeout (60s). With it, in-flight requests drain, later ones
		// get 429 with Retry-After, then the server closes in 2s.
		args = append(args, "--shutdown-send-retry-after=true")
	}
	if !c.serviceAcct {
		// Without the controller-manager nobody creates the "default"
		// ServiceAccount, and the admission plugin would refuse every Pod.
		args = append(args, "--disable-admission-plugins=ServiceAccount")
	}
	if err := fs.Parse(args); err != nil {
		ln.Close()
		return nil, fmt.Errorf("apiserver flags: %w", err)
	}
	s.SecureServing.Listener = ln
	s.SecureServing.BindPort = port

	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		ln.Close()
		return nil, err
	}
	completed, err := s.Complete(ctx)
	if err != nil {
		ln.Close()
		return nil, err
	}
	if errs := completed.Validate(); len(errs) != 0 {
		ln.Close()
		return nil, utilerrors.NewAggregate(errs)
	}
	completed.InformerName = c.informerName

	a := &apiServer{
		URL:  fmt.Sprintf("https://127.0.0.1:%d", port),
		Port: port,
		CA:   c.pki.CACertPEM,
		Auth: c.pki.AdminToken,
		Done: make(chan error, 1),
	}
	go func() { a.Done <- app.Run(ctx, completed) }()
	return a, nil
}

// listenLoopback listens on 127.0.0.1:port (any port when 0). A port
// just closed by a stopping apiserver may take a moment to be free.
func listenLoopback(port int) (net.Listener, error) {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(15 * time.Second)
	for {
		ln, err := net.Listen("tcp", addr)
		if err == nil || port == 0 || time.Now().After(deadline) {
			return ln, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitReady polls /readyz until it answers ok, the server stops, or the
// timeout passes.
func waitReady(ctx context.Context, a *apiServer, timeout time.Duration) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(a.CA)
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
	deadline := time.Now().Add(timeout)
	last := "no answer yet"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL+"/readyz", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+a.Auth)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
		} else {
			last = err.Error()
		}
		select {
		case err := <-a.Done:
			return fmt.Errorf("kube-apiserver stopped before it was ready: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver not ready within %s; last /readyz answer: %s", timeout, last)
		}
	}
}
