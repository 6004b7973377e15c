package leader

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// Labels of the shard and member Leases (see Sharder).
const (
	// LabelShards is the number of shards a sharded controller splits the
	// repository's Apps into, on the repository's Lease while a sharded
	// controller holds it and on every shard Lease.
	LabelShards = "kdrift.dev/shards"
	// LabelRole says what a Lease of the repository is besides the
	// repository's own: RoleShard or RoleMember.
	LabelRole = "kdrift.dev/lease-role"
	// RoleShard marks the Lease of one shard.
	RoleShard = "shard"
	// RoleMember marks a replica's presence Lease.
	RoleMember = "member"
)

// MaxShards bounds --shards: each shard is one Lease renewed every retry
// period.
const MaxShards = 64

// ShardOf is the shard (0 to n-1) of App name among n shards: FNV-1a of
// the name, modulo n. It depends on nothing but the name and n, so every
// replica and every attached viewer computes the same answer.
func ShardOf(name string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(name)) // a hash never fails
	return int(h.Sum64() % uint64(n))
}

// ShardLeaseName is the Lease of shard k of a repository identity.
func ShardLeaseName(identity string, k int) string {
	return LeaseName(identity) + "-shard-" + strconv.Itoa(k)
}

// memberLeaseName is the presence Lease of one replica (holder).
func memberLeaseName(identity, holder string) string {
	return LeaseName(identity) + "-member-" + Hash(holder)
}

// errShardsHeld is a single healer's refusal to take the repository's
// Lease while a sharded controller's shards are held (see lock).
var errShardsHeld = errors.New("shards of this repository are held by a sharded controller")

// ShardOptions configure a Sharder.
type ShardOptions struct {
	// Client reaches the cluster the Leases live in.
	Client kubernetes.Interface
	// Namespace holds them (default DefaultNamespace).
	Namespace string
	// Identity is the repository identity.
	Identity string
	// Holder names this replica in the shard Leases and in the
	// repository's Lease (default DefaultHolder).
	Holder string
	// Shards is how many shards the Apps are split into (2 to MaxShards).
	Shards int
	// Settings are the timings, the same for every replica.
	Settings Settings
	// OnChanged is told the shards this replica holds whenever that set
	// changes (taken, lost or handed on), and when writes MayWrite refused
	// for a held shard may go ahead again.
	OnChanged func(held []int)
	// OnError is told why a Lease could not be read or written, once per
	// distinct message.
	OnError func(error)
	// KeepOnStop leaves the shard Leases held when Run's context ends, as
	// a killed process would (for fail-over tests and benchmarks).
	KeepOnStop bool
}

// Sharder holds a fair share of a repository's shard Leases for one
// replica of a sharded controller. Every retry period it reads the
// repository's Leases with one List and:
//
//   - renews its own presence Lease (RoleMember), so that every replica
//     knows how many replicas are live;
//   - renews the shard Leases it holds, and gives up any whose renewal
//     failed past the renew deadline;
//   - takes free or expired shard Leases while it holds fewer than its
//     share, the number of shards divided by the live replicas, rounded
//     up; and, when it holds more than its share while another live
//     replica holds less, hands one on.
//
// It takes shards only while the repository's own Lease is held (by any
// replica) with the same number of shards, and a single healer (a
// terminal, a controller without --shards) never takes that Lease while
// a shard is held: the two exclude each other through that one Lease, so
// two healers never look after one App. Shards already held are kept
// while that Lease is free (its holder died; another replica takes it
// within its duration), and given up within a retry period when a single
// healer or another --shards holds it or a shard. Kubernetes' Leases are the only
// coordination: there is no other channel between replicas.
type Sharder struct {
	opts ShardOptions

	mu sync.Mutex
	// held are the shards this replica holds, with the start of their
	// last successful renewal (its own clock).
	held map[int]time.Time
	// handing are the shards being handed on: closed for writes, released
	// at the time given.
	handing map[int]time.Time
	// mainOK is when the Leases last showed no other regime healing (no
	// single healer or other number of shards holding the repository's
	// Lease or a shard; zero: they did).
	mainOK  time.Time
	members int
	lastErr string
	poke    chan struct{}
	// looked counts Run's rounds: the first only announces this replica,
	// so replicas started together see each other before taking shards.
	looked int
	// refused is set when MayWrite said no for a shard held here (a slow
	// renewal, a late look): the engine skipped writes, so the next round
	// that finds every shard writable again says so (OnChanged), and the
	// engine compares again what it could not heal.
	refused bool
}

