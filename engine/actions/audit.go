package actions

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"

	"kdrift.dev/kdrift/internal/gitobj"
)

// Freeze states in AuditEntry.FreezeState.
const (
	// FreezeActive: the freeze holds now.
	FreezeActive = "active"
	// FreezeExpired: its end time passed (or a later freeze replaced it).
	FreezeExpired = "expired"
	// FreezeLifted: a later unfreeze (or a hand edit) removed it.
	FreezeLifted = "lifted"
)

// AuditEntry is one kdrift action read back from a commit's trailers. Its
// JSON form is stable; fields:
//
//	time         commit time, RFC 3339
//	author       "Name <email>" of the person who acted
//	action       freeze, unfreeze, extend, ignore or revert; refused (a
//	             channel commit) or unread (a commit too large to read)
//	apps         the apps the action named (Kdrift-App trailers)
//	reason       the reason given, from the commit body
//	commit       full commit hash
//	subject      commit subject
//	revertOf     for revert: the reverted commit's hash
//	until        for freeze and extend: when the freeze ends (absent: no end)
//	freezeState  for freeze and extend: app -> active | expired | lifted
//	channel      the incident channel the record is on (absent: the branch)
type AuditEntry struct {
	Time        time.Time         `json:"time"`
	Author      string            `json:"author"`
	Action      string            `json:"action"`
	Apps        []string          `json:"apps"`
	Reason      string            `json:"reason"`
	Commit      string            `json:"commit"`
	Subject     string            `json:"subject"`
	RevertOf    string            `json:"revertOf,omitempty"`
	Until       *time.Time        `json:"until,omitempty"`
	FreezeState map[string]string `json:"freezeState,omitempty"`
	Channel     string            `json:"channel,omitempty"`
}

// AuditOptions filters the audit log.
type AuditOptions struct {
	// App keeps only actions that name this app; empty keeps all.
	App string
	// Limit keeps the newest Limit entries; 0 keeps all.
	Limit int
}

// Audit reads kdrift's actions back from the branch's history, newest first.
func (r *Repo) Audit(ctx context.Context, opts AuditOptions) ([]AuditEntry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.refreshCache(ctx); err != nil {
		return nil, err
	}
	head, err := r.head()
	if err != nil {
		return nil, err
	}
	var all []AuditEntry
	// Each commit is bounded from its header: one past the bound is an
	// ActionUnread entry, and the history before it is still read.
	err = gitobj.Walk(r.git.Storer, head, func(c *object.Commit, tooLarge error) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if tooLarge != nil {
			all = append(all, unreadEntry(c, tooLarge))
		} else if e, ok := auditEntry(c); ok {
			all = append(all, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("branch %s: log read failed: %w", r.branch, err)
	}
	snap, err := r.snapshotAt(head)
	if err != nil {
		return nil, err
	}
	current := map[string]bool{}
	apps, err := loadApps(snap)
	if err != nil {
		return nil, err
	}
	for _, a := range apps.apps {
		current[a.Metadata.Name] = a.Spec.Freeze != nil
	}
	freezeStates(all, r.opts.Now(), current)
	// The incident channel's records, with their own states: a channel
	// unfreeze lifts only channel freezes.
	channel, err := r.channelAudit(ctx, head)
	if err != nil {
		return nil, fmt.Errorf("incident channel: %w", err)
	}
	if len(channel) > 0 {
		all = append(all, channel...)
		sort.SliceStable(all, func(i, j int) bool { return all[i].Time.After(all[j].Time) })
	}
	var out []AuditEntry
	for _, e := range all {
		if opts.App != "" && !slices.Contains(e.Apps, opts.App) {
			continue
		}
		if opts.App != "" && e.FreezeState != nil {
			e.FreezeState = map[string]string{opts.App: e.FreezeState[opts.App]}
		}
		out = append(out, e)
		if opts.Limit > 0 && len(out) >= opts.Limit {
			break
		}
	}
	return out, nil
}

// ActionUnread is the action of an audit entry for a commit too large to
// read (gitobj.MaxCommitBytes): whatever action it records is not
// counted; Reason gives both sizes.
const ActionUnread = "unread"

// unreadEntry is the audit entry of commit c, read up to its header only.
func unreadEntry(c *object.Commit, tooLarge error) AuditEntry {
	return AuditEntry{Time: c.Author.When, Author: fmt.Sprintf("%s <%s>", c.Author.Name, c.Author.Email),
		Action: ActionUnread, Apps: []string{}, Reason: tooLarge.Error() + ": its message is not read, and no action in it counts",
		Commit: c.Hash.String()}
}

func auditEntry(c *object.Commit) (AuditEntry, bool) {
	m := parseMessage(c.Message)
	action := m.trailer(TrailerAction)
	if action == "" {
		return AuditEntry{}, false
	}
	e := AuditEntry{
		Time:     c.Author.When,
		Author:   fmt.Sprintf("%s <%s>", c.Author.Name, c.Author.Email),
		Action:   action,
		Apps:     m.trailerValues(TrailerApp),
		Reason:   m.reason(),
		Commit:   c.Hash.String(),
		Subject:  m.Subject,
		RevertOf: m.trailer(TrailerRevertOf),
	}
	if e.Apps == nil {
		e.Apps = []string{}
	}
	if u := m.trailer(TrailerUntil); u != "" {
		if t, err := time.Parse(time.RFC3339, u); err == nil {
			e.Until = &t
		}
	}
	return e, true
}

// freezeStates fills FreezeState of freeze and extend entries (newest
// first): lifted when a later unfreeze came before any later freeze, or the
// App no longer carries a freeze; expired when a later freeze replaced it or
// its end (moved by later extends) passed; active otherwise.
func freezeStates(entries []AuditEntry, now time.Time, frozenNow map[string]bool) {
	next := map[string]string{}         // the app's next freeze/unfreeze after this point
	extUntil := map[string]*time.Time{} // the newest extend's end since that
	extSeen := map[string]bool{}
	for i := range entries {
		e := &entries[i]
		if e.Action != ActionFreeze && e.Action != ActionExtend && e.Action != ActionUnfreeze {
			continue
		}
		if e.Action != ActionUnfreeze {
			e.FreezeState = map[string]string{}
		}
		for _, a := range e.Apps {
			switch e.Action {
			case ActionUnfreeze:
				next[a] = ActionUnfreeze
				delete(extUntil, a)
				extSeen[a] = false
				continue
			case ActionExtend:
				if !extSeen[a] {
					extUntil[a], extSeen[a] = e.Until, true
				}
			}
			var state string
			switch next[a] {
			case ActionUnfreeze:
				state = FreezeLifted
			case ActionFreeze:
				state = FreezeExpired
			default:
				until := e.Until
				if extSeen[a] {
					until = extUntil[a]
				}
				frozen, known := frozenNow[a]
				switch {
				case known && !frozen:
					state = FreezeLifted
				case until != nil && !now.Before(*until):
					state = FreezeExpired
				default:
					state = FreezeActive
				}
			}
			e.FreezeState[a] = state
			if e.Action == ActionFreeze {
				next[a] = ActionFreeze
				delete(extUntil, a)
				extSeen[a] = false
			}
		}
	}
}
