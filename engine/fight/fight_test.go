package fight

import (
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/status"
)

// clock is an injected clock the table steps move forward.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestDetector(t *testing.T) {
	t.Parallel()
	ref := status.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "prod", Name: "render"}
	key := Key{App: "render-prod", Ref: ref, Field: "/spec/replicas"}
	other := Key{App: "render-prod", Ref: ref, Field: "/spec/template/spec/containers/0/image"}

	type step struct {
		advance time.Duration
		heal    *Key
		rewrite *Key
		manager string
		// wantFight: this rewrite must start a fight.
		wantFight bool
	}
	heal := func(k Key) step { return step{heal: &k} }
	rw := func(k Key, m string, adv time.Duration, fight bool) step {
		return step{rewrite: &k, manager: m, advance: adv, wantFight: fight}
	}
	tests := []struct {
		name         string
		steps        []step
		wantFighting bool
	}{
		{
			name: "three rewrites after heals inside the window fight",
			steps: []step{
				heal(key), rw(key, "kubectl", 10*time.Second, false),
				heal(key), rw(key, "kubectl", 10*time.Second, false),
				heal(key), rw(key, "kubectl", 10*time.Second, true),
			},
			wantFighting: true,
		},
		{
			name: "rewrites spread beyond the window do not fight",
			steps: []step{
				heal(key), rw(key, "kubectl", time.Minute, false),
				heal(key), rw(key, "kubectl", 90*time.Second, false),
				heal(key), rw(key, "kubectl", 90*time.Second, false),
			},
		},
		{
			name: "a write without a heal before it does not count",
			steps: []step{
				rw(key, "kubectl", time.Second, false),
				heal(key), rw(key, "kubectl", time.Second, false),
				rw(key, "kubectl", time.Second, false),
				rw(key, "kubectl", time.Second, false),
				heal(key), rw(key, "kubectl", time.Second, false),
			},
		},
		{
			name: "different managers are counted apart",
			steps: []step{
				heal(key), rw(key, "kubectl", time.Second, false),
				heal(key), rw(key, "hpa", time.Second, false),
				heal(key), rw(key, "kubectl", time.Second, false),
				heal(key), rw(key, "hpa", time.Second, false),
			},
		},
		{
			name: "fields are counted apart",
			steps: []step{
				heal(key), rw(key, "kubectl", time.Second, false),
				heal(other), rw(other, "kubectl", time.Second, false),
				heal(key), rw(key, "kubectl", time.Second, false),
				heal(other), rw(other, "kubectl", time.Second, false),
			},
		},
		{
			name: "a fight is raised once",
			steps: []step{
				heal(key), rw(key, "kubectl", time.Second, false),
				heal(key), rw(key, "kubectl", time.Second, false),
				heal(key), rw(key, "kubectl", time.Second, true),
				heal(key), rw(key, "kubectl", time.Second, false),
			},
			wantFighting: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{t: time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)}
			d := New(Options{Now: c.now})
			for i, s := range tt.steps {
				c.t = c.t.Add(s.advance)
				switch {
				case s.heal != nil:
					d.Healed(*s.heal, "")
				case s.rewrite != nil:
					f, got := d.Rewritten(*s.rewrite, s.manager, "")
					if got != s.wantFight {
						t.Fatalf("step %d: Rewritten fight = %v, want %v", i, got, s.wantFight)
					}
					if got && (f.Manager != s.manager || f.Field != s.rewrite.Field || f.Ref != ref || f.App != "render-prod" || f.Rewrites != 3 || !f.Time.Equal(c.t)) {
						t.Fatalf("step %d: fight = %+v", i, f)
					}
				}
			}
			if _, got := d.Fighting(key); got != tt.wantFighting {
				t.Fatalf("Fighting = %v, want %v", got, tt.wantFighting)
			}
		})
	}
}

func TestSettledAndReset(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)}
	d := New(Options{Rewrites: 1, Now: c.now})
	k := Key{App: "a", Field: "/spec/replicas"}
	d.Healed(k, "41")
	if _, ok := d.Rewritten(k, "kubectl", "41"); ok {
		t.Fatal("a stale read at the healed resourceVersion is not a rewrite")
	}
	if _, ok := d.Rewritten(k, "kubectl", "43"); !ok {
		t.Fatal("Rewrites=1: the first rewrite after a heal must fight")
	}
	if got := d.Fights("a"); len(got) != 1 || got[0].Manager != "kubectl" {
		t.Fatalf("Fights = %+v", got)
	}
	d.Settled(k)
	if _, ok := d.Fighting(k); ok {
		t.Fatal("Settled must end the fight")
	}
	d.Healed(k, "")
	d.Rewritten(k, "kubectl", "")
	d.ResetApp("a")
	if len(d.Fights("a")) != 0 {
		t.Fatal("ResetApp must forget the app's fights")
	}
}

// TestOverrideBursts: a person's rewrites never make a fight; the first
// burst that reaches Rewrites is reported once, later rewrites of that
// burst are not, and a rewrite after Quiet starts a new burst.
func TestOverrideBursts(t *testing.T) {
	ref := status.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "prod", Name: "render"}
	key := Key{App: "render-prod", Ref: ref, Field: "/spec/replicas"}
	c := &clock{t: time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)}
	d := New(Options{Rewrites: 3, Quiet: time.Minute, Now: c.now})
	var got []status.Override
	write := func(adv time.Duration) {
		c.t = c.t.Add(adv)
		d.Healed(key, "")
		if o, ok := d.Overridden(key, "kubectl", ""); ok {
			got = append(got, o)
		}
	}
	for i := 0; i < 4; i++ {
		write(2 * time.Second)
	}
	if len(got) != 1 || got[0].Rewrites != 3 || got[0].Manager != "kubectl" || got[0].Time.Sub(got[0].Since) != 4*time.Second {
		t.Fatalf("first burst: %+v, want one Override of 3 rewrites in 4s", got)
	}
	if _, fighting := d.Fighting(key); fighting || len(d.Fights("render-prod")) != 0 {
		t.Fatal("a person's overrides made a fight")
	}
	// A stale read of the healed resourceVersion is not a rewrite.
	d.Healed(key, "41")
	if _, ok := d.Overridden(key, "kubectl", "41"); ok {
		t.Fatal("a read at the healed resourceVersion counted")
	}
	write(2 * time.Minute) // quiet passed: a new burst
	write(time.Second)
	write(time.Second)
	if len(got) != 2 || got[1].Rewrites != 3 {
		t.Fatalf("second burst: %+v", got)
	}
}
