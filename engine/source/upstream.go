package source

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/internal/gitobj"
)

// The desired state is the shared truth: the branch's upstream as last
// fetched (a remote-tracking ref such as refs/remotes/origin/main), never
// the person's local branch. Fetching writes remote-tracking refs and
// objects only; it never moves a local branch or touches a working tree.
// Commits on the local branch that the upstream lacks (a freeze an action
// could not push yet) are not applied; the engine reads only their
// freezes (see Ahead). A branch with no upstream at all is its own truth.

// findUpstream reads the local branch's upstream from the repository's
// config (branch.NAME.remote and branch.NAME.merge, mapped through the
// remote's fetch refspecs) and sets r.upstream and r.upRemote; a branch
// with none, or one that tracks another local branch (remote "."), keeps
// them empty.
func (r *Repo) findUpstream(repo *git.Repository) error {
	cfg, err := repo.Config()
	if err != nil {
		return fmt.Errorf("repository %s: cannot read its config: %w", r.shown(), err)
	}
	b, ok := cfg.Branches[r.branch]
	if !ok || b.Remote == "" || b.Remote == "." || b.Merge == "" {
		return nil
	}
	rc, ok := cfg.Remotes[b.Remote]
	if !ok {
		return fmt.Errorf("repository %s: branch %q tracks remote %q, which is not configured; fix branch.%s.remote or run `git branch --unset-upstream`", r.shown(), r.branch, b.Remote, r.branch)
	}
	for _, spec := range rc.Fetch {
		if spec.Match(b.Merge) {
			r.upstream = spec.Dst(b.Merge)
			r.upRemote = b.Remote
			if len(rc.URLs) > 0 {
				r.upURL = rc.URLs[0]
			}
			return nil
		}
	}
	return fmt.Errorf("repository %s: branch %q tracks %s of remote %q, which none of its fetch refspecs fetch; fix remote.%s.fetch", r.shown(), r.branch, b.Merge, b.Remote, b.Remote)
}

// Upstream names the ref the desired state is read from when it is not
// the local branch: "origin/main" for a branch tracking origin's main (or a
// remote URL's cache clone); "" when the branch has no upstream and the
// local branch is the truth.
func (r *Repo) Upstream() string {
	if r.upstream == "" {
		return ""
	}
	return r.upstream.Short()
}

// LocalRef is the local branch, refs/heads/BRANCH: where Git actions
// commit. Its commits count only once the upstream has them, except for
// freezes (see Ahead).
func (r *Repo) LocalRef() plumbing.ReferenceName {
	return plumbing.NewBranchReferenceName(r.branch)
}

// Ahead returns the local branch's commit when it is strictly ahead of
// the upstream as last fetched: it holds every upstream commit and more
// (commits not pushed yet). Only the freezes of such a commit count (a stop
// is always safe); the rest of it is never applied. ok is false when there
// is no upstream, or the local branch is behind, level with or beside it.
func (r *Repo) Ahead(ctx context.Context) (rev Revision, ok bool, err error) {
	if r.upstream == "" {
		return Revision{}, false, nil
	}
	if err := ctx.Err(); err != nil {
		return Revision{}, false, err
	}
	h := r.handle()
	h.mu.Lock()
	defer h.mu.Unlock()
	up, err := h.repo.Reference(r.upstream, true)
	if err != nil {
		return Revision{}, false, nil // Head says why
	}
	local, err := h.repo.Reference(r.LocalRef(), true)
	if err != nil || local.Hash() == up.Hash() {
		return Revision{}, false, nil
	}
	lc, err := readCommit(h.repo, local.Hash())
	if err != nil {
		return Revision{}, false, fmt.Errorf("repository %s: commit %s of local branch %q: %w", r.shown(), local.Hash(), r.branch, err)
	}
	uc, err := readCommit(h.repo, up.Hash())
	if err != nil {
		return Revision{}, false, fmt.Errorf("repository %s: commit %s of %s: %w", r.shown(), up.Hash(), r.upstream.Short(), err)
	}
	if ok, err := gitobj.IsAncestor(h.repo.Storer, uc.Hash, lc.Hash); err != nil || !ok {
		return Revision{}, false, err
	}
	return revisionOf(lc), true, nil
}

