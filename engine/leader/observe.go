package leader

import (
	"context"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Observation is what a viewer knows of a repository's Lease.
type Observation struct {
	// Namespace and Name are the Lease's.
	Namespace, Name string
	// Holder is the process that holds it; "" when nobody does (never
	// taken, or released).
	Holder string
	// Since is when the holder took it.
	Since time.Time
	// Renewed is the holder's last renewal, stamped by the holder's
	// clock, Duration how long it holds without another.
	Renewed  time.Time
	Duration time.Duration
	// Written is when the apiserver last stored a change to the Lease
	// (its managedFields' latest time, in whole seconds): the same
	// instant as Renewed on the apiserver's clock, which a viewer's clock
	// agrees with far more often than with another node's.
	Written time.Time
	// Shards is the number of shards of the sharded controller that holds
	// it (0: a single healer): each shard's Apps are healed and published
	// by the replica holding that shard.
	Shards int
}

// Live reports whether a holder holds the Lease at now: it renewed within
// the Lease's duration. The renewal's time is the apiserver's (Written)
// when known, plus a second for its rounding, not the holder's: a holder
// whose clock is 30 s behind would look dead while it renews, one 30 s
// ahead alive 30 s after it died.
func (o Observation) Live(now time.Time) bool {
	if o.Holder == "" {
		return false
	}
	if !o.Written.IsZero() {
		return now.Before(o.Written.Add(o.Duration + time.Second))
	}
	return now.Before(o.Renewed.Add(o.Duration))
}

// observationOf reads a Lease.
func observationOf(l *coordinationv1.Lease) Observation {
	o := Observation{Namespace: l.Namespace, Name: l.Name}
	if l.Spec.HolderIdentity != nil {
		o.Holder = *l.Spec.HolderIdentity
	}
	if l.Spec.AcquireTime != nil {
		o.Since = l.Spec.AcquireTime.Time
	}
	if l.Spec.RenewTime != nil {
		o.Renewed = l.Spec.RenewTime.Time
	}
	if l.Spec.LeaseDurationSeconds != nil {
		o.Duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	if n, err := strconv.Atoi(l.Labels[LabelShards]); err == nil && n >= 2 {
		o.Shards = n
	}
	for _, mf := range l.ManagedFields {
		if mf.Time != nil && mf.Time.After(o.Written) {
			o.Written = mf.Time.Time
		}
	}
	return o
}

// Observe reads a repository's Lease once (one GET). A Lease that does
// not exist is an Observation with no Holder, not an error.
func Observe(ctx context.Context, client kubernetes.Interface, namespace, identity string) (Observation, error) {
	name := LeaseName(identity)
	l, err := client.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Observation{Namespace: namespace, Name: name}, nil
	}
	if err != nil {
		return Observation{Namespace: namespace, Name: name}, err
	}
	return observationOf(l), nil
}

// Watch follows a repository's Lease with one watch until ctx ends,
// calling changed with each new state of it (a renewal included; a
// deleted Lease is an Observation with no Holder). It returns once the
// watch has synced, having called changed at least once.
func Watch(ctx context.Context, client kubernetes.Interface, namespace, identity string, changed func(Observation)) {
	name := LeaseName(identity)
	lw := cache.NewListWatchFromClient(client.CoordinationV1().RESTClient(), "leases", namespace, fields.OneTermEqualSelector("metadata.name", name))
	seen := make(chan struct{}, 1)
	note := func(o Observation) {
		changed(o)
		select {
		case seen <- struct{}{}:
		default:
		}
	}
	_, inf := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    &coordinationv1.Lease{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { note(observationOf(obj.(*coordinationv1.Lease))) },
			UpdateFunc: func(_, obj any) { note(observationOf(obj.(*coordinationv1.Lease))) },
			DeleteFunc: func(any) { note(Observation{Namespace: namespace, Name: name}) },
		},
	})
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return
	}
	select {
	case <-seen:
	default:
		changed(Observation{Namespace: namespace, Name: name})
	}
}
