package actions

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"kdrift.dev/kdrift/engine/redact"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/gitobj"
)

// maxPending bounds how many unpushed commits kdrift re-applies on a newer
// upstream head.
const maxPending = 200

// Push sends the branch's unpushed commits to its upstream. When the
// upstream moved on, kdrift's own unpushed commits are re-applied on top of
// it (never a force-push); commits kdrift did not make are left for the
// person to rebase. Result.PushError says why nothing was pushed, and
// Result.Refused is set when the remote refused the push on purpose.
func (r *Repo) Push(ctx context.Context) (Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := Result{Branch: r.branch}
	remote, upRef, hasUp, err := r.upstream()
	if err != nil {
		return res, err
	}
	if !hasUp {
		return res, fmt.Errorf("branch %s tracks no remote branch; nothing to push (set one with `git branch --set-upstream-to`)", r.branch)
	}
	res.Upstream = remote + "/" + upRef.Short()
	tip, err := r.head()
	if err != nil {
		return res, err
	}
	for attempt := 1; ; attempt++ {
		res.Commit = tip.String()
		remoteHead, err := r.fetch(ctx, remote, upRef)
		if err != nil {
			res.PushError = redact.Text(err.Error())
			return res, nil
		}
		base, blocked, err := r.integrate(tip, remoteHead)
		if err != nil {
			return res, err
		}
		if blocked != nil {
			res.PushError = redact.Text(blocked.Error())
			return res, nil
		}
		if base == remoteHead {
			if err := r.advance(tip, base); err != nil {
				return res, err
			}
			res.Commit, res.Pushed = base.String(), true
			return res, nil
		}
		if base != tip {
			if err := r.advance(tip, base); err != nil {
				return res, err
			}
			tip = base
			res.Commit = tip.String()
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
			res.PushError = redact.Text(err.Error())
			return res, nil
		}
		res.Retries++
	}
}

// fetch updates the remote-tracking branch and returns the remote head;
// the zero hash means the remote has no such branch yet.
func (r *Repo) fetch(ctx context.Context, remote string, upRef plumbing.ReferenceName) (plumbing.Hash, error) {
	auth, err := r.authFor(remote)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	tracking := plumbing.NewRemoteReferenceName(remote, upRef.Short())
	err = source.WithTimeout(ctx, r.opts.GitTimeout, "fetch", func(ctx context.Context) error {
		return r.git.FetchContext(ctx, &git.FetchOptions{
			RemoteName: remote,
			RefSpecs:   []config.RefSpec{config.RefSpec(fmt.Sprintf("+%s:%s", upRef, tracking))},
			Auth:       auth,
			Tags:       git.NoTags,
		})
	})
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
	case errors.Is(err, git.NoMatchingRefSpecError{}), strings.Contains(err.Error(), "couldn't find remote ref"):
		return plumbing.ZeroHash, nil
	default:
		return plumbing.ZeroHash, redact.Error(fmt.Errorf("fetch from %s (%s) failed: %w", remote, r.remoteURL(remote), err))
	}
	ref, err := r.git.Storer.Reference(tracking)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("remote branch %s read failed: %w", tracking.Short(), err)
	}
	return ref.Hash(), nil
}

// pushBranch pushes the branch to its upstream without force and records
// the new remote head locally.
func (r *Repo) pushBranch(ctx context.Context, remote string, upRef plumbing.ReferenceName) error {
	head, err := r.head()
	if err != nil {
		return err
	}
	return r.pushRef(ctx, remote, plumbing.NewBranchReferenceName(r.branch), upRef, head)
}

