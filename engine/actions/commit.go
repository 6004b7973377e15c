package actions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"kdrift.dev/kdrift/engine/app"
)

// Result is what an action did: the commit it made and whether the
// commit reached the remote.
type Result struct {
	// Commit is the new commit's full hash.
	Commit string `json:"commit"`
	// Subject is the new commit's subject.
	Subject string `json:"subject"`
	// Apps are the apps the action changed.
	Apps []string `json:"apps,omitempty"`
	// Resources are the objects a resource freeze or unfreeze holds, as
	// their references were resolved (KIND[.GROUP]/[NAMESPACE/]NAME).
	Resources []string `json:"resources,omitempty"`
	// Branch is the branch the commit is on.
	Branch string `json:"branch"`
	// Upstream is the remote branch pushed to ("origin/main"); empty when
	// the branch tracks none.
	Upstream string `json:"upstream,omitempty"`
	// Pushed says the commit is on the upstream.
	Pushed bool `json:"pushed"`
	// PushError says why the commit is only local; empty when pushed or
	// when there is no upstream.
	PushError string `json:"pushError,omitempty"`
	// Refused is set when the remote refused the push on purpose (a hook,
	// a protected branch, a missing permission): retrying does not help,
	// and the action is in force nowhere until it reaches the branch by
	// another path. PushError then holds its message.
	Refused *PushRefusedError `json:"refused,omitempty"`
	// Channel is the incident channel branch the freeze record was pushed
	// to, because the branch refused it (Refused) or the settings send
	// every freeze there; the freeze is in force through it.
	Channel string `json:"channel,omitempty"`
	// ChannelCommit is the record's commit on Channel.
	ChannelCommit string `json:"channelCommit,omitempty"`
	// NotTaken says why the readers of the incident channel do not take
	// the record pushed there (source.WalkChannel refuses it, or the
	// channel is too long to read): it is then in force nowhere.
	NotTaken string `json:"notTaken,omitempty"`
	// ChannelSkipped are the channel's commits that are not freeze
	// records, which every reader skips (the record still counts).
	ChannelSkipped []string `json:"channelSkipped,omitempty"`
	// ChannelError says why the incident channel could not take a freeze
	// the branch refused; the freeze is then in force nowhere.
	ChannelError string `json:"channelError,omitempty"`
	// Retries counts pushes that lost a race and were re-applied.
	Retries int `json:"retries,omitempty"`
	// Owned are the freezes of apps another GitOps tool owns that the
	// record changed on the incident channel. That tool reads the desired
	// branch only, so each must also be written on its live declaration
	// (engine/ownerpause); empty unless the record is on the channel.
	Owned []app.OwnedFreeze `json:"owned,omitempty"`
	// Rule is the rule an ignore added, its kind and group resolved as
	// kubectl resolves them; nil for other actions.
	Rule *app.IgnoreRule `json:"rule,omitempty"`
}

// maxLocalRaces bounds how often one action runs again after losing a
// race with a git command in the same clone.
const maxLocalRaces = 8

// Summary is one line for a person: where the commit went.
func (r Result) Summary() string {
	short := r.Commit
	if len(short) > 12 {
		short = short[:12]
	}
	switch {
	case r.Channel != "" && r.NotTaken != "":
		return fmt.Sprintf("committed %s on the incident channel %s, but %s; the record is in force nowhere", short, r.Upstream, r.NotTaken)
	case r.Channel != "" && r.Refused != nil:
		return fmt.Sprintf("%s refused it, so it went to the incident channel: committed %s on %s, where it is in force%s", r.Refused.Branch, short, r.Upstream, r.skipped())
	case r.Channel != "":
		return fmt.Sprintf("committed %s on the incident channel %s, where it is in force%s", short, r.Upstream, r.skipped())
	case r.Pushed:
		return fmt.Sprintf("committed %s on %s and pushed to %s", short, r.Branch, r.Upstream)
	case r.Refused != nil && r.ChannelError != "":
		return fmt.Sprintf("committed locally as %s, but %s; and the incident channel failed too: %s; the freeze is in force nowhere", short, r.Refused.Error(), r.ChannelError)
	case r.Refused != nil:
		return fmt.Sprintf("committed locally as %s, but %s; the commit is in force nowhere", short, r.Refused.Error())
	case r.PushError != "":
		return fmt.Sprintf("committed locally as %s; push failed: %s; run `kdrift push` to retry", short, r.PushError)
	default:
		return fmt.Sprintf("committed %s on %s (the branch tracks no remote; nothing pushed)", short, r.Branch)
	}
}

