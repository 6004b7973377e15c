package actions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/source"
)

// Settings reads the repository's kdrift settings (app.SettingsFile) as
// the upstream has them, else as the branch has them: only what is on
// the desired branch can name the incident channel.
func (r *Repo) Settings(ctx context.Context) (app.Settings, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.settingsLocked(ctx)
}

func (r *Repo) settingsLocked(ctx context.Context) (app.Settings, error) {
	at, err := r.head()
	if err != nil {
		return app.Settings{}, err
	}
	if remote, upRef, ok, err := r.upstream(); err != nil {
		return app.Settings{}, err
	} else if ok {
		if h, err := r.fetch(ctx, remote, upRef); err == nil && !h.IsZero() {
			at = h
		}
	}
	snap, err := r.snapshotAt(at)
	if err != nil {
		return app.Settings{}, err
	}
	data, found, err := snap.read(app.SettingsFile)
	if err != nil || !found {
		return app.Settings{}, err
	}
	return app.ParseSettings(app.SettingsFile, data)
}

// commitFreeze commits a freeze record (freeze, unfreeze, extend, a
// resource or field freeze): on the branch, and, when the remote refuses
// it there (or the settings send every freeze to the channel), on the
// incident channel instead, where the healer honours it as a freeze on
// the branch. After a refusal the branch is put back where it was, so
// that the record lives in one place; when the channel cannot take it
// either, the local commit stays and the Result says it is in force
// nowhere. onChannel is set for an unfreeze or an extension: when op does
// not apply on the branch (the freeze is the channel's), it is tried on
// the channel, which lifts or moves only the channel's own freezes.
func (r *Repo) commitFreeze(ctx context.Context, op operation, onChannel bool) (Result, error) {
	settings, err := r.Settings(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("%w; the incident channel is named there, so kdrift does not guess it", err)
	}
	channel := settings.ChannelBranch()
	if settings.Spec.Freezes.Always {
		res, err := r.commitChannel(ctx, channel, op)
		return res, err
	}
	before, err := r.head()
	if err != nil {
		return Result{}, err
	}
	res, err := r.commit(ctx, op)
	if err != nil && onChannel && r.channelExists(ctx, channel) {
		if chRes, chErr := r.commitChannel(ctx, channel, op); chErr == nil {
			return chRes, nil
		}
	}
	if err != nil || res.Refused == nil {
		return res, err
	}
	chRes, chErr := r.commitChannel(ctx, channel, op)
	if chErr != nil {
		res.ChannelError = chErr.Error()
		var refused *PushRefusedError
		if errors.As(chErr, &refused) {
			res.ChannelError = refused.Error()
		}
		return res, nil
	}
	r.mu.Lock()
	err = r.advance(plumbing.NewHash(res.Commit), before)
	r.mu.Unlock()
	if err != nil {
		return chRes, fmt.Errorf("the freeze is on the channel %s as %s, but putting branch %s back to %s failed: %w", channel, chRes.ChannelCommit[:12], r.branch, before.String()[:12], err)
	}
	chRes.Refused = res.Refused
	chRes.PushError = res.PushError
	return chRes, nil
}

