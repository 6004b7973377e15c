package engine

import (
	"context"
	"fmt"
	"strings"

	"kdrift.dev/kdrift/engine/status"
)

// Marks keeps each App's newest applied revision (status.Mark) where a
// restarted healer reads it: engine/publish keeps it on the App's
// AppStatus. Without Marks the mark lives as long as the process.
type Marks interface {
	// Mark is the App's persisted mark; the zero Mark when there is none.
	Mark(ctx context.Context, app string) (status.Mark, error)
	// SetMark persists the App's mark.
	SetMark(ctx context.Context, app string, m status.Mark) error
}

// SetMarks makes the engine read and write each App's applied revision
// through m (nil: in memory only). The controller sets it before Run.
func (e *core) SetMarks(m Marks) {
	e.mu.Lock()
	e.marks = m
	e.mu.Unlock()
}

func (e *core) markStore() Marks {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.marks
}

// OlderError refuses a sync whose revision does not contain the one
// kdrift last applied to the app: the upstream was force-pushed or reset,
// or a mirror is stale. SyncOptions.AllowOlder (with a reason) applies it
// on purpose.
type OlderError struct {
	App string
	// Revision is the revision the sync would apply.
	Revision string
	// Applied is the mark: the newest revision kdrift applied.
	Applied string
	// Why is the engine's explanation.
	Why string
}

// Error says what was refused and how to go ahead.
func (e *OlderError) Error() string {
	return fmt.Sprintf("%s; nothing was applied", strings.TrimPrefix(e.Why, "not healing: "))
}

func short(rev string) string {
	if len(rev) > 7 {
		return rev[:7]
	}
	return rev
}

// readMark is the app's mark, read from the store the first time (and
// again when fresh is set: another process may have moved it).
func (p *pass) readMark(ctx context.Context, fresh bool) (status.Mark, error) {
	st := p.st
	m := p.e.markStore()
	if m == nil || (st.markRead && !fresh) {
		return st.mark, nil
	}
	got, err := m.Mark(ctx, p.name)
	if err != nil {
		return st.mark, err
	}
	st.markRead = true
	switch {
	case got.Revision == "" || got.Revision == st.mark.Revision:
	case st.mark.Revision == "":
		st.mark = got
	case got.Older != nil && got.Older.At.After(st.markAt):
		// A person accepted an older revision after this process last
		// applied: their decision stands.
		st.mark, st.markAt = got, got.Older.At
	default:
		if ok, err := p.e.repo.IsAncestor(st.mark.Revision, got.Revision); err == nil && ok {
			st.mark = got // another healer applied newer since
		}
	}
	return st.mark, nil
}

// movedBack reports, with the reason, whether applying at this pass's
// revision would move the cluster back: the revision does not contain
// the newest one kdrift applied to the app (the upstream was force-pushed
// or reset, a mirror is stale). Self-heal and prune then stop and the app
// says so; a sync is refused with an *OlderError unless the person
// allowed it (SyncOptions.AllowOlder). When the mark cannot be read,
// nothing is applied either: kdrift cannot tell.
func (p *pass) movedBack(ctx context.Context) (string, bool) {
	if p.opts.allowOlder {
		return "", false
	}
	e := p.e
	mark, err := p.readMark(ctx, false)
	if err != nil {
		return fmt.Sprintf("not healing: cannot read the revision kdrift last applied to %s: %v; kdrift never applies what may be older state: restore access to the AppStatus (see deploy/) and it goes on", p.name, err), true
	}
	if p.contains(mark.Revision) {
		return "", false
	}
	// Another process (a person's sync --allow-older, a newer healer)
	// may have moved the mark: read it again before refusing.
	if e.markStore() != nil {
		if mark, err = p.readMark(ctx, true); err == nil && p.contains(mark.Revision) {
			return "", false
		}
	}
	from := e.repo.Upstream()
	if from == "" {
		from = e.repo.Branch()
	}
	return fmt.Sprintf("not healing: %s moved back (force-pushed, reset or a stale mirror?): its head %s does not contain %s, which kdrift applied; kdrift never applies older state on its own: push the missing commits again, or `kdrift sync %s --allow-older --reason \"…\"` if the older state is meant", from, p.rev.Short(), short(mark.Revision), p.name), true
}

// contains reports whether the pass's revision is applied or descends
// from it; an unknown commit (gone with a force-push) is not contained.
func (p *pass) contains(applied string) bool {
	if applied == "" || applied == p.rev.Hash {
		return true
	}
	ok, err := p.e.repo.IsAncestor(applied, p.rev.Hash)
	return err == nil && ok
}

// recordApplied moves the app's mark to the pass's revision after it
// applied something, and persists it: forward only, or back when the
// person allowed an older revision (recorded with their reason). A mark
// that cannot be persisted is said in the status: a restarted healer
// would not know it.
func (p *pass) recordApplied(ctx context.Context) {
	st, rev := p.st, p.rev.Hash
	if rev == "" || st.mark.Revision == rev {
		return
	}
	next := status.Mark{Revision: rev}
	if !p.contains(st.mark.Revision) {
		if !p.opts.allowOlder {
			return // never moved back without the person's decision
		}
		next.Older = &status.OlderAccepted{From: st.mark.Revision, Reason: p.opts.olderReason, By: p.opts.olderBy, At: p.e.opts.Now()}
	}
	st.mark, st.markAt = next, p.e.opts.Now()
	if next.Older != nil {
		st.markAt = next.Older.At
	}
	m := p.e.markStore()
	if m == nil {
		return
	}
	if err := m.SetMark(ctx, p.name, next); err != nil {
		msg := fmt.Sprintf("applied %s, but could not record it as the app's newest applied revision: %v; a restarted kdrift would not know it", short(rev), err)
		if p.status.Error != "" && !strings.Contains(p.status.Error, msg) {
			p.status.Error += "; " + msg
		} else {
			p.status.Error = msg
		}
	}
}
