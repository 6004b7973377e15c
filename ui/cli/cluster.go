package cli

import (
	"fmt"
	"net/http"
	"os"

	flag "github.com/spf13/pflag"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"kdrift.dev/kdrift/engine/leader"
	"kdrift.dev/kdrift/engine/live"
)

// leaseFlags say where the Lease and the AppStatuses live, and the
// Lease's timings.
type leaseFlags struct {
	// ns is the flag's value; Namespace resolves its default.
	ns       string
	settings leader.Settings
}

// Namespace is the flag's value, else $KDRIFT_NAMESPACE, else kdrift.
func (l *leaseFlags) Namespace() string {
	if l.ns != "" {
		return l.ns
	}
	return defaultNamespace()
}

// EnvNamespace overrides the default namespace of the Lease and the
// AppStatuses for every command.
const EnvNamespace = "KDRIFT_NAMESPACE"

// defaultNamespace is $KDRIFT_NAMESPACE, then leader.DefaultNamespace.
func defaultNamespace() string {
	if ns := os.Getenv(EnvNamespace); ns != "" {
		return ns
	}
	return leader.DefaultNamespace
}

// registerNamespace adds --kdrift-namespace (the commands that follow or
// nudge a leader; `kdrift ignore` has its own --namespace).
func (l *leaseFlags) registerNamespace(fs *flag.FlagSet) {
	fs.StringVar(&l.ns, "kdrift-namespace", "", "namespace of the repository's Lease and AppStatuses, where kdrift controller runs (default: $"+EnvNamespace+", then kdrift)")
}

// register adds the controller's --namespace and the Lease timings.
func (l *leaseFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.ns, "namespace", "", "namespace of the repository's Lease and AppStatuses; created when missing and allowed (default: $"+EnvNamespace+", then kdrift)")
	d := leader.DefaultSettings()
	fs.DurationVar(&l.settings.Duration, "lease-duration", d.Duration, "how long the healer's Lease holds without renewal: a standby takes over at most this long after the healer dies")
	fs.DurationVar(&l.settings.RenewDeadline, "lease-renew-deadline", d.RenewDeadline, "how long the healer keeps trying to renew its Lease; past it, it stops writing (less than --lease-duration)")
	fs.DurationVar(&l.settings.RetryPeriod, "lease-retry-period", d.RetryPeriod, "how often the healer renews its Lease and a standby tries to take it")
}

// homeClients are the clients of the cluster that holds the Lease and the
// AppStatuses: the --context cluster, or the kubeconfig's current one.
// Their requests have no overall timeout (watches are long); callers bound
// them with contexts.
func homeClients(g *globalFlags) (kubernetes.Interface, dynamic.Interface, error) {
	cs, err := live.NewClients(g.kubeconfig, live.DefaultOptions()).For(g.context)
	if err != nil {
		return nil, nil, err
	}
	return homeClientsOf(cs)
}

// homeClientsOf is homeClients on a context's clients that already exist
// (an engine's), sharing their connection.
func homeClientsOf(cs *live.ClientSet) (kubernetes.Interface, dynamic.Interface, error) {
	cfg := rest.CopyConfig(cs.Config)
	cfg.Timeout = 0
	cfg.QPS, cfg.Burst = 50, 100
	// Both share the context's transport (one connection), without its
	// overall timeout.
	hc := &http.Client{Transport: cs.HTTP.Transport}
	k, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, nil, fmt.Errorf("context %q: %w", cs.Context, err)
	}
	d, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, nil, fmt.Errorf("context %q: %w", cs.Context, err)
	}
	return k, d, nil
}
