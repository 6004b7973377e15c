// Package live talks to the clusters: one client set per kubeconfig
// context, a RESTMapper from discovery that learns kinds installed after
// start, server-side dry-run apply, and dynamic informers that turn live
// changes into notifications for the engine.
package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// FieldManager is the manager name kdrift applies with.
const FieldManager = "kdrift"

// InClusterContext is the context name of the in-cluster configuration:
// the ServiceAccount of the Pod kdrift runs in, used when no kubeconfig
// file names any context (no --kubeconfig, no $KUBECONFIG, no
// ~/.kube/config).
const InClusterContext = "in-cluster"

// inClusterConfig reads a Pod's ServiceAccount token, CA and apiserver
// address; a variable so tests can stand in for a Pod's mounted files.
var inClusterConfig = rest.InClusterConfig

// Options tune how clients reach an apiserver.
type Options struct {
	// DialTimeout bounds opening a TCP connection to the apiserver, so an
	// unreachable address fails fast instead of hanging. Default 3s.
	DialTimeout time.Duration
	// RequestTimeout bounds every non-watch request. Default 15s.
	RequestTimeout time.Duration
	// QPS and Burst are the client-side rate limits per context.
	// Defaults 200 and 400: a full pass dry-runs every object (50 apps of
	// 20 objects is 1,000 requests), and the apiserver's own priority and
	// fairness protects it better than a client-side trickle would.
	QPS   float32
	Burst int
	// DiscoveryCacheDir, when set, keeps each apiserver's discovery in a
	// file there between runs (see DiscoveryCacheTTL), as kubectl does:
	// for one-shot commands, which would otherwise ask for it every run.
	DiscoveryCacheDir string
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{DialTimeout: 3 * time.Second, RequestTimeout: 15 * time.Second, QPS: 200, Burst: 400}
}

// Clients is a cache of client sets, one per kubeconfig context, built
// lazily from one kubeconfig file. It is safe for concurrent use.
type Clients struct {
	kubeconfig string
	opts       Options

	mu   sync.Mutex
	sets map[string]*ClientSet
}

// NewClients returns a cache for the kubeconfig at path; an empty path uses
// the default loading rules ($KUBECONFIG, then ~/.kube/config).
func NewClients(kubeconfigPath string, opts Options) *Clients {
	d := DefaultOptions()
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = d.DialTimeout
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = d.RequestTimeout
	}
	if opts.QPS <= 0 {
		opts.QPS = d.QPS
	}
	if opts.Burst <= 0 {
		opts.Burst = d.Burst
	}
	return &Clients{kubeconfig: kubeconfigPath, opts: opts, sets: map[string]*ClientSet{}}
}

// For returns the client set of a kubeconfig context, building it on first
// use; an empty name means the kubeconfig's current context. Building does
// not contact the apiserver; Check does.
func (c *Clients) For(contextName string) (*ClientSet, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.sets[contextName]; ok {
		return s, nil
	}
	s, err := newClientSet(c.kubeconfig, contextName, c.opts)
	if err != nil {
		return nil, err
	}
	c.sets[contextName] = s
	if s.Context != contextName {
		c.sets[s.Context] = s
	}
	return s, nil
}

// ClientSet is everything kdrift needs to talk to one cluster context.
type ClientSet struct {
	// Context is the resolved kubeconfig context name.
	Context string
	// Server is the apiserver URL, for error messages.
	Server string
	// Config is the REST config requests use (with timeouts).
	Config *rest.Config
	// HTTP is the HTTP client (with Config's timeout) every client of the
	// context shares: build more clients with their ForConfigAndClient
	// constructors and it, so they reuse its connection.
	HTTP *http.Client
	// Dynamic is the dynamic client for requests with a timeout.
	Dynamic dynamic.Interface
	// Discovery is a memory-cached discovery client.
	Discovery discovery.CachedDiscoveryInterface

	watch     dynamic.Interface // no overall timeout: watches are long
	mapper    *restmapper.DeferredDiscoveryRESTMapper
	mapMu     sync.Mutex // guards lastReset and mappings
	lastReset time.Time
	// mappings memoizes the mapper's answers until its next reset: the
	// deferred mapper's own lookup allocates, and a pass asks once per
	// object several times over.
	mappings map[schema.GroupVersionKind]*meta.RESTMapping

	capsMu sync.Mutex // guards kubeVersion and apiVersions
	// kubeVersion is the apiserver's gitVersion from the last version
	// check; apiVersions what discovery served when last loaded (see
	// Capabilities).
	kubeVersion string
	apiVersions []string
}

// loadKubeconfig reads the kubeconfig at path (empty: the default loading
// rules) with contextName (empty: its current context) as the context.
func loadKubeconfig(kubeconfig, contextName string) (clientcmd.ClientConfig, clientcmdapi.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: contextName}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, clientcmdapi.Config{}, fmt.Errorf("kubeconfig %s: cannot load it: %w", describeKubeconfig(kubeconfig), err)
	}
	return cc, raw, nil
}

