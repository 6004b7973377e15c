package source

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// DefaultInterval is how often Watch fetches when given no interval.
const DefaultInterval = 30 * time.Second

// Revision is one commit of the branch kdrift reads.
type Revision struct {
	Hash    string
	Author  string
	Email   string
	Time    time.Time
	Subject string
}

// Short is the first 7 characters of the hash.
func (v Revision) Short() string {
	if len(v.Hash) > 7 {
		return v.Hash[:7]
	}
	return v.Hash
}

// RemoteError says that talking to a remote failed: which remote (with any
// password removed), what kdrift was doing, and the underlying error. The
// last fetched revision stays usable.
type RemoteError struct {
	Remote string
	Op     string
	Err    error
}

// Error renders `git remote URL: OP failed: ERR; ...`.
func (e *RemoteError) Error() string {
	return fmt.Sprintf("git remote %s: %s failed: %v; check the URL, the network and the credentials (%s, %s or %s); kdrift keeps using the last fetched revision",
		Redact(e.Remote), e.Op, e.Err, EnvToken, EnvTokenFallback, EnvSSHKey)
}

// Unwrap returns the underlying error.
func (e *RemoteError) Unwrap() error { return e.Err }

// Redact drops the password of a URL (and the user name of an http(s)
// URL, where it is often a token), for messages and logs.
func Redact(loc string) string {
	u, err := url.Parse(loc)
	if err != nil || u.User == nil {
		return loc
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	} else if u.Scheme == "http" || u.Scheme == "https" {
		// https://TOKEN@host/...: the user name is the token.
		u.User = url.User("xxxxx")
	}
	return u.String()
}

// Fetch brings the Repo up to date. For a remote it fetches every branch from
// the remote into the cache; a failure is a *RemoteError and the last
// fetched revision stays readable. For a local repository it re-reads the
// repository from disk (kdrift never fetches into a person's repository);
// Head then sees commits made since.
func (r *Repo) Fetch(ctx context.Context) (err error) {
	r.fetchMu.Lock()
	defer r.fetchMu.Unlock()
	if r.onFetch != nil {
		start := time.Now()
		defer func() { r.onFetch(time.Since(start), err) }()
	}
	// Fetch through a handle of its own so that readers of the current one
	// are not blocked by the network, then swap in a fresh read handle: a
	// go-git handle indexes the pack files once and would miss new ones.
	fresh, err := git.PlainOpenWithOptions(r.dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return r.setFetchErr(fmt.Errorf("repository %s: cannot reopen %s: %w", r.location, r.dir, err))
	}
	if r.remote {
		err := fresh.FetchContext(ctx, &git.FetchOptions{
			RemoteName: RemoteName,
			RefSpecs:   []config.RefSpec{config.RefSpec("+refs/heads/*:refs/remotes/" + RemoteName + "/*")},
			Auth:       r.auth,
			Tags:       git.NoTags,
			Force:      true,
			Prune:      true,
		})
		if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
			return r.setFetchErr(&RemoteError{Remote: r.location, Op: "fetch", Err: err})
		}
		if fresh, err = git.PlainOpen(r.dir); err != nil {
			return r.setFetchErr(fmt.Errorf("repository %s: cannot reopen %s: %w", r.location, r.dir, err))
		}
	}
	r.mu.Lock()
	r.h = &handle{repo: fresh}
	r.lastErr = nil
	r.mu.Unlock()
	return nil
}

func (r *Repo) setFetchErr(err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastErr = err
	return err
}

// Head is the commit the branch points at. For a local repository that is
// the committed state of the branch: uncommitted edits in the working tree
// are never seen. For a remote it is the branch as last fetched.
func (r *Repo) Head(ctx context.Context) (Revision, error) {
	if err := ctx.Err(); err != nil {
		return Revision{}, err
	}
	h := r.handle()
	h.mu.Lock()
	defer h.mu.Unlock()
	ref, err := h.repo.Reference(r.BranchRef(), true)
	if err != nil {
		return Revision{}, fmt.Errorf("repository %s: branch %q: %w", r.location, r.branch, err)
	}
	c, err := h.repo.CommitObject(ref.Hash())
	if err != nil {
		return Revision{}, fmt.Errorf("repository %s: commit %s of branch %q: %w", r.location, ref.Hash(), r.branch, err)
	}
	if r.remote {
		c = r.aheadLocally(h, c)
	}
	subject, _, _ := strings.Cut(c.Message, "\n")
	return Revision{
		Hash:    c.Hash.String(),
		Author:  c.Author.Name,
		Email:   c.Author.Email,
		Time:    c.Author.When,
		Subject: strings.TrimSpace(subject),
	}, nil
}

