package controller

import (
	"fmt"
	"sync/atomic"
	"time"

	"kdrift.dev/kdrift/engine/status"
)

// Probes answers /healthz and /readyz from the engine's heartbeat and its
// statuses.
type Probes struct {
	// Heartbeat is the engine loop's last beat (Metrics.LastHeartbeat).
	Heartbeat func() time.Time
	// Declared is the Git revision read ("" before) and the Apps there
	// (engine.Reader.Declared).
	Declared func() (string, []string)
	// Apps is the engine's status snapshot (engine.Reader.Apps).
	Apps func() []status.AppStatus
	// StaleAfter is how old the heartbeat may be before the loop counts
	// as dead (default 6 heartbeats: 30 s).
	StaleAfter time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time

	ready atomic.Bool
}

// Healthy says whether the engine's loop is alive: it has beaten within
// StaleAfter. Its error says what is wrong.
func (p *Probes) Healthy() error {
	now, stale := p.clock(), p.StaleAfter
	if stale <= 0 {
		stale = 30 * time.Second
	}
	beat := p.Heartbeat()
	switch {
	case beat.IsZero():
		return fmt.Errorf("the engine loop has not started")
	case now.Sub(beat) > stale:
		return fmt.Errorf("the engine loop's last heartbeat was %s ago (more than %s): it is stuck", now.Sub(beat).Round(time.Second), stale)
	}
	return nil
}

// Ready says whether the controller has a view of every App: Git was read,
// and every App declared there has had its first pass (which, under Run,
// waits for the informers of the kinds it compares to sync). Once ready it
// stays ready while the loop is healthy: a new App in Git does not take
// the controller out of service.
func (p *Probes) Ready() error {
	if err := p.Healthy(); err != nil {
		return err
	}
	if p.ready.Load() {
		return nil
	}
	rev, names := p.Declared()
	if rev == "" {
		return fmt.Errorf("Git has not been read yet")
	}
	compared := map[string]bool{}
	for _, a := range p.Apps() {
		if !a.ComparedAt.IsZero() && a.Revision != "" {
			compared[a.Name] = true
		}
	}
	waiting := 0
	first := ""
	for _, n := range names {
		if !compared[n] {
			if waiting == 0 {
				first = n
			}
			waiting++
		}
	}
	if waiting > 0 {
		return fmt.Errorf("waiting for the first pass of %d of %d apps (%s...)", waiting, len(names), first)
	}
	p.ready.Store(true)
	return nil
}

func (p *Probes) clock() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}