// skipped is the note on the channel's commits readers skip, "" when
// there are none.
func (r Result) skipped() string {
	if len(r.ChannelSkipped) == 0 {
		return ""
	}
	return "; readers skip the channel's commits that are not freeze records: " + strings.Join(r.ChannelSkipped, "; ")
}

// snapshot is a commit's files, the state an operation is applied to.
type snapshot struct {
	repo   *Repo
	commit plumbing.Hash
	tree   flatTree
	// desired reads, once, the desired branch's head as fetched, when the
	// snapshot is the incident channel's (commitChannel); nil otherwise.
	desired func() (*snapshot, error)
}

func (s *snapshot) read(p string) ([]byte, bool, error) {
	e, ok := s.tree[p]
	if !ok {
		return nil, false, nil
	}
	data, err := readBlob(s.repo.git.Storer, e.Hash)
	return data, true, err
}

// plan is what an operation wants committed on a snapshot.
type plan struct {
	msg message
	// files are the new contents by path; a nil value deletes the path.
	files map[string]*entry
	apps  []string
	// resources are the objects a resource freeze or unfreeze resolved.
	resources []string
	// owned are the freezes of apps another tool owns the plan changes.
	owned []app.OwnedFreeze
	// rule is the ignore rule an ignore adds, as resolved.
	rule *app.IgnoreRule
}

// operation builds a plan for a snapshot; it is run again, with the same
// inputs, on a newer head when a push loses a race.
type operation func(s *snapshot) (*plan, error)

// setText stages new text for a path, keeping its mode.
func (p *plan) setText(s *snapshot, path string, content []byte) error {
	h, err := writeBlob(s.repo.git.Storer, content)
	if err != nil {
		return err
	}
	mode := s.tree[path].Mode
	if mode == 0 {
		mode = filemode.Regular
	}
	if p.files == nil {
		p.files = map[string]*entry{}
	}
	p.files[path] = &entry{Hash: h, Mode: mode}
	return nil
}

