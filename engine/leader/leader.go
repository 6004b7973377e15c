// Package leader elects the one healer of a repository on a cluster: a
// coordination.k8s.io/v1 Lease per repository identity (client-go
// tools/leaderelection), in the namespace kdrift is told. The holder heals
// and prunes; everyone else compares and shows. It also lets a viewer
// observe who holds the Lease without competing for it.
//
// The package never prints: what happens is reported through callbacks.
package leader

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Labels and annotations on the Lease (and on every AppStatus).
const (
	// LabelRepo is a short stable hash of the repository identity (a
	// label value cannot hold a URL), for selecting one repository's
	// objects.
	LabelRepo = "kdrift.dev/repo-hash"
	// AnnotationRepo is the full repository identity.
	AnnotationRepo = "kdrift.dev/repo"
	// LabelManagedBy marks kdrift's own objects.
	LabelManagedBy = "app.kubernetes.io/managed-by"
)

// DefaultNamespace is where the Lease and the AppStatuses live unless
// --namespace says otherwise.
const DefaultNamespace = "kdrift"

// Settings are the Lease's timings (client-go's leaderelection).
type Settings struct {
	// Duration is how long a Lease not renewed stays the holder's: a
	// standby takes over at most this long after the holder died.
	Duration time.Duration
	// RenewDeadline is how long the holder keeps trying to renew before
	// it gives up; past it, it stops writing at once. Less than Duration.
	RenewDeadline time.Duration
	// RetryPeriod is how often the holder renews and a standby tries.
	RetryPeriod time.Duration
}

// DefaultSettings are the timings of Kubernetes' own controllers: 15 s
// duration, 10 s renew deadline, 2 s retry. A dead leader's Apps wait at
// most 15 s (plus one retry) for the standby to heal.
func DefaultSettings() Settings {
	return Settings{Duration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
}

// Validate says what is wrong with the timings, naming the flags.
func (s Settings) Validate() error {
	switch {
	case s.Duration <= 0 || s.RenewDeadline <= 0 || s.RetryPeriod <= 0:
		return fmt.Errorf("lease settings %s: every duration must be positive", s)
	case s.Duration <= s.RenewDeadline:
		return fmt.Errorf("lease settings %s: --lease-duration must be longer than --lease-renew-deadline", s)
	case float64(s.RenewDeadline) <= leaderelection.JitterFactor*float64(s.RetryPeriod):
		return fmt.Errorf("lease settings %s: --lease-renew-deadline must be longer than %.1f x --lease-retry-period", s, leaderelection.JitterFactor)
	}
	return nil
}

// String is the timings as the flags spell them.
func (s Settings) String() string {
	return fmt.Sprintf("(duration %s, renew deadline %s, retry %s)", s.Duration, s.RenewDeadline, s.RetryPeriod)
}

// Hash is the short stable hash of a repository identity the Lease and
// AppStatus names and LabelRepo carry: 10 hex digits of its SHA-256.
func Hash(identity string) string {
	sum := sha256.Sum256([]byte(identity))
	return hex.EncodeToString(sum[:])[:10]
}

// LeaseName is the Lease of a repository identity (which includes the
// branch): "kdrift-" and its Hash.
func LeaseName(identity string) string { return "kdrift-" + Hash(identity) }

// Options configure an Elector.
type Options struct {
	// Client reaches the cluster the Lease lives in.
	Client kubernetes.Interface
	// Namespace holds the Lease (default DefaultNamespace).
	Namespace string
	// Identity is the repository identity (source.Repo.Identity).
	Identity string
	// Holder names this process in the Lease (default: the host name and
	// a random suffix, so two processes on one host differ).
	Holder string
	// Settings are the timings (default DefaultSettings).
	Settings Settings
	// OnStarted is called when this process starts leading.
	OnStarted func()
	// OnStopped is called when it stops leading (the Lease was lost or
	// released).
	OnStopped func()
	// OnError is told why a try to take or renew the Lease failed
	// (forbidden, namespace missing), once per distinct message.
	OnError func(error)
	// KeepOnStop leaves the Lease held when Run's context ends, as a
	// killed process would (for fail-over tests and benchmarks); by
	// default it is released so a standby takes over at once.
	KeepOnStop bool
	// Shards, when 2 or more, makes this the repository Lease of one
	// replica of a sharded controller (see Sharder): the Lease says how
	// many shards while it holds it. Otherwise this process is a single
	// healer, which never takes the Lease while a shard Lease is held.
	Shards int
}

// Elector takes part in the election for one repository's Lease.
type Elector struct {
	opts Options

	mu      sync.Mutex
	leading bool
	renewed time.Time
	lastErr string
}

// New prepares an Elector; Run takes part.
func New(opts Options) (*Elector, error) {
	if err := defaults(&opts.Namespace, opts.Identity, &opts.Holder, &opts.Settings); err != nil {
		return nil, err
	}
	return &Elector{opts: opts}, nil
}

// defaults fills in the namespace, the holder and the timings, and checks
// them and the identity.
func defaults(namespace *string, identity string, holder *string, settings *Settings) error {
	if *namespace == "" {
		*namespace = DefaultNamespace
	}
	if *settings == (Settings{}) {
		*settings = DefaultSettings()
	}
	if err := settings.Validate(); err != nil {
		return err
	}
	if identity == "" {
		return errors.New("leader: the repository identity is empty")
	}
	if *holder == "" {
		*holder = DefaultHolder()
	}
	return nil
}

// DefaultHolder is the host name (a Pod's name in a cluster) with a short
// random suffix.
func DefaultHolder() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "kdrift"
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return host + "-" + hex.EncodeToString(b)
}

