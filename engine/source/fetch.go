package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"

	"kdrift.dev/kdrift/engine/redact"
	"kdrift.dev/kdrift/internal/gitfs"
)

// DefaultInterval is how often Watch fetches when given no interval.
const DefaultInterval = 30 * time.Second

// DefaultGitTimeout bounds every fetch, clone and push, so a remote that
// accepts the connection and never answers cannot hang an action or
// stale the engine: 30 s, as long as a fetch interval.
const DefaultGitTimeout = 30 * time.Second

// EnvGitTimeout names the environment variable that overrides
// DefaultGitTimeout: a Go duration such as 10s or 2m.
const EnvGitTimeout = "KDRIFT_GIT_TIMEOUT"

// GitTimeout is the timeout of one fetch, clone or push: set when > 0,
// else EnvGitTimeout read through getenv (nil: os.Getenv), else
// DefaultGitTimeout. A malformed variable is an error that names it.
func GitTimeout(set time.Duration, getenv func(string) string) (time.Duration, error) {
	if set > 0 {
		return set, nil
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	v := strings.TrimSpace(getenv(EnvGitTimeout))
	if v == "" {
		return DefaultGitTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive Go duration such as 30s or 2m", EnvGitTimeout, v)
	}
	return d, nil
}

// TimeoutError says a Git operation with a remote did not finish within
// the Git timeout; what it would have changed was left as it was.
type TimeoutError struct {
	Op    string
	After time.Duration
}

// Error says which operation timed out and how to change the timeout.
func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s timed out after %s (the remote did not answer; set %s to wait longer)", e.Op, e.After, EnvGitTimeout)
}

// Timeout marks the error as a timeout (net.Error style).
func (e *TimeoutError) Timeout() bool { return true }

// WithTimeout runs f with a context that ends after d, and turns the end
// of that deadline (not the caller's own cancellation) into a
// *TimeoutError for op.
func WithTimeout(ctx context.Context, d time.Duration, op string, f func(context.Context) error) error {
	tctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	err := f(tctx)
	if err != nil && ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
		return &TimeoutError{Op: op, After: d}
	}
	return err
}

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

// Error renders `git remote URL: OP failed: ERR; ...`, with every
// credential redacted (go-git's own messages quote the URL they requested).
func (e *RemoteError) Error() string {
	if LocalWriteFailure(e.Err) {
		return redact.Text(fmt.Sprintf("git remote %s: %s failed: %v; the remote answered, but the folder kdrift keeps its clone in cannot take what it sent (the disk is full, or a file-size or quota limit was hit): free space or raise the limit there ($XDG_CACHE_HOME/kdrift; the cache emptyDir in deploy/); kdrift keeps using the last fetched revision",
			redact.URL(e.Remote), e.Op, e.Err))
	}
	return redact.Text(fmt.Sprintf("git remote %s: %s failed: %v; check the URL, the network and the credentials (%s, %s or %s); kdrift keeps using the last fetched revision",
		redact.URL(e.Remote), e.Op, e.Err, EnvToken, EnvTokenFallback, EnvSSHKey))
}