// pushRef pushes the local ref (holding hash) to the remote's ref dst
// without force and records hash as the remote-tracking head. A refusal
// is a *PushRefusedError.
func (r *Repo) pushRef(ctx context.Context, remote string, local, dst plumbing.ReferenceName, hash plumbing.Hash) error {
	auth, err := r.authFor(remote)
	if err != nil {
		return err
	}
	// The remote's "remote:" lines (a hook's output, a forge's
	// protection message) arrive on the sideband, not in the error.
	progress := &progressBuffer{}
	err = source.WithTimeout(ctx, r.opts.GitTimeout, "push", func(ctx context.Context) error {
		return r.git.PushContext(ctx, &git.PushOptions{
			RemoteName: remote,
			RefSpecs:   []config.RefSpec{config.RefSpec(fmt.Sprintf("%s:%s", local, dst))},
			Auth:       auth,
			Progress:   progress,
		})
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		where := fmt.Sprintf("%s (%s)", remote, redact.URL(r.remoteURL(remote)))
		if refused := refusal(err, where, dst.Short(), progress.String()); refused != nil {
			return refused
		}
		return redact.Error(fmt.Errorf("push to %s (%s) failed: %w", remote, r.remoteURL(remote), err))
	}
	tracking := plumbing.NewRemoteReferenceName(remote, dst.Short())
	if err := r.git.Storer.SetReference(plumbing.NewHashReference(tracking, hash)); err != nil {
		return fmt.Errorf("pushed, but recording %s failed: %w", tracking.Short(), err)
	}
	return nil
}

// isRejected says a push lost a race: the remote has commits we lack.
func isRejected(err error) bool {
	if errors.Is(err, git.ErrForceNeeded) {
		return true
	}
	s := err.Error()
	for _, m := range []string{"non-fast-forward", "fetch first", "rejected", "stale info", "failed to update ref", "cannot lock ref"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// integrate settles what a new commit builds on, given the branch (keep)
// and the upstream head: the newer of the two when one contains the other;
// when they diverged, kdrift's own unpushed commits re-applied on the
// upstream head. blocked is set (and keep returned) when that cannot be done
// without the person: the commit then stays local.
func (r *Repo) integrate(keep, remoteHead plumbing.Hash) (base plumbing.Hash, blocked error, err error) {
	if remoteHead.IsZero() || keep == remoteHead {
		return keep, nil, nil
	}
	// Commits are read bounded: one past gitobj.MaxCommitBytes has an
	// empty message, so it is never taken for kdrift's own.
	kc, err := headerCommit(r.git.Storer, keep)
	if err != nil {
		return keep, nil, fmt.Errorf("commit %s read failed: %w", keep, err)
	}
	rc, err := headerCommit(r.git.Storer, remoteHead)
	if err != nil {
		return keep, nil, fmt.Errorf("commit %s read failed: %w", remoteHead, err)
	}
	if ok, err := gitobj.IsAncestor(r.git.Storer, rc.Hash, kc.Hash); err != nil {
		return keep, nil, err
	} else if ok {
		// Ahead: push only if every unpushed commit is kdrift's; a
		// person's own commits are theirs to publish.
		for c := kc; c.Hash != remoteHead; {
			if c.NumParents() == 0 || parseMessage(c.Message).trailer(TrailerAction) == "" {
				return keep, fmt.Errorf("branch %s has unpushed commits of your own (%s %q); kdrift does not publish them for you: push them with git when ready, then run `kdrift push`", r.branch, c.Hash.String()[:12], firstLine(c.Message)), nil
			}
			next, err := headerCommit(r.git.Storer, c.ParentHashes[0])
			if err != nil {
				return keep, nil, fmt.Errorf("commit %s parent read failed: %w", c.Hash, err)
			}
			c = next
		}
		return keep, nil, nil
	}
	if ok, err := gitobj.IsAncestor(r.git.Storer, kc.Hash, rc.Hash); err != nil {
		return keep, nil, err
	} else if ok {
		return remoteHead, nil, nil
	}
	bases, err := gitobj.MergeBase(r.git.Storer, kc.Hash, rc.Hash)
	if err != nil {
		return keep, nil, err
	}
	diverged := fmt.Errorf("branch %s has diverged from its upstream", r.branch)
	if len(bases) == 0 {
		return keep, fmt.Errorf("%w (no common history); fix the branch by hand", diverged), nil
	}
	mb := bases[0]
	var pending []*object.Commit
	for c := kc; c.Hash != mb; {
		if len(pending) >= maxPending {
			return keep, fmt.Errorf("%w by more than %d commits; pull or rebase it by hand, then run `kdrift push`", diverged, maxPending), nil
		}
		if c.NumParents() != 1 || parseMessage(c.Message).trailer(TrailerAction) == "" {
			return keep, fmt.Errorf("%w with commits kdrift did not make (%s %q); pull or rebase it, then run `kdrift push`", diverged, c.Hash.String()[:12], firstLine(c.Message)), nil
		}
		pending = append(pending, c)
		next, err := headerCommit(r.git.Storer, c.ParentHashes[0])
		if err != nil {
			return keep, nil, fmt.Errorf("commit %s parent read failed: %w", c.Hash, err)
		}
		c = next
	}
	cur := remoteHead
	for i := len(pending) - 1; i >= 0; i-- {
		c := pending[i]
		next, blocked, err := r.cherryPick(c, cur)
		if err != nil || blocked != nil {
			return keep, blocked, err
		}
		cur = next
	}
	return cur, nil, nil
}

// cherryPick re-applies commit c on top of onto, keeping its author,
// committer and message; a commit whose change is already there is dropped.
func (r *Repo) cherryPick(c *object.Commit, onto plumbing.Hash) (plumbing.Hash, error, error) {
	s := r.git.Storer
	baseT, err := commitTree(s, c.ParentHashes[0])
	if err != nil {
		return onto, nil, err
	}
	ours, err := commitTree(s, onto)
	if err != nil {
		return onto, nil, err
	}
	theirs, err := readFlatTree(s, c.TreeHash)
	if err != nil {
		return onto, nil, err
	}
	merged, conflicts, err := mergeTrees(s, baseT, ours, theirs)
	if err != nil {
		return onto, nil, err
	}
	if len(conflicts) > 0 {
		ce := &ConflictError{What: fmt.Sprintf("unpushed commit %s %q", c.Hash.String()[:12], firstLine(c.Message)), Files: conflicts}
		return onto, fmt.Errorf("%v; the upstream changed the same lines: pull and resolve by hand", strings.TrimSuffix(ce.Error(), "; nothing was committed")), nil
	}
	if len(changedPaths(ours, merged)) == 0 {
		return onto, nil, nil
	}
	th, err := writeFlatTree(s, merged)
	if err != nil {
		return onto, nil, err
	}
	nc := &object.Commit{Author: c.Author, Committer: c.Committer, Message: c.Message, TreeHash: th, ParentHashes: []plumbing.Hash{onto}}
	h, err := r.storeCommit(nc)
	return h, nil, err
}

// refreshCache brings a cache clone's branch up to its remote before a
// read, when it only lacks newer commits; a person's own repository is read
// as it is. An unreachable remote leaves the cache as it was.
func (r *Repo) refreshCache(ctx context.Context) error {
	if !r.cache {
		return nil
	}
	remote, upRef, ok, err := r.upstream()
	if err != nil || !ok {
		return err
	}
	remoteHead, err := r.fetch(ctx, remote, upRef)
	if err != nil || remoteHead.IsZero() {
		return nil
	}
	tip, err := r.head()
	if err != nil {
		return err
	}
	base, blocked, err := r.integrate(tip, remoteHead)
	if err != nil || blocked != nil || base != remoteHead {
		return err
	}
	return r.advance(tip, base)
}

func firstLine(s string) string {
	return strings.TrimSpace(strings.SplitN(s, "\n", 2)[0])
}