// NewSharder checks the options; Run takes part.
func NewSharder(opts ShardOptions) (*Sharder, error) {
	if err := defaults(&opts.Namespace, opts.Identity, &opts.Holder, &opts.Settings); err != nil {
		return nil, err
	}
	if opts.Shards < 2 || opts.Shards > MaxShards {
		return nil, fmt.Errorf("--shards %d: give a number from 2 to %d (1 shard is the default, unsharded controller)", opts.Shards, MaxShards)
	}
	return &Sharder{opts: opts, held: map[int]time.Time{}, handing: map[int]time.Time{}, poke: make(chan struct{}, 1)}, nil
}

// Shards is the number of shards.
func (s *Sharder) Shards() int { return s.opts.Shards }

// Holder is this replica's name in the Leases.
func (s *Sharder) Holder() string { return s.opts.Holder }

// Serves reports whether this replica looks after App name now: it holds
// the name's shard (a shard being handed on included).
func (s *Sharder) Serves(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.held[ShardOf(name, s.opts.Shards)]
	return ok
}

// MayWrite reports whether this replica may heal or prune App name now:
// it holds the name's shard, renewed within the renew deadline, is not
// handing it on, and saw within the renew deadline that no single healer
// or other number of shards holds the repository's Lease or a shard. It
// is the engine's write gate.
func (s *Sharder) MayWrite(name string) bool {
	k := ShardOf(name, s.opts.Shards)
	s.mu.Lock()
	defer s.mu.Unlock()
	renewed, ok := s.held[k]
	if !ok {
		return false
	}
	if _, handing := s.handing[k]; handing {
		return false
	}
	d := s.opts.Settings.RenewDeadline
	if time.Since(renewed) < d && !s.mainOK.IsZero() && time.Since(s.mainOK) < d {
		return true
	}
	s.refused = true
	return false
}

// Held lists the shards this replica holds, in order.
func (s *Sharder) Held() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heldLocked()
}