// aheadLocally returns the cache clone's local branch instead of the
// fetched one when it only adds commits to it: commits a Git action made
// (a freeze during an incident) that could not be pushed yet, because the
// remote is down. They count at once; the action pushes them later. A
// local branch behind or beside the remote's is not read.
func (r *Repo) aheadLocally(h *handle, fetched *object.Commit) *object.Commit {
	local, err := h.repo.Reference(plumbing.NewBranchReferenceName(r.branch), true)
	if err != nil || local.Hash() == fetched.Hash {
		return fetched
	}
	lc, err := h.repo.CommitObject(local.Hash())
	if err != nil {
		return fetched
	}
	if ok, err := fetched.IsAncestor(lc); err != nil || !ok {
		return fetched
	}
	return lc
}

// Snapshot is a read-only view of commit hash's tree (a full 40-character
// hash, or a short one that names exactly one commit). Asking again for a
// recent commit returns the same Snapshot, with its folders and Apps
// already read.
func (r *Repo) Snapshot(hash string) (*Snapshot, error) {
	r.snapMu.Lock()
	for _, s := range r.snaps {
		if s.commit == hash {
			r.snapMu.Unlock()
			return s, nil
		}
	}
	r.snapMu.Unlock()
	s, err := r.readSnapshot(hash)
	if err != nil {
		return nil, err
	}
	r.snapMu.Lock()
	defer r.snapMu.Unlock()
	r.snaps = append([]*Snapshot{s}, r.snaps...)
	if len(r.snaps) > keptSnapshots {
		r.snaps = r.snaps[:keptSnapshots]
	}
	return s, nil
}

func (r *Repo) readSnapshot(hash string) (*Snapshot, error) {
	h := r.handle()
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, err := h.repo.ResolveRevision(plumbing.Revision(hash))
	if err != nil {
		return nil, fmt.Errorf("repository %s: commit %s: %w", r.location, hash, err)
	}
	c, err := h.repo.CommitObject(*ch)
	if err != nil {
		return nil, fmt.Errorf("repository %s: commit %s: %w", r.location, hash, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("repository %s: tree of commit %s: %w", r.location, hash, err)
	}
	return newSnapshot(h, c.Hash.String(), tree), nil
}

// Refresh makes every Watch fetch now instead of at its next tick.
func (r *Repo) Refresh() {
	r.refreshMu.Lock()
	defer r.refreshMu.Unlock()
	close(r.refresh)
	r.refresh = make(chan struct{})
}

func (r *Repo) refreshed() <-chan struct{} {
	r.refreshMu.Lock()
	defer r.refreshMu.Unlock()
	return r.refresh
}

// Watch fetches every interval (DefaultInterval when interval <= 0) and on
// Refresh, and sends the head revision first when it starts and then each
// time it changes. A failed fetch sends nothing; LastFetchError tells why.
// The channel is closed when ctx ends.
func (r *Repo) Watch(ctx context.Context, interval time.Duration) <-chan Revision {
	if interval <= 0 {
		interval = DefaultInterval
	}
	out := make(chan Revision, 1)
	go func() {
		defer close(out)
		t := time.NewTicker(interval)
		defer t.Stop()
		last := ""
		send := func() bool {
			rev, err := r.Head(ctx)
			if err != nil {
				r.setFetchErr(err)
				return ctx.Err() == nil
			}
			if rev.Hash == last {
				return true
			}
			select {
			case out <- rev:
				last = rev.Hash
				return true
			case <-ctx.Done():
				return false
			}
		}
		if !send() {
			return
		}
		for {
			refresh := r.refreshed()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-refresh:
			}
			if err := r.Fetch(ctx); err != nil {
				continue
			}
			if !send() {
				return
			}
		}
	}()
	return out
}