// IsAncestor reports whether commit older is newer or one of its
// ancestors: whether moving from older to newer only adds commits.
func (r *Repo) IsAncestor(older, newer string) (bool, error) {
	if older == newer {
		return true, nil
	}
	h := r.handle()
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, err := readCommit(h.repo, plumbing.NewHash(older)); err != nil {
		return false, fmt.Errorf("repository %s: commit %s: %w", r.shown(), older, err)
	}
	if _, err := readCommit(h.repo, plumbing.NewHash(newer)); err != nil {
		return false, fmt.Errorf("repository %s: commit %s: %w", r.shown(), newer, err)
	}
	return gitobj.IsAncestor(h.repo.Storer, plumbing.NewHash(older), plumbing.NewHash(newer))
}

// FetchFailingSince is when the fetches that are failing now started to
// fail; zero after a successful fetch.
func (r *Repo) FetchFailingSince() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failSince
}

// fetchUpstream fetches a local repository's upstream remote into its
// remote-tracking refs, with the remote's own refspecs, within the Git
// timeout.
func (r *Repo) fetchUpstream(ctx context.Context, repo *git.Repository) error {
	auth, err := AuthFromEnv(r.upURL)
	if err != nil {
		return &RemoteError{Remote: r.upURL, Op: "authenticate", Err: err}
	}
	err = WithTimeout(ctx, r.timeout, "fetch "+r.upRemote, func(ctx context.Context) error {
		return repo.FetchContext(ctx, &git.FetchOptions{RemoteName: r.upRemote, Auth: auth, Tags: git.NoTags})
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return &RemoteError{Remote: r.upURL, Op: "fetch " + r.upRemote, Err: err}
	}
	return r.fetchChannel(ctx, repo, auth)
}

// fetchChannel fetches the incident channel into its remote-tracking ref
// when the remote's own fetch refspecs leave it out: a clone made with
// --single-branch (as CI and many scripts make them) fetches main alone,
// and would never see a freeze on the channel. A remote without the
// channel branch is not an error; a tracking ref left from a channel
// since deleted is removed, so that no lifted freeze stays in force.
func (r *Repo) fetchChannel(ctx context.Context, repo *git.Repository, auth transport.AuthMethod) error {
	r.mu.Lock()
	channel := r.channel
	r.mu.Unlock()
	if channel == "" || app.ValidChannel(channel) != nil {
		return nil
	}
	src := plumbing.NewBranchReferenceName(channel)
	dst := r.ChannelRef(channel)
	cfg, err := repo.Config()
	if err != nil {
		return fmt.Errorf("repository %s: read config: %w", r.shown(), err)
	}
	if rc, ok := cfg.Remotes[r.upRemote]; ok {
		for _, spec := range rc.Fetch {
			if spec.Match(src) && spec.Dst(src) == dst {
				return nil // the fetch above brought it
			}
		}
	}
	spec := config.RefSpec("+" + src.String() + ":" + dst.String())
	err = WithTimeout(ctx, r.timeout, "fetch "+r.upRemote+" "+channel, func(ctx context.Context) error {
		return repo.FetchContext(ctx, &git.FetchOptions{RemoteName: r.upRemote, RefSpecs: []config.RefSpec{spec}, Auth: auth, Tags: git.NoTags, Force: true})
	})
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
		return nil
	case errors.Is(err, git.NoMatchingRefSpecError{}), strings.Contains(err.Error(), "couldn't find remote ref"):
		if rerr := repo.Storer.RemoveReference(dst); rerr != nil {
			return fmt.Errorf("repository %s: remove %s, whose branch the remote no longer has: %w", r.shown(), dst, rerr)
		}
		return nil
	}
	return &RemoteError{Remote: r.upURL, Op: "fetch " + r.upRemote + " " + channel, Err: err}
}

// revisionOf describes a commit.
func revisionOf(c *object.Commit) Revision {
	subject, _, _ := strings.Cut(c.Message, "\n")
	return Revision{
		Hash:    c.Hash.String(),
		Author:  c.Author.Name,
		Email:   c.Author.Email,
		Time:    c.Author.When,
		Subject: strings.TrimSpace(subject),
	}
}

// ReadBranch is the branch's name where the desired state is read
// (UpstreamBranch): a Flux GitRepository of this repository that follows
// another branch reads other content.
func (r *Repo) ReadBranch() string { return r.upBranch }

// readCommit reads commit h bounded from its header (gitobj.Commit): one
// past gitobj.MaxCommitBytes comes with its header only (tree, parents,
// author) and an empty message, all a snapshot, a revision or a walk
// needs.
func readCommit(g *git.Repository, h plumbing.Hash) (*object.Commit, error) {
	c, err := gitobj.Commit(g.Storer, h)
	if tl := (*gitobj.TooLargeError)(nil); errors.As(err, &tl) {
		return c, nil
	}
	return c, err
}
