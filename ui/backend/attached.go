package backend

import (
	"context"
	"fmt"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/publish"
	"kdrift.dev/kdrift/engine/status"
)

// Roler is a Backend that says whose statuses the UI shows and who heals
// ("following kdrift/kdrift-7c9f, leader since 02:14", "healing from this
// terminal"); the top line shows it.
type Roler interface {
	Role() string
}

// Attached is the Backend of a UI that follows the repository's
// leader: the fleet comes from the statuses the leader publishes (one
// watch of the AppStatuses), and no compare or heal runs here. Opening an
// object's diff compares that one object (a read and a dry-run,
// engine.Reader.CompareOne); the ownership map compares every App once,
// when a person opens it. Syncs and the Git actions are the Engine's: a
// sync applies Git as manager kdrift, the same manager and plan the leader
// uses, so the leader then finds the app Synced and never heals it back.
type Attached struct {
	*Engine
	watcher *publish.Watcher
	events  chan status.Event
	cancel  context.CancelFunc
	role    func() string
	refresh func()
}

// NewAttached follows the statuses w publishes (w not started yet:
// it starts here); role is the top line's role; refresh asks the leader
// to fetch now (ctrl+r). Close stops the watch.
func NewAttached(ctx context.Context, eng Reconciler, opts actions.RepoOptions, w *publish.Watcher, role func() string, refresh func()) (*Attached, error) {
	ctx, cancel := context.WithCancel(ctx)
	b := &Attached{Engine: NewEngine(eng, opts), watcher: w, events: make(chan status.Event, 4096), cancel: cancel, role: role, refresh: refresh}
	// The engine publishes nothing here: only the watch's events count.
	b.Engine.Close()
	b.pruneOf = func(app string) bool {
		p, ok := w.App(app)
		return ok && p.Prune
	}
	if !w.Run(ctx, b.changed) {
		cancel()
		return nil, fmt.Errorf("the leader's AppStatuses could not be listed: %w", context.Cause(ctx))
	}
	return b, nil
}

// changed turns a published status into the UI's event.
func (b *Attached) changed(ch publish.Change) {
	if ch.Status == nil {
		return
	}
	ev := status.AppStatusChanged{Base: status.Base{App: ch.App, Time: ch.Status.ComparedAt}, Status: ch.Status.AppStatus}
	select {
	case b.events <- ev:
	default:
		// The UI is far behind: it reads Apps() again on its next event.
	}
}

// Close stops the watch.
func (b *Attached) Close() { b.cancel() }

// Events are the published statuses as they change.
func (b *Attached) Events() <-chan status.Event { return b.events }

// Apps is every published status.
func (b *Attached) Apps() []status.AppStatus { return b.watcher.Apps() }

// Refresh asks the leader to fetch Git now.
func (b *Attached) Refresh() {
	if b.refresh != nil {
		b.refresh()
	}
}

// Role is whom the UI follows.
func (b *Attached) Role() string { return b.role() }

// Detail compares the one object now (a read and a dry-run), then shows
// it as Git wants it and as it is live.
func (b *Attached) Detail(ctx context.Context, appName string, ref status.ObjectRef) (status.ObjectDetail, error) {
	var published *status.ResourceStatus
	if p, ok := b.watcher.App(appName); ok {
		for i := range p.Resources {
			if p.Resources[i].Ref == ref {
				published = &p.Resources[i]
			}
		}
	}
	if err := b.eng.CompareOne(ctx, appName, ref, published); err != nil {
		return status.ObjectDetail{}, err
	}
	return b.eng.Detail(ctx, appName, ref)
}

// Owners compares every App once (read-only: this process does not hold
// the Lease), then maps the owners.
func (b *Attached) Owners(ctx context.Context, opts diff.OwnerMapOptions) (diff.OwnerMap, error) {
	if err := b.eng.Reconcile(ctx); err != nil {
		return diff.OwnerMap{}, err
	}
	return b.eng.Owners(ctx, opts)
}

// Sync applies Git to the app now, as the Engine does (manager
// kdrift, the upstream revision), and asks the leader to fetch, so that
// it applies the same revision; the leader sees the result in its watch
// and publishes it.
func (b *Attached) Sync(ctx context.Context, appName string, req SyncRequest) error {
	err := b.Engine.Sync(ctx, appName, req)
	b.Refresh()
	return err
}

var (
	_ Backend = (*Attached)(nil)
	_ Roler   = (*Attached)(nil)
)