// LocalWriteFailure says err is this machine failing to write a file (no
// space left, a file-size or quota limit, a read-only file system), not
// the remote failing: the advice differs.
func LocalWriteFailure(err error) bool {
	if err == nil {
		return false
	}
	for _, e := range []syscall.Errno{syscall.ENOSPC, syscall.EFBIG, syscall.EDQUOT, syscall.EROFS} {
		if errors.Is(err, e) {
			return true
		}
	}
	// go-git does not always wrap the file error it met.
	msg := err.Error()
	for _, s := range []string{"no space left on device", "file too large", "disk quota exceeded", "read-only file system"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// Unwrap returns the underlying error.
func (e *RemoteError) Unwrap() error { return e.Err }

// Fetch brings the Repo up to date. For a remote it fetches every branch from
// the remote into the cache; a failure is a *RemoteError and the last
// fetched revision stays readable. For a local repository whose branch has
// an upstream it fetches that remote into its remote-tracking refs (never
// a local branch, never the working tree); with no upstream it only
// re-reads the repository from disk. Head then sees commits made since.
func (r *Repo) Fetch(ctx context.Context) (err error) {
	r.fetchMu.Lock()
	defer r.fetchMu.Unlock()
	if skip, ok := r.recentFetch(); ok {
		r.mu.Lock()
		r.skipped = skip
		r.mu.Unlock()
		return nil
	}
	r.mu.Lock()
	r.skipped = FetchSkip{}
	r.mu.Unlock()
	if r.onFetch != nil {
		start := time.Now()
		defer func() { r.onFetch(time.Since(start), err) }()
	}
	// Fetch through a handle of its own so that readers of the current one
	// are not blocked by the network, then swap in a fresh read handle: a
	// go-git handle indexes the pack files once and would miss new ones.
	fresh, err := gitfs.PlainOpen(r.dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return r.setFetchErr(fmt.Errorf("repository %s: cannot reopen %s: %w", r.shown(), r.dir, err))
	}
	if r.remote {
		err := WithTimeout(ctx, r.timeout, "fetch", func(ctx context.Context) error {
			return fresh.FetchContext(ctx, r.fetchOptions())
		})
		if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) && r.clearStaleLocksWaiting(ctx) {
			// A lock a killed process left failed the fetch: once it is
			// gone, the same fetch goes through.
			err = WithTimeout(ctx, r.timeout, "fetch", func(ctx context.Context) error {
				return fresh.FetchContext(ctx, r.fetchOptions())
			})
		}
		if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
			return r.setFetchErr(&RemoteError{Remote: r.location, Op: "fetch", Err: err})
		}
		if fresh, err = gitfs.PlainOpen(r.dir, nil); err != nil {
			return r.setFetchErr(fmt.Errorf("repository %s: cannot reopen %s: %w", r.shown(), r.dir, err))
		}
	} else if r.upstream != "" {
		if err := r.fetchUpstream(ctx, fresh); err != nil {
			return r.setFetchErr(err)
		}
		if fresh, err = gitfs.PlainOpen(r.dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true}); err != nil {
			return r.setFetchErr(fmt.Errorf("repository %s: cannot reopen %s: %w", r.shown(), r.dir, err))
		}
	}
	r.mu.Lock()
	r.h = r.newHandle(fresh)
	r.lastErr = nil
	r.failSince = time.Time{}
	r.mu.Unlock()
	r.stampFetch()
	return nil
}

// fetchOptions fetch every branch of the remote into the cache clone.
func (r *Repo) fetchOptions() *git.FetchOptions {
	return &git.FetchOptions{
		RemoteName: RemoteName,
		RefSpecs:   []config.RefSpec{config.RefSpec("+refs/heads/*:refs/remotes/" + RemoteName + "/*")},
		Auth:       r.auth,
		Tags:       git.NoTags,
		Force:      true,
		Prune:      true,
	}
}

// clearStaleLocks removes, from the cache clone of a remote (a folder
// only kdrift writes), the lock files a process killed between creating
// one and renaming it left behind (see gitfs.StaleLockAge), logging each;
// it reports whether it removed any. A person's own repository is never
// touched: there a lock may be their git's, and the LockedError says how
// to clear it.
func (r *Repo) clearStaleLocks() bool {
	if !r.remote || r.dir == "" {
		return false
	}
	removed, err := gitfs.RemoveStaleLocks(r.dir, gitfs.StaleLockAge, time.Now())
	for _, l := range removed {
		slog.Warn("removed a stale Git lock file from the cache clone (a kdrift process was killed while writing)", "lock", l.Path, "age", l.Age.Round(time.Second).String(), "repo", r.shown())
	}
	if err != nil {
		slog.Warn("cannot clear stale Git lock files from the cache clone", "dir", r.dir, "err", err)
	}
	return len(removed) > 0
}

