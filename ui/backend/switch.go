package backend

import (
	"context"
	"sync"
	"time"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
)

// Switch is the Backend of a UI whose backend changes while it
// runs: a terminal attached to the repository's leader goes on with its
// own engine when the leader is gone. The UI keeps its place (views,
// selection, open dialogs, half-typed text): only what lies under it
// changes. Every call goes to the backend current when it is made; the
// UI reads one event stream throughout.
type Switch struct {
	mu     sync.Mutex
	cur    Backend
	closed bool
	// role, when set, is the top line's role instead of cur's: what is
	// going on while the next backend is prepared.
	role string

	events chan status.Event
	swaps  chan swap
	notes  chan status.Event
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// swap hands the pump the next backend's events; it closes ack once it
// reads them instead of the previous backend's, which may then close.
type swap struct {
	events <-chan status.Event
	note   status.Event
	ack    chan struct{}
}

// roleCheck is how often the pump looks whether the top line's role
// changed (a Lease taken or lost), so the UI shows it with no other event.
const roleCheck = time.Second

// NewSwitch shows first until Switch. Close stops it and closes
// the backend current then.
func NewSwitch(first Backend) *Switch {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Switch{cur: first, events: make(chan status.Event, 64), swaps: make(chan swap), notes: make(chan status.Event, 8),
		ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go s.pump(first.Events(), s.Role())
	return s
}

// pump forwards the current backend's events to the UI, with the
// switches, reloads and role changes between them. A closed stream of
// the current backend closes the UI's.
func (s *Switch) pump(src <-chan status.Event, role string) {
	defer close(s.done)
	tick := time.NewTicker(roleCheck)
	defer tick.Stop()
	send := func(ev status.Event) bool {
		select {
		case s.events <- ev:
			return true
		case <-s.ctx.Done():
			return false
		}
	}
	for {
		var out status.Event
		select {
		case <-s.ctx.Done():
			return
		case sw := <-s.swaps:
			src = sw.events
			close(sw.ack)
			out = sw.note
		case out = <-s.notes:
		case ev, ok := <-src:
			if !ok {
				close(s.events)
				return
			}
			out = ev
		case <-tick.C:
			if r := s.Role(); r != role {
				role = r
				out = RoleChanged{Base: status.Base{Time: time.Now()}}
			}
		}
		if out != nil && !send(out) {
			return
		}
		if _, ok := out.(RoleChanged); ok {
			role = s.Role()
		}
	}
}

// current is the backend calls go to now.
func (s *Switch) current() Backend {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// Announce shows role on the top line until Switch (what is going on
// while the next backend is prepared) and has the UI draw it at once.
func (s *Switch) Announce(role string) {
	s.mu.Lock()
	s.role = role
	s.mu.Unlock()
	s.note(RoleChanged{Base: status.Base{Time: time.Now()}})
}

// note tells the UI, unless it stopped listening.
func (s *Switch) note(ev status.Event) {
	select {
	case s.notes <- ev:
	case <-s.done:
	}
}

// Switch makes next the backend every call goes to, tells the UI (what
// is shown on its status line) and closes the previous backend (its
// Close, when it has one). After Close, it closes next instead.
func (s *Switch) Switch(next Backend, what string) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		closeBackend(next)
		return
	}
	prev := s.cur
	s.cur, s.role = next, ""
	s.mu.Unlock()
	sw := swap{events: next.Events(), note: Switched{Base: status.Base{Time: time.Now()}, Text: what}, ack: make(chan struct{})}
	select {
	case s.swaps <- sw:
		<-sw.ack
	case <-s.done:
	}
	closeBackend(prev)
}

// Reload has the UI read every app's status again (Apps): the backend it
// switched to has compared them all, and apps it does not know any more
// leave the view.
func (s *Switch) Reload(what string) {
	s.note(Switched{Base: status.Base{Time: time.Now()}, Text: what, Reload: true})
}

// Close stops the events and closes the current backend.
func (s *Switch) Close() {
	s.cancel()
	<-s.done
	s.mu.Lock()
	cur, was := s.cur, s.closed
	s.closed = true
	s.mu.Unlock()
	if !was {
		closeBackend(cur)
	}
}

func closeBackend(b Backend) {
	if c, ok := b.(interface{ Close() }); ok {
		c.Close()
	}
}

// Events is the current backend's events, and the switches.
func (s *Switch) Events() <-chan status.Event { return s.events }

// Role is what is going on during a switch, else the current backend's
// role.
func (s *Switch) Role() string {
	s.mu.Lock()
	role, cur := s.role, s.cur
	s.mu.Unlock()
	if role != "" {
		return role
	}
	if r, ok := cur.(Roler); ok {
		return r.Role()
	}
	return ""
}

// NoApps is the current backend's, nil when it cannot say.
func (s *Switch) NoApps() *engine.NoApps {
	if n, ok := s.current().(NoApper); ok {
		return n.NoApps()
	}
	return nil
}

// Apps is the current backend's.
func (s *Switch) Apps() []status.AppStatus { return s.current().Apps() }

// Refresh is the current backend's.
func (s *Switch) Refresh() { s.current().Refresh() }

// Detail is the current backend's.
func (s *Switch) Detail(ctx context.Context, appName string, ref status.ObjectRef) (status.ObjectDetail, error) {
	return s.current().Detail(ctx, appName, ref)
}

// PlanSync is the current backend's.
func (s *Switch) PlanSync(ctx context.Context, appName string) (SyncPlan, error) {
	return s.current().PlanSync(ctx, appName)
}

// Sync is the current backend's.
func (s *Switch) Sync(ctx context.Context, appName string, req SyncRequest) error {
	return s.current().Sync(ctx, appName, req)
}

// Freeze is the current backend's.
func (s *Switch) Freeze(ctx context.Context, apps []string, reason string, d time.Duration) (CommitResult, error) {
	return s.current().Freeze(ctx, apps, reason, d)
}

// Unfreeze is the current backend's.
func (s *Switch) Unfreeze(ctx context.Context, apps []string, reason string, seen map[string]*app.Freeze) (CommitResult, error) {
	return s.current().Unfreeze(ctx, apps, reason, seen)
}

// FreezeResource is the current backend's.
func (s *Switch) FreezeResource(ctx context.Context, appName string, refs []app.ResourceRef, fields []string, reason string, d time.Duration) (CommitResult, error) {
	return s.current().FreezeResource(ctx, appName, refs, fields, reason, d)
}

// UnfreezeResource is the current backend's.
func (s *Switch) UnfreezeResource(ctx context.Context, appName string, ref app.ResourceRef, fields []string, reason string, seen *app.Freeze) (CommitResult, error) {
	return s.current().UnfreezeResource(ctx, appName, ref, fields, reason, seen)
}

// Ignore is the current backend's.
func (s *Switch) Ignore(ctx context.Context, appName string, rule app.IgnoreRule, reason string) (CommitResult, error) {
	return s.current().Ignore(ctx, appName, rule, reason)
}

// Owners is the current backend's.
func (s *Switch) Owners(ctx context.Context, opts diff.OwnerMapOptions) (diff.OwnerMap, error) {
	return s.current().Owners(ctx, opts)
}

// History is the current backend's.
func (s *Switch) History(ctx context.Context, appName string) ([]status.Commit, error) {
	return s.current().History(ctx, appName)
}

// RevertPreview is the current backend's.
func (s *Switch) RevertPreview(ctx context.Context, hash string) (string, error) {
	return s.current().RevertPreview(ctx, hash)
}

// Revert is the current backend's.
func (s *Switch) Revert(ctx context.Context, hash, reason string) (CommitResult, error) {
	return s.current().Revert(ctx, hash, reason)
}

// Switched is the event that tells the UI its backend changed: Text is
// what happened, for the status line; Reload has it read every app again.
type Switched struct {
	status.Base
	Text   string
	Reload bool
}

// Type names it in the UI's log.
func (Switched) Type() status.EventType { return "BackendSwitched" }

// RoleChanged is the event that has the UI draw the top line's new role.
type RoleChanged struct{ status.Base }

// Type names it in the UI's log.
func (RoleChanged) Type() status.EventType { return "RoleChanged" }

var (
	_ Backend = (*Switch)(nil)
	_ Roler   = (*Switch)(nil)
)