func (s *Sharder) heldLocked() []int {
	out := make([]int, 0, len(s.held))
	for k := range s.held {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// Members is how many replicas were live at the last look (this one
// included).
func (s *Sharder) Members() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.members
}

// Run takes part until ctx ends; then, unless KeepOnStop, it releases the
// shards it holds and removes its presence Lease, so the others take over
// at once. Call it after the engine has stopped writing.
func (s *Sharder) Run(ctx context.Context) {
	for {
		s.tick(ctx)
		// Jittered like client-go's election, so replicas started together
		// do not ask in lockstep.
		wait := time.Duration(float64(s.opts.Settings.RetryPeriod) * (1 + 0.2*rand.Float64()))
		select {
		case <-ctx.Done():
			if !s.opts.KeepOnStop {
				s.stop()
			}
			return
		case <-time.After(wait):
		case <-s.poke:
		}
	}
}

// Poke makes Run look again now (the repository's Lease was just taken
// here: free shards can be taken without waiting a retry period).
func (s *Sharder) Poke() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

// look is one List of the repository's Leases.
type look struct {
	main    *coordinationv1.Lease
	shards  map[int]*coordinationv1.Lease
	members map[string]*coordinationv1.Lease
	// heldBy counts the live shard Leases of each holder.
	heldBy map[string]int
	// dead are presence Leases not renewed for ten Lease durations (their
	// replica was killed; its name never comes back).
	dead []string
}

func (s *Sharder) read(ctx context.Context) (look, error) {
	return readLeases(ctx, s.opts.Client, s.opts.Namespace, s.opts.Identity)
}

// readLeases is one List of a repository's Leases, sorted by role.
func readLeases(ctx context.Context, client kubernetes.Interface, namespace, identity string) (look, error) {
	sel := labels.SelectorFromSet(labels.Set{LabelRepo: Hash(identity)}).String()
	list, err := client.CoordinationV1().Leases(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return look{}, err
	}
	l := look{shards: map[int]*coordinationv1.Lease{}, members: map[string]*coordinationv1.Lease{}, heldBy: map[string]int{}}
	mainName := LeaseName(identity)
	shardPrefix := mainName + "-shard-"
	now := time.Now()
	for i := range list.Items {
		lease := &list.Items[i]
		if lease.Annotations[AnnotationRepo] != identity {
			continue // a hash collision of two repositories: not ours
		}
		switch {
		case lease.Name == mainName:
			l.main = lease
		case lease.Labels[LabelRole] == RoleShard && strings.HasPrefix(lease.Name, shardPrefix):
			k, err := strconv.Atoi(strings.TrimPrefix(lease.Name, shardPrefix))
			if err != nil || k < 0 {
				continue
			}
			l.shards[k] = lease
			if o := observationOf(lease); o.Live(now) {
				l.heldBy[o.Holder]++
			}
		case lease.Labels[LabelRole] == RoleMember:
			o := observationOf(lease)
			switch {
			case o.Live(now):
				l.members[o.Holder] = lease
			case o.Duration > 0 && now.Sub(o.Renewed) > 10*o.Duration && (o.Written.IsZero() || now.Sub(o.Written) > 10*o.Duration):
				l.dead = append(l.dead, lease.Name)
			}
		}
	}
	return l, nil
}

// tick is one round: read, renew, take, hand on.
func (s *Sharder) tick(ctx context.Context) {
	l, err := s.read(ctx)
	if err != nil {
		s.report(err)
		return
	}
	s.presence(ctx, l.members[s.opts.Holder])
	members := len(l.members)
	if _, self := l.members[s.opts.Holder]; !self {
		members++
	}
	n := s.opts.Shards
	now := time.Now()
	// keep: nothing says another regime heals (a single healer or another
	// --shards holding the repository's Lease or a shard); grow: the
	// repository's Lease is held with this number of shards, which a
	// single healer cannot take while a shard is held.
	keep, grow := true, false
	if l.main != nil {
		if o := observationOf(l.main); o.Live(now) {
			same := l.main.Labels[LabelShards] == strconv.Itoa(n)
			keep, grow = same, same
		}
	}
	for _, lease := range l.shards {
		if o := observationOf(lease); o.Live(now) && o.Holder != s.opts.Holder && lease.Labels[LabelShards] != strconv.Itoa(n) {
			keep, grow = false, false
		}
	}
	s.mu.Lock()
	s.members = members
	if keep {
		s.mainOK = now
	} else {
		s.mainOK = time.Time{}
	}
	before := s.heldLocked()
	s.mu.Unlock()

	// Renew (or, when the repository's Lease says otherwise, give up)
	// what is held.
	for _, k := range before {
		if !keep {
			s.release(ctx, k, l.shards[k])
			continue
		}
		if !s.renew(ctx, k, l.shards[k]) {
			s.dropIfStale(k)
		}
	}
	// Hand on what is due.
	s.mu.Lock()
	var due []int
	for k, at := range s.handing {
		if !now.Before(at) {
			due = append(due, k)
		}
	}
	s.mu.Unlock()
	for _, k := range due {
		s.release(ctx, k, nil)
	}

	if l.main != nil && l.main.Spec.HolderIdentity != nil && *l.main.Spec.HolderIdentity == s.opts.Holder {
		// The repository Lease's holder tidies up after killed replicas.
		for _, name := range l.dead {
			err := s.opts.Client.CoordinationV1().Leases(s.opts.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				s.report(err)
			}
		}
	}
	s.looked++
	if grow && s.looked > 1 {
		share := (n + members - 1) / members
		s.take(ctx, l, share)
		s.handOn(l, share, members)
	}
	s.mu.Lock()
	after := s.heldLocked()
	reopened := false
	if s.refused && keep {
		reopened = true
		d := s.opts.Settings.RenewDeadline
		for _, at := range s.held {
			if time.Since(at) >= d {
				reopened = false
			}
		}
		if reopened {
			s.refused = false
		}
	}
	s.mu.Unlock()
	if (reopened || !slices.Equal(before, after)) && s.opts.OnChanged != nil {
		s.opts.OnChanged(after)
	}
}

// take takes free or expired shards while fewer than share are held,
// starting at a place of its own in the ring so that replicas starting
// together mostly ask for different shards.
func (s *Sharder) take(ctx context.Context, l look, share int) {
	n := s.opts.Shards
	start := ShardOf(s.opts.Holder, n)
	now := time.Now()
	for i := 0; i < n; i++ {
		k := (start + i) % n
		s.mu.Lock()
		_, mine := s.held[k]
		count := len(s.held)
		s.mu.Unlock()
		if count >= share {
			return
		}
		if mine {
			continue
		}
		lease := l.shards[k]
		if lease != nil && observationOf(lease).Live(now) {
			continue
		}
		s.acquire(ctx, k, lease)
	}
}

// handOn starts handing on the shards this replica holds beyond its share,
// as many as the other live replicas lack of theirs (the shards divided
// by the replicas, rounded down): writes to them stop now, and they are
// released after the Lease's duration less its renew deadline (the
// margin the election itself leaves for a write already on its way).
func (s *Sharder) handOn(l look, share, members int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.handing) > 0 {
		return
	}
	extra := len(s.held) - share
	lack := 0
	for holder := range l.members {
		if holder != s.opts.Holder {
			lack += max(0, s.opts.Shards/members-l.heldBy[holder])
		}
	}
	held := s.heldLocked()
	at := time.Now().Add(s.opts.Settings.Duration - s.opts.Settings.RenewDeadline)
	for i := 0; i < min(extra, lack); i++ {
		s.handing[held[len(held)-1-i]] = at
	}
}

