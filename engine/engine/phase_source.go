package engine

import (
	"context"
	"errors"
	"fmt"
	"kdrift.dev/kdrift/engine/source"
	"time"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
)

// loadHead reads the branch head (fetching first when fetch is set) and,
// when it moved, takes a snapshot and loads the Apps declared there. A
// failed fetch keeps the last fetched revision; the error shows in the
// app statuses.
func (e *core) loadHead(ctx context.Context, fetch bool) error {
	if fetch {
		// A failed fetch is kept by the Repo (LastFetchError) and shown
		// per app; the last fetched revision stays usable.
		if err := e.repo.Fetch(ctx); err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	gitStart := time.Now()
	rev, err := e.repo.Head(ctx)
	if err != nil {
		return fmt.Errorf("git %s: read branch %s: %w", e.repo.Location(), e.repo.Branch(), err)
	}
	e.resolveFlux(ctx, rev)
	// Local commits the upstream lacks are never applied, but a freeze in
	// one counts at once: a stop is always safe.
	var local app.LoadResult
	ahead, isAhead, err := e.repo.Ahead(ctx)
	if err != nil {
		return fmt.Errorf("git %s: read local branch %s: %w", e.repo.Location(), e.repo.Branch(), err)
	}
	if isAhead {
		ls, err := e.repo.Snapshot(ahead.Hash)
		if err != nil {
			return fmt.Errorf("git %s: read local commit %s: %w", e.repo.Location(), ahead.Short(), err)
		}
		local = ls.Apps()
	}
	e.mu.Lock()
	e.localApps = local
	same := e.snap != nil && e.head.Hash == rev.Hash
	cur := e.snap
	e.mu.Unlock()
	if same {
		e.opts.Observer.Timed(PhaseGit, "", time.Since(gitStart), nil)
		flux := e.readFluxApplied(ctx, cur)
		apps, from := e.withLiveApplications(ctx, cur, rev)
		apps, from = e.withLiveFlux(apps, cur, flux, from)
		apps = withSettings(apps, cur)
		e.mu.Lock()
		e.apps, e.appSource = apps, from
		e.mu.Unlock()
		e.noteNoApps(ctx, cur, rev, apps)
		e.loadChannel(ctx, rev, cur)
		return nil
	}
	snap, err := e.repo.Snapshot(rev.Hash)
	if err != nil {
		return fmt.Errorf("git %s: read commit %s: %w", e.repo.Location(), rev.Short(), err)
	}
	e.opts.Observer.Timed(PhaseGit, "", time.Since(gitStart), nil)
	discStart := time.Now()
	flux := e.readFluxApplied(ctx, snap)
	apps, from := e.withLiveApplications(ctx, snap, rev)
	apps, from = e.withLiveFlux(apps, snap, flux, from)
	apps = withSettings(apps, snap)
	e.opts.Observer.Timed(PhaseDiscover, "", time.Since(discStart), nil)
	e.mu.Lock()
	e.head, e.snap, e.apps, e.appSource = rev, snap, apps, from
	e.mu.Unlock()
	e.noteNoApps(ctx, snap, rev, apps)
	e.loadChannel(ctx, rev, snap)
	return nil
}

// settledApps are the Apps of snap with the repository's settings
// applied (withSettings).
func settledApps(snap *source.Snapshot) app.LoadResult {
	return withSettings(snap.Apps(), snap)
}

// withSettings is apps with the settings of snap applied (app.WithHealth):
// the health checks they give every App, and every App invalid while the
// settings file is.
func withSettings(apps app.LoadResult, snap *source.Snapshot) app.LoadResult {
	settings, err := app.ReadSettings(snap)
	return app.WithHealth(apps, settings, err)
}

// findApp is App name as the upstream declares it, with a freeze that
// only a local commit not pushed yet declares (localFreeze says so), and
// the resource and field freezes of such a commit added to the
// upstream's; then with the freezes the incident channel adds (channel
// names it when it adds any). Callers hold e.mu.
func (e *core) findApp(name string, now time.Time) (a app.App, localFreeze bool, channel string, ok bool) {
	a, ok = e.apps.Find(name)
	if !ok {
		return a, false, "", ok
	}
	if la, found := e.localApps.Find(name); found {
		a.Spec.Freezes = withLocalFreezes(a.Spec.Freezes, la.Spec.Freezes, now)
	}
	if !a.Spec.Freeze.ActiveAt(now) {
		if la, found := e.localApps.Find(name); found && la.Spec.Freeze.ActiveAt(now) {
			a.Spec.Freeze, localFreeze = la.Spec.Freeze, true
		}
	}
	a, channel = e.withChannel(a, now)
	return a, localFreeze, channel, true
}

// phaseSource finds the App at the current revision. An invalid App gets
// an Error status naming the file and the field; a Git remote that cannot
// be reached is reported while the last fetched revision is used.
func (p *pass) phaseSource() bool {
	e := p.e
	e.mu.Lock()
	p.rev, p.snap = e.head, e.snap
	a, localFreeze, channel, ok := e.findApp(p.name, p.now)
	inv, bad := e.apps.FindInvalid(p.name)
	e.mu.Unlock()
	p.status.Revision = p.rev.Hash
	p.status.RevisionAuthor = p.rev.Author
	p.status.RevisionRef = e.repo.Upstream()
	if p.status.RevisionRef == "" {
		p.status.RevisionRef, p.status.NoUpstream = e.repo.Branch(), true
	}
	p.status.LocalFreeze = localFreeze
	p.status.FreezeChannel = channel
	if p.snap == nil {
		return p.fail(status.SyncUnknown, errors.New("Git has not been read yet"))
	}
	if !ok {
		if bad {
			p.status.File = inv.File
			return p.fail(status.SyncError, inv.Wrap(p.name))
		}
		return p.fail(status.SyncError, fmt.Errorf("App %s is no longer declared at %s", p.name, p.rev.Short()))
	}
	p.app = a
	p.status.File, p.status.Path, p.status.Destination = a.File, a.Spec.Path, a.Spec.Destination
	p.status.Prune = a.Spec.SyncPolicy.Prune
	p.status.Freeze = a.Spec.Freeze
	p.status.Owner, p.status.OwnerFile = a.Origin.Owner(), a.Origin.Where()
	if a.Origin != nil {
		p.status.OwnerEngine = string(a.Origin.Engine)
		followed := followsOther(a.Origin.Follows, e.readBranch(), p.rev.Hash) && p.follow(a.Origin.Follows)
		p.status.OwnerApplied, p.status.OwnerRevision = e.ownerApplied(a, p.rev, p.status.RevisionRef, followed)
		if !a.Spec.Freeze.ActiveAt(p.now) {
			// Suspended by its own declaration, not by kdrift's freeze.
			p.status.OwnerPaused = a.Origin.Paused()
		}
	}
	for _, f := range a.Spec.Freezes {
		if f.ActiveAt(p.now) {
			p.status.Freezes = append(p.status.Freezes, f)
		}
	}
	switch {
	case a.Spec.Freeze.ActiveAt(p.now):
		p.status.SelfHeal = status.SelfHealFrozen
	case a.Spec.SyncPolicy.SelfHeal:
		p.status.SelfHeal = status.SelfHealOn
	}
	fetchErr := e.repo.LastFetchError()
	e.reach(status.TargetGit, "", fetchErr)
	if err := fetchErr; err != nil {
		// Keep working from the last fetched revision, never from the
		// local branch, and say so.
		since := "now"
		if t := e.repo.FetchFailingSince(); !t.IsZero() {
			since = t.Format("15:04:05")
		}
		what := "Git unreachable"
		if source.LocalWriteFailure(err) {
			what = "Git not fetched (the cache folder is full)"
		}
		p.status.Cause = fmt.Errorf("%s since %s: comparing %s as last fetched (%s): %w", what, since, p.status.RevisionRef, p.rev.Short(), err)
		p.status.Error = p.status.Cause.Error()
	}
	return true
}