// commit applies op on the branch as one commit and pushes it: fetch, build
// on the newest head, commit, push; a lost race re-runs op on the new head,
// at most MaxPushTries times. When the remote cannot be reached (or does
// not answer within the Git timeout) the commit stays local and
// Result.PushError says why. When a re-run fails (the action no longer
// applies on the new head), the branch is restored to where it was before
// the action and the error says so.
func (r *Repo) commit(ctx context.Context, op operation) (Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.releaseIndex()
	res := Result{Branch: r.branch}
	id, err := r.Identity()
	if err != nil {
		return res, err
	}
	when := r.opts.Now().Truncate(time.Second)
	remote, upRef, hasUp, err := r.upstream()
	if err != nil {
		return res, err
	}
	if hasUp {
		res.Upstream = remote + "/" + upRef.Short()
	}
	tip, err := r.head()
	if err != nil {
		return res, err
	}
	start := tip
	keep := tip // what the branch holds besides this operation's commit
	// undo puts the branch back where it was when a re-run failed.
	undo := func(cause error) (Result, error) {
		if tip == start {
			return Result{Branch: r.branch, Upstream: res.Upstream}, cause
		}
		if err := r.advance(tip, start); err != nil {
			return res, fmt.Errorf("%w; and restoring branch %s to %s failed: %v; the previous try's commit %s is still on it", cause, r.branch, start.String()[:12], err, tip.String()[:12])
		}
		return Result{Branch: r.branch, Upstream: res.Upstream}, fmt.Errorf("%w; the upstream changed while kdrift was pushing, so nothing was committed: branch %s is back at %s", cause, r.branch, start.String()[:12])
	}
	races := 0
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			if attempt > 1 {
				// The previous try's commit is on the branch; only its
				// push is left undone.
				res.PushError = err.Error()
				return res, nil
			}
			return res, err
		}
		base := keep
		var offline error
		if hasUp {
			remoteHead, err := r.fetch(ctx, remote, upRef)
			if err != nil {
				offline = err
			} else if base, offline, err = r.integrate(keep, remoteHead); err != nil {
				return undo(err)
			}
		}
		snap, err := r.snapshotAt(base)
		if err != nil {
			return undo(err)
		}
		p, err := op(snap)
		if err != nil {
			return undo(err)
		}
		c, err := r.writeCommit(snap, p, id, when)
		if err != nil {
			return undo(err)
		}
		if err := r.advance(tip, c); err != nil {
			var race *localRaceError
			if errors.As(err, &race) && tip == start && races < maxLocalRaces {
				// A git command in this clone moved the branch (or held
				// its lock) meanwhile: nothing was committed; run the
				// operation again on the new head, as for a push race.
				// Take index.lock before reading the new head, as git's
				// own commit does, so the next try cannot lose the same
				// way; advance uses it.
				races++
				r.awaitIndexLock(time.Duration(races) * 50 * time.Millisecond)
				if tip, err = r.head(); err != nil {
					return undo(err)
				}
				start, keep = tip, tip
				attempt--
				continue
			}
			return undo(err)
		}
		tip = c
		res.Commit, res.Subject, res.Apps, res.Resources, res.Rule = c.String(), p.msg.Subject, p.apps, p.resources, p.rule
		if !hasUp {
			return res, nil
		}
		if offline != nil {
			res.PushError = offline.Error()
			return res, nil
		}
		if r.opts.Propose {
			return res, nil
		}
		if r.beforePush != nil {
			r.beforePush()
		}
		err = r.pushBranch(ctx, remote, upRef)
		if err == nil {
			res.Pushed = true
			return res, nil
		}
		var refused *PushRefusedError
		if errors.As(err, &refused) {
			res.PushError, res.Refused = refused.Error(), refused
			return res, nil
		}
		if !isRejected(err) || attempt >= r.opts.MaxPushTries {
			res.PushError = err.Error()
			return res, nil
		}
		res.Retries++
		keep = base
	}
}

func (r *Repo) snapshotAt(c plumbing.Hash) (*snapshot, error) {
	t, err := commitTree(r.git.Storer, c)
	if err != nil {
		return nil, err
	}
	return &snapshot{repo: r, commit: c, tree: t}, nil
}

// writeCommit stores the plan's tree and a commit of it on top of the
// snapshot, with the person as author and committer.
func (r *Repo) writeCommit(s *snapshot, p *plan, id Identity, when time.Time) (plumbing.Hash, error) {
	tree := flatTree{}
	for k, v := range s.tree {
		tree[k] = v
	}
	for k, v := range p.files {
		if v == nil {
			delete(tree, k)
		} else {
			tree[k] = *v
		}
	}
	th, err := writeFlatTree(r.git.Storer, tree)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if co, err := headerCommit(r.git.Storer, s.commit); err == nil && co.TreeHash == th {
		return plumbing.ZeroHash, errors.New("the action changes nothing in the repository; nothing was committed")
	}
	sig := object.Signature{Name: id.Name, Email: id.Email, When: when}
	c := &object.Commit{Author: sig, Committer: sig, Message: p.msg.String(), TreeHash: th, ParentHashes: []plumbing.Hash{s.commit}}
	return r.storeCommit(c)
}

func (r *Repo) storeCommit(c *object.Commit) (plumbing.Hash, error) {
	obj := r.git.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("commit encode failed: %w", err)
	}
	h, err := r.git.Storer.SetEncodedObject(obj)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("commit write failed: %w", err)
	}
	return h, nil
}
