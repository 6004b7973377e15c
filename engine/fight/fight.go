// Package fight notices a tug of war: kdrift heals a field, another manager
// writes it again, kdrift heals, and so on. Only a controller (an HPA, an
// operator: a manager of class status.OwnerController) makes a fight:
// after it has rewritten the same healed field Rewrites times within
// Window, the field is fighting, kdrift stops healing it and raises a
// status.Fight naming the manager and the field. The answer is an ignore
// rule or a change to the other writer, never a louder force.
//
// A person (kubectl, a console) who keeps overriding a field never switches
// healing off: that takes a freeze, with a reason, in Git. Their rewrites
// are healed every time and counted in bursts; once per burst (Rewrites
// rewrites, none more than Quiet apart) Overridden returns a
// status.Override so kdrift can say "freeze if this is intended".
//
// The detector is pure: it keeps no goroutine and reads time only through
// the injected clock.
package fight

import (
	"sort"
	"sync"
	"time"

	"kdrift.dev/kdrift/engine/status"
)

// Options tunes the detector.
type Options struct {
	// Rewrites is how many rewrites after a heal, by one manager inside
	// Window, make a fight (default 3).
	Rewrites int
	// Window is how far back rewrites count (default 2 minutes).
	Window time.Duration
	// Quiet ends a burst of a person's overrides: a rewrite more than
	// Quiet after the previous one starts a new burst (default 1 minute).
	Quiet time.Duration
	// Now is the clock (default time.Now); tests inject their own.
	Now func() time.Time
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{Rewrites: 3, Window: 2 * time.Minute, Quiet: time.Minute, Now: time.Now}
}

// Key names one field of one object of one app.
type Key struct {
	App   string
	Ref   status.ObjectRef
	Field string
}

type fieldState struct {
	// healed is set after kdrift healed the field and until a rewrite
	// is counted, so one rewrite seen by several compares counts once.
	healed bool
	// healedFrom is the live resourceVersion kdrift healed; a read that
	// still shows it (a stale cache) is not a rewrite.
	healedFrom string
	rewrites   map[string][]time.Time
	fight      *status.Fight
	// bursts are a person's overrides, by manager.
	bursts map[string]*burst
}

// burst is one run of a person's overrides of a field.
type burst struct {
	first, last time.Time
	count       int
	announced   bool
}

// Detector tracks heals and rewrites per field. It is safe for concurrent
// use.
type Detector struct {
	opts   Options
	mu     sync.Mutex
	fields map[Key]*fieldState
}

// New returns a Detector; zero fields of opts take their defaults.
func New(opts Options) *Detector {
	d := DefaultOptions()
	if opts.Rewrites <= 0 {
		opts.Rewrites = d.Rewrites
	}
	if opts.Window <= 0 {
		opts.Window = d.Window
	}
	if opts.Quiet <= 0 {
		opts.Quiet = d.Quiet
	}
	if opts.Now == nil {
		opts.Now = d.Now
	}
	return &Detector{opts: opts, fields: map[Key]*fieldState{}}
}

func (d *Detector) state(k Key) *fieldState {
	s := d.fields[k]
	if s == nil {
		s = &fieldState{rewrites: map[string][]time.Time{}, bursts: map[string]*burst{}}
		d.fields[k] = s
	}
	return s
}

// Healed records that kdrift put field k back, healing the object at
// resourceVersion from.
func (d *Detector) Healed(k Key, from string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.state(k)
	s.healed = true
	s.healedFrom = from
}

// Rewritten records that manager wrote field k again, as seen in the
// object at resourceVersion rv. Only a write that follows a heal counts,
// and a read still at the healed resourceVersion is not one. It returns
// the Fight when this write makes the field a fight (once; later calls
// return false while it lasts).
func (d *Detector) Rewritten(k Key, manager, rv string) (status.Fight, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.fields[k]
	if s == nil || !s.healed || s.fight != nil || (rv != "" && rv == s.healedFrom) {
		return status.Fight{}, false
	}
	s.healed = false
	now := d.opts.Now()
	times := append(s.rewrites[manager], now)
	cut := now.Add(-d.opts.Window)
	kept := times[:0]
	for _, t := range times {
		if !t.Before(cut) {
			kept = append(kept, t)
		}
	}
	s.rewrites[manager] = kept
	if len(kept) < d.opts.Rewrites {
		return status.Fight{}, false
	}
	f := status.Fight{
		Base:     status.Base{App: k.App, Time: now},
		Ref:      k.Ref,
		Field:    k.Field,
		Manager:  manager,
		Rewrites: len(kept),
	}
	s.fight = &f
	return f, true
}

// Overridden records that manager, a person rather than a controller,
// wrote field k again after kdrift healed it, as seen at resourceVersion
// rv. It never makes a fight: the field goes on being healed. It returns
// an Override the first time a burst reaches Rewrites rewrites, and false
// for every other rewrite of that burst.
func (d *Detector) Overridden(k Key, manager, rv string) (status.Override, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.fields[k]
	if s == nil || !s.healed || (rv != "" && rv == s.healedFrom) {
		return status.Override{}, false
	}
	s.healed = false
	now := d.opts.Now()
	b := s.bursts[manager]
	if b == nil || now.Sub(b.last) > d.opts.Quiet {
		b = &burst{first: now}
		s.bursts[manager] = b
	}
	b.count++
	b.last = now
	if b.announced || b.count < d.opts.Rewrites {
		return status.Override{}, false
	}
	b.announced = true
	return status.Override{
		Base:     status.Base{App: k.App, Time: now},
		Ref:      k.Ref,
		Field:    k.Field,
		Manager:  manager,
		Rewrites: b.count,
		Since:    b.first,
	}, true
}

// Fighting returns the fight on field k, if healing it has stopped.
func (d *Detector) Fighting(k Key) (status.Fight, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.fields[k]; s != nil && s.fight != nil {
		return *s.fight, true
	}
	return status.Fight{}, false
}

// Fights lists the app's fields where healing stopped, sorted by object
// and field.
func (d *Detector) Fights(app string) []status.Fight {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []status.Fight
	for k, s := range d.fields {
		if k.App == app && s.fight != nil {
			out = append(out, *s.fight)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if a, b := out[i].Ref.String(), out[j].Ref.String(); a != b {
			return a < b
		}
		return out[i].Field < out[j].Field
	})
	return out
}

// Settled forgets field k: it is in sync, ignored, or Git changed, so an
// old tug of war no longer says anything about the next one.
func (d *Detector) Settled(k Key) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.fields, k)
}

// ResetApp forgets every field of app (new rendered objects or new ignore
// rules: the person may have answered the fight).
func (d *Detector) ResetApp(app string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k := range d.fields {
		if k.App == app {
			delete(d.fields, k)
		}
	}
}
