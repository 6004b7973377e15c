package actions

import (
	"context"
	"fmt"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/gitobj"
)

// ActionChannelRefused is the action of an audit entry for an incident
// channel commit that is not a freeze record: kdrift ignores it and every
// later channel commit; Reason says what it changed.
const ActionChannelRefused = "refused"

// channelAudit reads the incident channel the settings at head name (from
// the remote when it can be reached, else as last fetched): its freeze
// records as audit entries with their freeze states, and each commit
// that is not a freeze record as an ActionChannelRefused entry. A missing channel has no entries. Callers hold r.mu.
func (r *Repo) channelAudit(ctx context.Context, head plumbing.Hash) ([]AuditEntry, error) {
	snap, err := r.snapshotAt(head)
	if err != nil {
		return nil, err
	}
	settings := app.Settings{}
	if data, found, err := snap.read(app.SettingsFile); err != nil {
		return nil, err
	} else if found {
		if settings, err = app.ParseSettings(app.SettingsFile, data); err != nil {
			return nil, fmt.Errorf("%w; the incident channel is named there, so its records are not read", err)
		}
	}
	channel := settings.ChannelBranch()
	ref := plumbing.NewBranchReferenceName(channel)
	remote, _, ok, err := r.upstream()
	if err != nil {
		return nil, err
	}
	var tip plumbing.Hash
	if ok {
		ref = plumbing.NewRemoteReferenceName(remote, channel)
		tip, err = r.fetch(ctx, remote, plumbing.NewBranchReferenceName(channel))
		if err != nil {
			tip = plumbing.ZeroHash // unreachable: as last fetched
		}
	}
	if tip.IsZero() {
		got, err := r.git.Storer.Reference(ref)
		if err != nil {
			return nil, nil // no channel: no records
		}
		tip = got.Hash()
	}
	read, err := source.WalkChannel(ctx, r.git, channel, ref.Short(), tip, head)
	if err != nil {
		return nil, err
	}
	var out []AuditEntry
	for _, rec := range read.Records {
		// WalkChannel refused a record past gitobj.MaxCommitBytes already.
		c, err := gitobj.Commit(r.git.Storer, plumbing.NewHash(rec.Hash))
		if err != nil {
			return nil, fmt.Errorf("incident channel %s: commit %s: %w", ref.Short(), rec.Short(), err)
		}
		if e, ok := auditEntry(c); ok {
			e.Channel = channel
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.After(out[j].Time) })
	frozen, err := r.channelFrozen(read)
	if err != nil {
		return nil, err
	}
	freezeStates(out, r.opts.Now(), frozen)
	for _, f := range read.Refused {
		out = append([]AuditEntry{{
			Time: f.Commit.Time, Author: fmt.Sprintf("%s <%s>", f.Commit.Author, f.Commit.Email),
			Action: ActionChannelRefused, Apps: []string{}, Reason: "not a freeze record, skipped (nothing of it applies): " + f.Problem,
			Commit: f.Commit.Hash, Subject: f.Commit.Subject, Channel: channel,
		}}, out...)
	}
	if read.TooLong {
		out = append([]AuditEntry{{
			Time: read.Tip.Time, Author: fmt.Sprintf("%s <%s>", read.Tip.Author, read.Tip.Email),
			Action: ActionChannelRefused, Apps: []string{},
			Reason: fmt.Sprintf("the channel has more than %d commits that %s lacks: kdrift reads none of them; put the freezes that must hold on %s and reset the channel", source.MaxChannelCommits, r.branch, r.branch),
			Commit: read.Tip.Hash, Subject: read.Tip.Subject, Channel: channel,
		}}, out...)
	}
	return out, nil
}

// channelFrozen says, by app, whether the channel's valid records leave
// the app frozen by the channel itself (as the engine reads them).
func (r *Repo) channelFrozen(read source.ChannelRead) (map[string]bool, error) {
	out := map[string]bool{}
	if read.Valid == "" {
		return out, nil
	}
	bs, err := r.snapshotAt(plumbing.NewHash(read.Base))
	if err != nil {
		return nil, err
	}
	base, err := loadApps(bs)
	if err != nil {
		return nil, err
	}
	for _, b := range base.apps {
		if a, touched := read.Freezes.Apply(b); touched {
			out[b.Metadata.Name] = app.ChannelOnly(a, b).Spec.Freeze != nil
		}
	}
	return out, nil
}