// commitChannel applies op on the incident channel's head (or on the
// upstream's head when the channel does not exist yet) as one commit and
// pushes it to the channel; a lost race re-runs op on the new channel
// head. The branch itself is never moved.
func (r *Repo) commitChannel(ctx context.Context, channel string, op operation) (Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := Result{Branch: r.branch}
	if err := app.ValidChannel(channel); err != nil {
		return res, fmt.Errorf("incident channel: %w", err)
	}
	remote, upRef, ok, err := r.upstream()
	if err != nil {
		return res, err
	}
	if !ok {
		return res, fmt.Errorf("branch %s tracks no remote, so there is no incident channel to push %s to", r.branch, channel)
	}
	if upRef.Short() == channel {
		return res, fmt.Errorf("the incident channel %s is the desired branch itself; name another branch in %s", channel, app.SettingsFile)
	}
	id, err := r.Identity()
	if err != nil {
		return res, err
	}
	when := r.opts.Now().Truncate(time.Second)
	chRef := plumbing.NewBranchReferenceName(channel)
	out := plumbing.ReferenceName("refs/kdrift/outgoing/" + channel)
	defer func() { _ = r.git.Storer.RemoveReference(out) }()
	for attempt := 1; ; attempt++ {
		base, err := r.fetch(ctx, remote, chRef)
		if err != nil {
			return res, err
		}
		fromDesired := base.IsZero()
		if fromDesired {
			if base, err = r.fetch(ctx, remote, upRef); err != nil {
				return res, err
			}
			if base.IsZero() {
				return res, fmt.Errorf("%s/%s does not exist yet, so the incident channel has nothing to start from", remote, upRef.Short())
			}
		}
		snap, err := r.snapshotAt(base)
		if err != nil {
			return res, err
		}
		// The desired branch's head, read only by an operation that asks
		// (an unfreeze): a freeze, the incident's first action, pays no
		// second fetch.
		var desired *snapshot
		if fromDesired {
			desired = snap
		}
		snap.desired = func() (*snapshot, error) {
			if desired != nil {
				return desired, nil
			}
			h, err := r.fetch(ctx, remote, upRef)
			if err != nil {
				return nil, err
			}
			if h.IsZero() {
				return nil, fmt.Errorf("%s/%s does not exist", remote, upRef.Short())
			}
			desired, err = r.snapshotAt(h)
			return desired, err
		}
		p, err := op(snap)
		if err != nil {
			return res, fmt.Errorf("on the incident channel %s: %w", channel, err)
		}
		c, err := r.writeCommit(snap, p, id, when)
		if err != nil {
			return res, err
		}
		if err := r.git.Storer.SetReference(plumbing.NewHashReference(out, c)); err != nil {
			return res, fmt.Errorf("recording the channel commit failed: %w", err)
		}
		res.Subject, res.Apps = p.msg.Subject, p.apps
		err = r.pushRef(ctx, remote, out, chRef, c)
		if err == nil {
			res.Channel, res.ChannelCommit, res.Commit = channel, c.String(), c.String()
			res.Owned = p.owned
			res.Upstream = remote + "/" + channel
			res.Pushed = true
			r.judgeRecord(ctx, &res, remote, upRef, c)
			return res, nil
		}
		var refused *PushRefusedError
		if errors.As(err, &refused) || !isRejected(err) || attempt >= r.opts.MaxPushTries {
			return res, err
		}
		res.Retries++
	}
}

// channelExists says the remote has the incident channel branch.
func (r *Repo) channelExists(ctx context.Context, channel string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	remote, _, ok, err := r.upstream()
	if err != nil || !ok {
		return false
	}
	h, err := r.fetch(ctx, remote, plumbing.NewBranchReferenceName(channel))
	return err == nil && !h.IsZero()
}

// judgeRecord reads the incident channel whose tip is c, the record just
// pushed, as every reader does (source.WalkChannel), and says in res
// whether the readers take it (NotTaken) and which channel commits they
// skip (ChannelSkipped): the command's "in force" comes from the readers'
// own verdict, never from the push alone. Callers hold r.mu.
func (r *Repo) judgeRecord(ctx context.Context, res *Result, remote string, upRef plumbing.ReferenceName, c plumbing.Hash) {
	tracking, err := r.git.Storer.Reference(plumbing.NewRemoteReferenceName(remote, upRef.Short()))
	if err != nil {
		res.NotTaken = fmt.Sprintf("%s/%s cannot be read, so the channel cannot be judged: %v", remote, upRef.Short(), err)
		return
	}
	read, err := source.WalkChannel(ctx, r.git, res.Channel, res.Upstream, c, tracking.Hash())
	switch {
	case err != nil:
		res.NotTaken = "the channel cannot be read: " + err.Error()
		return
	case read.TooLong:
		res.NotTaken = fmt.Sprintf("the channel has more than %d commits that %s lacks, and readers take none of them; put the freezes that must hold on %s and reset the channel", source.MaxChannelCommits, upRef.Short(), upRef.Short())
		return
	}
	for _, f := range read.Refused {
		if f.Commit.Hash == c.String() {
			res.NotTaken = "readers refuse it: " + f.Problem
			return
		}
		res.ChannelSkipped = append(res.ChannelSkipped, fmt.Sprintf("%s by %s (%s)", f.Commit.Short(), f.Commit.Author, f.Problem))
	}
}
