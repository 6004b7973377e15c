package leader

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSettingsValidate(t *testing.T) {
	if err := DefaultSettings().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []Settings{
		{Duration: 5 * time.Second, RenewDeadline: 5 * time.Second, RetryPeriod: time.Second},
		{Duration: 5 * time.Second, RenewDeadline: time.Second, RetryPeriod: time.Second},
		{Duration: 0, RenewDeadline: time.Second, RetryPeriod: time.Second},
	} {
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "lease settings") {
			t.Errorf("%s: err = %v", s, err)
		}
	}
}

func TestLeaseName(t *testing.T) {
	a, b := LeaseName("git.example/org/repo#main"), LeaseName("git.example/org/repo#dev")
	if a == b || !strings.HasPrefix(a, "kdrift-") || len(a) != len("kdrift-")+10 || a != LeaseName("git.example/org/repo#main") {
		t.Fatalf("lease names %q %q", a, b)
	}
}

func TestObservationLive(t *testing.T) {
	now := time.Now()
	o := Observation{Holder: "h", Renewed: now.Add(-2 * time.Second), Duration: 15 * time.Second}
	if !o.Live(now) || o.Live(now.Add(14*time.Second)) || (Observation{}).Live(now) {
		t.Fatal("Live")
	}
}

// TestObservationLiveSkewedHolder: the apiserver's time of the last write
// decides, not the renewal time the holder's clock stamped.
func TestObservationLiveSkewedHolder(t *testing.T) {
	now := time.Now()
	dur := int32(15)
	for _, skew := range []time.Duration{-30 * time.Second, 30 * time.Second} {
		renewed := metav1.NewMicroTime(now.Add(-2*time.Second + skew))
		holder := "h"
		written := metav1.NewTime(now.Add(-2 * time.Second))
		o := observationOf(&coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kdrift", Operation: metav1.ManagedFieldsOperationUpdate, Time: &written}}},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &renewed, LeaseDurationSeconds: &dur},
		})
		if !o.Live(now) {
			t.Errorf("clock %s: a holder that renewed 2 s ago is not live", skew)
		}
		if o.Live(now.Add(15 * time.Second)) {
			t.Errorf("clock %s: a holder that stopped 17 s ago is live", skew)
		}
	}
}

func waitGone(t *testing.T, f *Follower, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-f.Gone():
		return time.Since(start)
	case <-time.After(within):
		t.Fatalf("the holder is not gone after %s", within)
		return 0
	}
}

// TestFollowerRenewalsKeepTheHolder: renewals (and a new holder taking
// over in time) keep the Lease followed; once renewals stop, the holder
// is gone a Lease duration after the last one this process saw.
func TestFollowerRenewalsKeepTheHolder(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := 300 * time.Millisecond
	o := Observation{Namespace: "kdrift", Holder: "a", Renewed: time.Now(), Duration: d}
	f := newFollower(ctx, o)
	for i := 0; i < 6; i++ {
		time.Sleep(d / 3)
		o.Renewed = time.Now()
		if i == 3 {
			o.Holder = "b"
		}
		f.observe(o)
	}
	select {
	case <-f.Gone():
		t.Fatal("gone while renewed")
	default:
	}
	if f.Current().Holder != "b" {
		t.Fatalf("following %q, want the new holder b", f.Current().Holder)
	}
	if took := waitGone(t, f, 5*d); took < d*2/3 {
		t.Fatalf("gone %s after the last renewal, before the Lease's duration %s", took, d)
	}
	went, at := f.Went()
	if went.Holder != "b" || at.IsZero() {
		t.Fatalf("went %+v at %s", went, at)
	}
	// A late renewal does not bring it back.
	f.observe(Observation{Holder: "b", Renewed: time.Now(), Duration: d})
	if went2, _ := f.Went(); went2.Holder != "b" {
		t.Fatalf("went changed: %+v", went2)
	}
}

// TestFollowerReleased: a released (or deleted) Lease is gone at once.
func TestFollowerReleased(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFollower(ctx, Observation{Holder: "a", Renewed: time.Now(), Duration: time.Hour})
	f.observe(Observation{Holder: ""})
	waitGone(t, f, time.Second)
	if went, _ := f.Went(); went.Holder != "a" {
		t.Fatalf("went %+v, want holder a", went)
	}
}

// TestFollowerShardedController: a sharded controller's Lease released by
// one replica is not gone (another takes it), a new replica is followed,
// and only twice the duration without anyone makes it gone.
func TestFollowerShardedController(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := 300 * time.Millisecond
	f := newFollower(ctx, Observation{Holder: "r0", Renewed: time.Now(), Duration: d, Shards: 3})
	f.observe(Observation{Holder: ""})
	time.Sleep(d * 3 / 2)
	select {
	case <-f.Gone():
		t.Fatal("gone when one replica released the Lease")
	default:
	}
	f.observe(Observation{Holder: "r1", Renewed: time.Now(), Duration: d, Shards: 3})
	if f.Current().Holder != "r1" {
		t.Fatalf("following %q, want r1", f.Current().Holder)
	}
	if took := waitGone(t, f, 10*d); took < d*3/2 {
		t.Fatalf("gone %s after the last renewal, before twice the duration %s", took, d)
	}
}