// Holder is this process's name in the Lease.
func (e *Elector) Holder() string { return e.opts.Holder }

// Namespace is where the Lease lives.
func (e *Elector) Namespace() string { return e.opts.Namespace }

// Name is the Lease's name.
func (e *Elector) Name() string { return LeaseName(e.opts.Identity) }

// Leading reports whether this process holds the Lease now: it started
// leading and its last successful renewal is younger than the renew
// deadline. It is the engine's MayWrite: a renewal that stalls stops
// writes before the Lease can pass to anyone else.
func (e *Elector) Leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading && time.Since(e.renewed) < e.opts.Settings.RenewDeadline
}

// Run takes part in the election until ctx ends: it waits as a standby,
// leads when it takes the Lease, and when it loses it goes back to
// waiting. On ctx's end a held Lease is released, so a standby takes over
// at once.
func (e *Elector) Run(ctx context.Context) {
	for ctx.Err() == nil {
		lock := &lock{e: e, inner: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: e.opts.Namespace, Name: e.Name()},
			Client:     e.opts.Client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: e.opts.Holder},
			Labels:     e.labels(),
		}}
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   e.opts.Settings.Duration,
			RenewDeadline:   e.opts.Settings.RenewDeadline,
			RetryPeriod:     e.opts.Settings.RetryPeriod,
			ReleaseOnCancel: !e.opts.KeepOnStop,
			Name:            e.Name(),
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) {
					e.mu.Lock()
					e.leading = true
					e.mu.Unlock()
					if e.opts.OnStarted != nil {
						e.opts.OnStarted()
					}
				},
				OnStoppedLeading: func() {
					e.mu.Lock()
					was := e.leading
					e.leading = false
					e.mu.Unlock()
					if was && e.opts.OnStopped != nil {
						e.opts.OnStopped()
					}
				},
			},
		})
		if err != nil {
			// Only invalid settings fail here, and New checked them.
			e.report(err)
			return
		}
		le.Run(ctx)
	}
}

// labels are the Lease's; LabelShards is always written ("0" for a
// single healer), so a Lease taken over from a sharded controller does not
// keep its number.
func (e *Elector) labels() map[string]string {
	shards := 0
	if e.opts.Shards >= 2 {
		shards = e.opts.Shards
	}
	return map[string]string{LabelManagedBy: "kdrift", LabelRepo: Hash(e.opts.Identity), LabelShards: strconv.Itoa(shards)}
}

// report tells OnError about a failure once per distinct message; a
// conflict (another candidate wrote first) and a cancelled request are
// the election working, not failures.
func (e *Elector) report(err error) {
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return
	}
	if errors.Is(err, errShardsHeld) {
		// The sharded controller heals: waiting is the answer, said once.
		err = fmt.Errorf("%w: this process stays a standby until they are released", err)
	}
	e.mu.Lock()
	same := e.lastErr == err.Error()
	e.lastErr = err.Error()
	e.mu.Unlock()
	if !same && e.opts.OnError != nil {
		e.opts.OnError(fmt.Errorf("lease %s/%s: %w", e.opts.Namespace, e.Name(), err))
	}
}