// acquire takes shard k, whose Lease is lease (nil: none yet); a
// conflict means another replica was first.
func (s *Sharder) acquire(ctx context.Context, k int, lease *coordinationv1.Lease) {
	now := metav1.NewMicroTime(time.Now())
	start := time.Now()
	holder := s.opts.Holder
	secs := int32(s.opts.Settings.Duration / time.Second)
	if lease == nil {
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Name: ShardLeaseName(s.opts.Identity, k), Namespace: s.opts.Namespace,
			Labels:      s.shardLabels(),
			Annotations: map[string]string{AnnotationRepo: s.opts.Identity},
		}}
		lease.Spec = coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now}
		if _, err := s.opts.Client.CoordinationV1().Leases(s.opts.Namespace).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
			s.report(err)
			return
		}
	} else {
		lease = lease.DeepCopy()
		for k, v := range s.shardLabels() {
			if lease.Labels == nil {
				lease.Labels = map[string]string{}
			}
			lease.Labels[k] = v
		}
		transitions := int32(1)
		if lease.Spec.LeaseTransitions != nil {
			transitions = *lease.Spec.LeaseTransitions + 1
		}
		lease.Spec = coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now, LeaseTransitions: &transitions}
		if _, err := s.opts.Client.CoordinationV1().Leases(s.opts.Namespace).Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
			s.report(err)
			return
		}
	}
	s.mu.Lock()
	s.held[k] = start
	s.mu.Unlock()
}

// renew renews held shard k; false when it could not (the Lease is gone,
// taken, or the write failed).
func (s *Sharder) renew(ctx context.Context, k int, lease *coordinationv1.Lease) bool {
	if lease == nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != s.opts.Holder {
		// Taken by another after it expired here, or deleted: lost.
		s.mu.Lock()
		delete(s.held, k)
		delete(s.handing, k)
		s.mu.Unlock()
		return true
	}
	start := time.Now()
	lease = lease.DeepCopy()
	now := metav1.NewMicroTime(start)
	lease.Spec.RenewTime = &now
	if _, err := s.opts.Client.CoordinationV1().Leases(s.opts.Namespace).Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		s.report(err)
		return false
	}
	s.mu.Lock()
	if _, ok := s.held[k]; ok {
		s.held[k] = start
	}
	s.mu.Unlock()
	return true
}

