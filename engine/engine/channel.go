package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/engine/status"
)

// channelState is the incident channel as the engine last read it.
type channelState struct {
	// key is the desired head and the channel's tip it was read at.
	key string
	// read is the channel's commits, checked (source.ReadChannel).
	read source.ChannelRead
	// apps are the Apps with the freezes the channel's valid records set,
	// each with only those it added to the desired branch it starts from.
	apps app.LoadResult
	// err is why the channel could not be read.
	err error
}

// maxChannelReports bounds the problems the engine remembers having
// reported, so that a channel rewritten in a loop cannot grow it.
const maxChannelReports = 256

// loadChannel reads the incident channel the settings on the desired
// branch's revision rev name, when it or the channel moved, and reports
// (once each) a channel commit that is not a freeze record, a channel too
// long to read, and a channel that cannot be read. Only freezes are ever
// taken from the channel.
func (e *core) loadChannel(ctx context.Context, rev source.Revision, snap *source.Snapshot) {
	settings, err := app.ReadSettings(snap)
	if err != nil {
		e.setChannel(channelState{key: rev.Hash, err: fmt.Errorf("incident channel not read: %w", err)})
		return
	}
	name := settings.ChannelBranch()
	if e.repo.SetChannel(name) && e.repo.LastFetchError() == nil {
		// A clone that fetches main alone has not fetched the channel
		// yet: a one-shot command would otherwise read no freeze on it.
		// (After a failed fetch the remote is not asked twice.)
		if err := e.repo.FetchChannel(ctx); err != nil {
			e.setChannel(channelState{key: rev.Hash, err: fmt.Errorf("incident channel %s not fetched: %w", name, err)})
			return
		}
	}
	read, err := e.repo.ReadChannel(ctx, name, rev.Hash)
	key := rev.Hash + " " + name + " " + read.Tip.Hash
	e.mu.Lock()
	same := e.channel.key == key
	e.mu.Unlock()
	if same {
		return
	}
	st := channelState{key: key, read: read, err: err}
	if err == nil && read.Valid != "" {
		st.apps, st.err = e.channelApps(read)
	}
	e.setChannel(st)
}

// channelApps is, of each App the desired branch's commit the channel
// starts from declares, the freezes the channel's valid records set
// (each by its own diff), reduced to those the channel itself added: a
// freeze the desired branch declared (and may since have lifted) is
// never brought back by the channel. An App the channel declares that
// the desired branch does not is ignored: a freeze record never adds one.
func (e *core) channelApps(read source.ChannelRead) (app.LoadResult, error) {
	bs, err := e.repo.Snapshot(read.Base)
	if err != nil {
		return app.LoadResult{}, fmt.Errorf("incident channel %s: %w", read.Ref, err)
	}
	var out app.LoadResult
	for _, b := range app.Load(bs, ".").Apps {
		if a, touched := read.Freezes.Apply(b); touched {
			out.Apps = append(out.Apps, app.ChannelOnly(a, b))
		}
	}
	e.mu.Lock()
	var owned []app.App
	for _, a := range e.apps.Apps {
		if a.Origin != nil && a.Origin.File != "" && app.ToolOf(a.Origin).Edits().Heal != nil {
			owned = append(owned, a)
		}
	}
	e.mu.Unlock()
	for _, a := range owned {
		fr, err := channelOwnedFreeze(a, read.Freezes, bs)
		if err != nil {
			return app.LoadResult{}, fmt.Errorf("incident channel %s: %w", read.Ref, err)
		}
		if fr != nil {
			c := app.App{Metadata: a.Metadata}
			c.Spec.Freeze = fr
			out.Apps = append(out.Apps, c)
		}
	}
	return out, nil
}

// channelOwnedFreeze is the freeze the channel's valid records (rec)
// write into the declaration of a, an app another GitOps tool owns, that
// the desired branch's commit the channel starts from (bs) does not: nil
// when the channel adds none.
func channelOwnedFreeze(a app.App, rec app.ChannelRecords, bs *source.Snapshot) (*app.Freeze, error) {
	fr, touched := rec.Owned(a.Origin)
	if !touched || fr == nil {
		return nil, nil
	}
	before, err := fs.ReadFile(bs, a.Origin.File)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var was *app.Freeze
	if before != nil {
		// A base that cannot be read adds nothing to compare against.
		was, _ = app.DeclaredFreeze(a.Origin, before)
	}
	return app.ChannelAdded(fr, was), nil
}

// setChannel keeps st and reports its problems that were not reported
// yet.
func (e *core) setChannel(st channelState) {
	type problem struct{ msg, id string }
	var problems []problem
	switch {
	case st.err != nil:
		problems = append(problems, problem{st.err.Error(), "err " + st.err.Error()})
	case st.read.TooLong:
		msg := fmt.Sprintf("incident channel %s has more than %d commits that %s lacks: kdrift reads none of its freezes; put the freezes that must hold on %s and reset the channel", st.read.Ref, source.MaxChannelCommits, e.repo.Branch(), e.repo.Branch())
		problems = append(problems, problem{msg, "long " + st.read.Tip.Hash})
	}
	for _, f := range st.read.Refused {
		problems = append(problems, problem{f.Error(), "refused " + f.Commit.Hash})
	}
	var report []string
	e.mu.Lock()
	e.channel = st
	for _, p := range problems {
		if e.channelReported[p.id] {
			continue
		}
		if e.channelReported == nil || len(e.channelReported) >= maxChannelReports {
			e.channelReported = map[string]bool{}
		}
		e.channelReported[p.id] = true
		report = append(report, p.msg)
	}
	e.mu.Unlock()
	for _, msg := range report {
		e.bus.publish(status.ErrorEvent{Base: status.Base{Time: e.opts.Now()}, Message: msg})
	}
}

// Channel is the incident channel as last read: its name, where it was
// read, its valid freeze records and the commits refused (oldest first).
func (e *core) Channel() source.ChannelRead {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.channel.read
}

// withChannel is a with the freezes the incident channel adds at now
// (app.ChannelFreezes); fromChannel names the channel when it adds any.
// Callers hold e.mu.
func (e *core) withChannel(a app.App, now time.Time) (app.App, string) {
	c, found := e.channel.apps.Find(a.Metadata.Name)
	if !found {
		return a, ""
	}
	out, from := app.ChannelFreezes(a, c, now)
	if !from {
		return a, ""
	}
	return out, e.channel.read.Name
}