// lock is client-go's LeaseLock that also records each successful write
// of this holder (for Leading) and creates the Lease with the repository
// identity annotated.
type lock struct {
	e     *Elector
	inner *resourcelock.LeaseLock
	// holder is the holder the last Get saw.
	holder string
}

func (l *lock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	r, b, err := l.inner.Get(ctx)
	if err != nil && !apierrors.IsNotFound(err) {
		l.e.report(err)
	}
	l.holder = ""
	if r != nil {
		l.holder = r.HolderIdentity
	}
	return r, b, err
}

// mayTake refuses a single healer the Lease (held by someone else or
// nobody) while a shard Lease of the repository is held: a sharded
// controller heals its Apps, and it takes new shards only while this
// Lease is held with its number of shards.
func (l *lock) mayTake(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	if l.e.opts.Shards >= 2 || ler.HolderIdentity != l.e.opts.Holder || l.holder == l.e.opts.Holder {
		return nil // sharded, a release, or a renewal
	}
	held, err := shardsHeld(ctx, l.e.opts.Client, l.e.opts.Namespace, l.e.opts.Identity)
	if err != nil {
		return err
	}
	if held {
		return errShardsHeld
	}
	return nil
}

func (l *lock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	if err := l.mayTake(ctx, ler); err != nil {
		l.e.report(err)
		return err
	}
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: l.inner.LeaseMeta.Name, Namespace: l.inner.LeaseMeta.Namespace,
			Labels:      l.e.labels(),
			Annotations: map[string]string{AnnotationRepo: l.e.opts.Identity},
		},
		Spec: resourcelock.LeaderElectionRecordToLeaseSpec(&ler),
	}
	t := time.Now()
	if _, err := l.inner.Client.Leases(lease.Namespace).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			l.e.report(err)
		}
		return err
	}
	// Load it into the inner lock, which Update needs.
	if _, _, err := l.inner.Get(ctx); err != nil {
		return err
	}
	l.renewed(t, ler)
	return nil
}

func (l *lock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	if err := l.mayTake(ctx, ler); err != nil {
		l.e.report(err)
		return err
	}
	t := time.Now()
	if err := l.inner.Update(ctx, ler); err != nil {
		l.e.report(err)
		return err
	}
	l.renewed(t, ler)
	return nil
}

// renewed records a successful write of the record at t (taken before the
// request, so Leading errs on the safe side).
func (l *lock) renewed(t time.Time, ler resourcelock.LeaderElectionRecord) {
	if ler.HolderIdentity != l.e.opts.Holder {
		return // a release
	}
	l.e.mu.Lock()
	l.e.renewed = t
	l.e.mu.Unlock()
}

func (l *lock) RecordEvent(string) {}
func (l *lock) Describe() string   { return l.inner.Describe() }
func (l *lock) Identity() string   { return l.inner.Identity() }

// Gate is the engine's MayWrite for a process that may lead: closed until
// Set, then open exactly while the Elector leads, or, once SetSharder was
// called, exactly while the Sharder may write the App. The zero Gate is
// closed.
type Gate struct {
	e       atomic.Pointer[Elector]
	s       atomic.Pointer[Sharder]
	sharded atomic.Bool
}

// Set makes the gate follow e.
func (g *Gate) Set(e *Elector) { g.e.Store(e) }

// SetSharder makes the gate answer per App from s (a sharded replica).
func (g *Gate) SetSharder(s *Sharder) { g.s.Store(s) }

// Serves reports whether this process looks after App name: with a
// Sharder, whether it holds the name's shard (a replica that has not
// started its Sharder yet serves nothing); otherwise always. It is a
// sharded controller's engine Options.Serves.
func (g *Gate) Serves(name string) bool {
	if s := g.s.Load(); s != nil {
		return s.Serves(name)
	}
	return !g.sharded.Load()
}

// Sharded marks the gate as a sharded replica's before its Sharder is
// set: until then it serves and opens nothing.
func (g *Gate) Sharded() { g.sharded.Store(true) }

// Leads reports whether this process heals anything now: it holds the
// repository's Lease, or, sharded, a shard.
func (g *Gate) Leads() bool {
	if s := g.s.Load(); s != nil {
		return len(s.Held()) > 0
	}
	e := g.e.Load()
	return e != nil && e.Leading()
}

// Open reports whether App name may be healed now.
func (g *Gate) Open(name string) bool {
	if s := g.s.Load(); s != nil {
		return s.MayWrite(name)
	}
	if g.sharded.Load() {
		return false
	}
	e := g.e.Load()
	return e != nil && e.Leading()
}
