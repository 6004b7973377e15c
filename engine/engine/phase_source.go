package engine

import (
	"context"
	"fmt"

	"kdrift.dev/kdrift/engine/status"
)

// loadHead reads the branch head (fetching first when fetch is set) and,
// when it moved, takes a snapshot and loads the Apps declared there. A
// failed fetch keeps the last fetched revision; the error shows in the
// app statuses.
func (e *Engine) loadHead(ctx context.Context, fetch bool) error {
	if fetch {
		// A failed fetch is kept by the Repo (LastFetchError) and shown
		// per app; the last fetched revision stays usable.
		if err := e.repo.Fetch(ctx); err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	rev, err := e.repo.Head(ctx)
	if err != nil {
		return fmt.Errorf("git %s: read branch %s: %w", e.repo.Location(), e.repo.Branch(), err)
	}
	e.mu.Lock()
	same := e.snap != nil && e.head.Hash == rev.Hash
	e.mu.Unlock()
	if same {
		return nil
	}
	snap, err := e.repo.Snapshot(rev.Hash)
	if err != nil {
		return fmt.Errorf("git %s: read commit %s: %w", e.repo.Location(), rev.Short(), err)
	}
	apps := snap.Apps()
	e.mu.Lock()
	e.head, e.snap, e.apps = rev, snap, apps
	e.mu.Unlock()
	return nil
}

// phaseSource finds the App at the current revision. An invalid App gets
// an Error status naming the file and the field; a Git remote that cannot
// be reached is reported while the last fetched revision is used.
func (p *pass) phaseSource() bool {
	e := p.e
	e.mu.Lock()
	p.rev, p.snap = e.head, e.snap
	a, ok := e.apps.Find(p.name)
	inv, bad := e.apps.FindInvalid(p.name)
	e.mu.Unlock()
	p.status.Revision = p.rev.Hash
	p.status.RevisionAuthor = p.rev.Author
	if p.snap == nil {
		return p.fail(status.SyncUnknown, "Git has not been read yet")
	}
	if !ok {
		if bad {
			p.status.File = inv.File
			return p.fail(status.SyncError, fmt.Sprintf("App %s in %s is invalid: %v", p.name, inv.File, inv.Err))
		}
		return p.fail(status.SyncError, fmt.Sprintf("App %s is no longer declared at %s", p.name, p.rev.Short()))
	}
	p.app = a
	p.status.File, p.status.Path, p.status.Destination = a.File, a.Spec.Path, a.Spec.Destination
	p.status.Prune = a.Spec.SyncPolicy.Prune
	p.status.Freeze = a.Spec.Freeze
	switch {
	case a.Spec.Freeze.ActiveAt(p.now):
		p.status.SelfHeal = status.SelfHealFrozen
	case a.Spec.SyncPolicy.SelfHeal:
		p.status.SelfHeal = status.SelfHealOn
	}
	fetchErr := e.repo.LastFetchError()
	e.reach(status.TargetGit, "", fetchErr)
	if err := fetchErr; err != nil {
		// Keep working from the last fetched revision, but say so.
		p.status.Error = fmt.Sprintf("comparing the last fetched revision %s: %v", p.rev.Short(), err)
	}
	return true
}