func newClientSet(kubeconfig, contextName string, opts Options) (*ClientSet, error) {
	cc, raw, err := loadKubeconfig(kubeconfig, contextName)
	if err != nil {
		return nil, err
	}
	if kubeconfig == "" && len(raw.Contexts) == 0 && (contextName == "" || contextName == InClusterContext) {
		// No kubeconfig at all: in a Pod, use its ServiceAccount.
		cfg, err := inClusterConfig()
		if err == nil {
			return buildClientSet(InClusterContext, cfg.Host, cfg, opts)
		}
		return nil, fmt.Errorf("no kubeconfig %s names a context, and no in-cluster ServiceAccount either (%v); pass --kubeconfig", describeKubeconfig(kubeconfig), err)
	}
	name := contextName
	if name == "" {
		name = raw.CurrentContext
	}
	kctx, ok := raw.Contexts[name]
	if !ok || name == "" {
		return nil, fmt.Errorf("context %q: not found in kubeconfig %s; pick one of %s with --context", name, describeKubeconfig(kubeconfig), contextNames(raw.Contexts))
	}
	server := ""
	if cl, ok := raw.Clusters[kctx.Cluster]; ok {
		server = cl.Server
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("context %q (%s): invalid client configuration: %w", name, server, err)
	}
	return buildClientSet(name, server, cfg, opts)
}

// buildClientSet makes the clients of one context from its REST config.
func buildClientSet(name, server string, cfg *rest.Config, opts Options) (*ClientSet, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = opts.QPS, opts.Burst
	cfg.UserAgent = "kdrift"
	dialer := &net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second}
	cfg.Dial = dialer.DialContext
	watchCfg := rest.CopyConfig(cfg)
	cfg.Timeout = opts.RequestTimeout

	// One transport for every client of the context: one TLS handshake
	// and one HTTP/2 connection. (client-go cannot share its transport
	// cache across configs with a Dial function, so each NewForConfig
	// would open a connection of its own.) Watches use it without the
	// overall timeout.
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("context %q (%s): transport: %w", name, server, err)
	}
	watchHTTP := &http.Client{Transport: httpClient.Transport}
	dyn, err := dynamic.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("context %q (%s): dynamic client: %w", name, server, err)
	}
	watch, err := dynamic.NewForConfigAndClient(watchCfg, watchHTTP)
	if err != nil {
		return nil, fmt.Errorf("context %q (%s): watch client: %w", name, server, err)
	}
	disc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("context %q (%s): discovery client: %w", name, server, err)
	}
	var cached discovery.CachedDiscoveryInterface = memory.NewMemCacheClient(disc)
	if opts.DiscoveryCacheDir != "" {
		cached = newDiskDiscovery(cached, opts.DiscoveryCacheDir, cfg.Host)
	}
	return &ClientSet{
		Context:   name,
		Server:    server,
		Config:    cfg,
		HTTP:      httpClient,
		Dynamic:   dyn,
		Discovery: cached,
		watch:     watch,
		mapper:    restmapper.NewDeferredDiscoveryRESTMapper(cached),
	}, nil
}

// Check asks the apiserver for its version, bounded by the request
// timeout, and returns a ClusterError naming the context and server when
// it does not answer.
func (s *ClientSet) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.Config.Timeout)
	defer cancel()
	res := s.discoveryREST().Get().AbsPath("/version").Do(ctx)
	if err := res.Error(); err != nil {
		return s.clusterError("version check", err)
	}
	// The answer is the version Helm charts render with (Capabilities);
	// an answer that does not parse leaves kdrift's default.
	var info version.Info
	if raw, err := res.Raw(); err == nil && json.Unmarshal(raw, &info) == nil && info.GitVersion != "" {
		s.capsMu.Lock()
		s.kubeVersion = info.GitVersion
		s.capsMu.Unlock()
	}
	return nil
}

func (s *ClientSet) discoveryREST() rest.Interface {
	return s.Discovery.RESTClient()
}

// ClusterError is a failure to reach or use a cluster; it names the
// context and the server so the person knows which kubeconfig entry to
// fix.
type ClusterError struct {
	Context string
	Server  string
	// Op is what kdrift was doing: "discovery", "version check", ...
	Op  string
	Err error
}

// Error renders the failure with the context and server first.
func (e *ClusterError) Error() string {
	hint := ""
	if isUnreachable(e.Err) {
		hint = "; the apiserver is unreachable: check that the cluster is running and that the kubeconfig's server address is right"
	}
	return fmt.Sprintf("context %q (server %s): %s failed: %v%s", e.Context, e.Server, e.Op, e.Err, hint)
}

// Unwrap returns the underlying error.
func (e *ClusterError) Unwrap() error { return e.Err }

func (s *ClientSet) clusterError(op string, err error) error {
	var ce *ClusterError
	if errors.As(err, &ce) {
		return err
	}
	return &ClusterError{Context: s.Context, Server: s.Server, Op: op, Err: err}
}

func isUnreachable(err error) bool {
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &oe) || (errors.As(err, &ne) && ne.Timeout()) || errors.Is(err, context.DeadlineExceeded)
}

func describeKubeconfig(path string) string {
	if path == "" {
		return "(default: $KUBECONFIG or ~/.kube/config)"
	}
	return path
}

func contextNames[V any](m map[string]V) string {
	if len(m) == 0 {
		return "(none)"
	}
	return strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}