// dropIfStale forgets shard k once its last renewal is older than the
// renew deadline: MayWrite is already false for it, and another replica
// may take it once its duration has passed.
func (s *Sharder) dropIfStale(k int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at, ok := s.held[k]; ok && time.Since(at) >= s.opts.Settings.RenewDeadline {
		delete(s.held, k)
		delete(s.handing, k)
	}
}

// release gives shard k up: the Lease is written with no holder, so
// another replica takes it at its next look. lease is the last read of it
// (nil: read it now).
func (s *Sharder) release(ctx context.Context, k int, lease *coordinationv1.Lease) {
	s.mu.Lock()
	delete(s.held, k)
	delete(s.handing, k)
	s.mu.Unlock()
	leases := s.opts.Client.CoordinationV1().Leases(s.opts.Namespace)
	if lease == nil {
		got, err := leases.Get(ctx, ShardLeaseName(s.opts.Identity, k), metav1.GetOptions{})
		if err != nil {
			s.report(err)
			return
		}
		lease = got
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != s.opts.Holder {
		return
	}
	lease = lease.DeepCopy()
	empty := ""
	lease.Spec.HolderIdentity = &empty
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		// It expires on its own after its duration.
		s.report(err)
	}
}

// presence renews this replica's member Lease (mine: its last read).
func (s *Sharder) presence(ctx context.Context, mine *coordinationv1.Lease) {
	leases := s.opts.Client.CoordinationV1().Leases(s.opts.Namespace)
	now := metav1.NewMicroTime(time.Now())
	secs := int32(s.opts.Settings.Duration / time.Second)
	holder := s.opts.Holder
	if mine == nil {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Name: memberLeaseName(s.opts.Identity, holder), Namespace: s.opts.Namespace,
			Labels:      map[string]string{LabelManagedBy: "kdrift", LabelRepo: Hash(s.opts.Identity), LabelRole: RoleMember, LabelShards: strconv.Itoa(s.opts.Shards)},
			Annotations: map[string]string{AnnotationRepo: s.opts.Identity},
		}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now}}
		_, err := leases.Create(ctx, l, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// Ours from before a restart with the same name, not live.
			got, gerr := leases.Get(ctx, l.Name, metav1.GetOptions{})
			if gerr != nil {
				s.report(gerr)
				return
			}
			got.Spec = l.Spec
			_, err = leases.Update(ctx, got, metav1.UpdateOptions{})
		}
		if err != nil {
			s.report(err)
		}
		return
	}
	mine = mine.DeepCopy()
	mine.Spec.RenewTime = &now
	if _, err := leases.Update(ctx, mine, metav1.UpdateOptions{}); err != nil {
		s.report(err)
	}
}

// stop releases every held shard and removes the presence Lease.
func (s *Sharder) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.Settings.RenewDeadline)
	defer cancel()
	for _, k := range s.Held() {
		s.release(ctx, k, nil)
	}
	err := s.opts.Client.CoordinationV1().Leases(s.opts.Namespace).Delete(ctx, memberLeaseName(s.opts.Identity, s.opts.Holder), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		s.report(err)
	}
	if s.opts.OnChanged != nil {
		s.opts.OnChanged(nil)
	}
}

func (s *Sharder) shardLabels() map[string]string {
	return map[string]string{LabelManagedBy: "kdrift", LabelRepo: Hash(s.opts.Identity), LabelRole: RoleShard, LabelShards: strconv.Itoa(s.opts.Shards)}
}

// report tells OnError about a failure once per distinct message; a
// conflict (another replica wrote first) is the protocol working.
func (s *Sharder) report(err error) {
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return
	}
	s.mu.Lock()
	same := s.lastErr == err.Error()
	s.lastErr = err.Error()
	s.mu.Unlock()
	if !same && s.opts.OnError != nil {
		s.opts.OnError(fmt.Errorf("shard leases of %s in %s: %w", LeaseName(s.opts.Identity), s.opts.Namespace, err))
	}
}

// shardsHeld reports whether any shard Lease of identity is held by a
// live holder (one List), for a single healer that must not take the
// repository's Lease then.
func shardsHeld(ctx context.Context, client kubernetes.Interface, namespace, identity string) (bool, error) {
	l, err := readLeases(ctx, client, namespace, identity)
	return len(l.heldBy) > 0, err
}