// clearStaleLocksWaiting is clearStaleLocks for a fetch that failed: a
// lock a process killed a moment ago is not yet old enough to be taken
// for a killed writer's, so it waits until it is (at most a couple of
// seconds, and only while such a lock is there) and clears again.
func (r *Repo) clearStaleLocksWaiting(ctx context.Context) bool {
	if r.clearStaleLocks() {
		return true
	}
	if !r.remote || r.dir == "" {
		return false
	}
	wait := gitfs.UntilUnheldStale(r.dir, time.Now())
	if wait <= 0 {
		return false
	}
	t := time.NewTimer(wait + 50*time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	}
	return r.clearStaleLocks()
}

func (r *Repo) setFetchErr(err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lastErr == nil {
		r.failSince = time.Now()
	}
	r.lastErr = err
	return err
}

// Head is the desired revision: the branch's upstream as last fetched (for
// a remote URL, and for a local branch that has an upstream), or the
// committed local branch when it has none. Uncommitted edits in a working
// tree are never seen, and neither are local commits the upstream lacks
// (see Ahead for their freezes).
func (r *Repo) Head(ctx context.Context) (Revision, error) {
	if err := ctx.Err(); err != nil {
		return Revision{}, err
	}
	h := r.handle()
	h.mu.Lock()
	defer h.mu.Unlock()
	ref, err := h.repo.Reference(r.BranchRef(), true)
	if err != nil && r.upstream != "" && !r.remote {
		return Revision{}, fmt.Errorf("repository %s: branch %q's upstream %s has not been fetched (is the branch pushed? `git push -u %s %s`): %w; kdrift reads the upstream, never the local branch", r.shown(), r.branch, r.upstream.Short(), r.upRemote, r.branch, err)
	}
	if err != nil {
		return Revision{}, fmt.Errorf("repository %s: branch %q: %w", r.shown(), r.branch, err)
	}
	c, err := readCommit(h.repo, ref.Hash())
	if err != nil {
		return Revision{}, fmt.Errorf("repository %s: commit %s of branch %q: %w", r.shown(), ref.Hash(), r.branch, err)
	}
	return revisionOf(c), nil
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
	// go-git's ResolveRevision reads the commit whole: a full hash needs
	// no resolving, and readCommit reads it bounded.
	ch := plumbing.NewHash(hash)
	if !plumbing.IsHash(hash) {
		resolved, err := h.repo.ResolveRevision(plumbing.Revision(hash))
		if err != nil {
			return nil, fmt.Errorf("repository %s: commit %s: %w", r.shown(), hash, err)
		}
		ch = *resolved
	}
	c, err := readCommit(h.repo, ch)
	if err != nil {
		return nil, fmt.Errorf("repository %s: commit %s: %w", r.shown(), hash, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("repository %s: tree of commit %s: %w", r.shown(), hash, err)
	}
	return newSnapshot(h, c.Hash.String(), tree), nil
}

// TreeSnapshot is a read-only view of a root tree that no commit holds
// yet (a revert's tree, stored by engine/actions before it is committed),
// by its full hash. Its Commit is "tree:" and the hash. It is not kept
// among the recent snapshots.
func (r *Repo) TreeSnapshot(treeHash string) (*Snapshot, error) {
	if !plumbing.IsHash(treeHash) {
		return nil, fmt.Errorf("repository %s: tree %q: not a full hash", r.shown(), treeHash)
	}
	h := r.handle()
	h.mu.Lock()
	defer h.mu.Unlock()
	t, err := h.repo.TreeObject(plumbing.NewHash(treeHash))
	if err != nil {
		return nil, fmt.Errorf("repository %s: tree %s: %w", r.shown(), treeHash, err)
	}
	return newSnapshot(h, "tree:"+treeHash, t), nil
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
// time it or the incident channel's head (SetChannel) changes. A failed fetch sends nothing; LastFetchError tells why.
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
			key := rev.Hash + " " + r.channelTip()
			if key == last {
				return true
			}
			select {
			case out <- rev:
				last = key
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
