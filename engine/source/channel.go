package source

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/internal/gitfs"
	"kdrift.dev/kdrift/internal/gitobj"
)

// MaxChannelCommits is how many incident channel commits not on the
// desired branch a reader checks. A longer channel is not read at all
// (ChannelRead.TooLong): its freezes belong on the desired branch by then.
const MaxChannelCommits = 500

// maxChannelChanges bounds the files one channel commit may change: a
// freeze record changes one App file, rarely a few.
const maxChannelChanges = 16

// ChannelRead is the incident channel as a reader takes it: the commits
// on the channel that the desired branch lacks, each judged by its own
// diff to be a freeze record only (app.FreezeOnlyChange); a commit that
// is not is refused and skipped, and the records after it still count.
type ChannelRead struct {
	// Name is the channel's branch name, Ref where it was read
	// (origin/kdrift/freezes), Tip its head; Tip.Hash is "" when the
	// channel does not exist, which is normal.
	Name, Ref string
	Tip       Revision
	// Base is the desired branch's commit the channel starts from (the
	// merge base), Valid the newest channel commit that is a freeze
	// record; "" when none is.
	Base, Valid string
	// Records are the valid freeze records, oldest first.
	Records []Revision
	// Freezes are what the valid records set, each by its own diff: the
	// freezes readers take.
	Freezes app.ChannelRecords
	// Refused are the commits that are not freeze records, oldest first,
	// each with what it changed: skipped, never applied.
	Refused []ChannelRefusal
	// TooLong says the channel has more than MaxChannelCommits commits
	// the desired branch lacks; none of them is read.
	TooLong bool
}

// ChannelRefusal names a channel commit that is not a freeze record.
type ChannelRefusal struct {
	Commit  Revision
	Problem string
}

// Error says which commit was refused, by whom, and why.
func (c *ChannelRefusal) Error() string {
	return fmt.Sprintf("incident channel commit %s by %s is not a freeze record (%s): kdrift skips it and applies nothing of it; the freeze records before and after it count; a channel commit may change only spec.freeze and spec.freezes of existing Apps in %s/, or kdrift's freeze of an Argo CD or Flux declaration; revert it on the channel (git revert %s)",
		c.Commit.Short(), c.Commit.Author, c.Problem, app.Dir, c.Commit.Short())
}

// ChannelRef is the ref the incident channel named channel is read from:
// the upstream remote's remote-tracking branch (refs/remotes/origin/NAME),
// or, for a branch with no upstream, the local branch NAME.
func (r *Repo) ChannelRef(channel string) plumbing.ReferenceName {
	switch {
	case r.remote:
		return plumbing.NewRemoteReferenceName(RemoteName, channel)
	case r.upstream != "":
		return plumbing.NewRemoteReferenceName(r.upRemote, channel)
	default:
		return plumbing.NewBranchReferenceName(channel)
	}
}

// SetChannel names the incident channel Watch watches along with the
// branch (read from the settings on the desired branch); it reports
// whether the name changed.
func (r *Repo) SetChannel(channel string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := r.channel != channel
	r.channel = channel
	return changed
}

// FetchChannel fetches the channel SetChannel named, now, into a local
// repository whose remote's fetch refspecs leave it out (a clone made
// with --single-branch); the next Fetch keeps it current. A cache clone
// of a remote fetches every branch already, and a branch with no upstream
// has no remote: both are left alone.
func (r *Repo) FetchChannel(ctx context.Context) error {
	if r.remote || r.upstream == "" {
		return nil
	}
	r.fetchMu.Lock()
	defer r.fetchMu.Unlock()
	auth, err := AuthFromEnv(r.upURL)
	if err != nil {
		return &RemoteError{Remote: r.upURL, Op: "authenticate", Err: err}
	}
	fresh, err := gitfs.PlainOpen(r.dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return fmt.Errorf("repository %s: cannot reopen %s: %w", r.shown(), r.dir, err)
	}
	if err := r.fetchChannel(ctx, fresh, auth); err != nil {
		return err
	}
	// A fresh read handle sees the pack files the fetch added.
	if fresh, err = gitfs.PlainOpen(r.dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true}); err != nil {
		return fmt.Errorf("repository %s: cannot reopen %s: %w", r.shown(), r.dir, err)
	}
	r.mu.Lock()
	r.h = r.newHandle(fresh)
	r.mu.Unlock()
	return nil
}

// channelTip is the watched channel's head hash as last fetched, "" when
// there is none.
func (r *Repo) channelTip() string {
	r.mu.Lock()
	channel := r.channel
	r.mu.Unlock()
	if channel == "" || app.ValidChannel(channel) != nil {
		return ""
	}
	h := r.handle()
	h.mu.Lock()
	defer h.mu.Unlock()
	ref, err := h.repo.Reference(r.ChannelRef(channel), true)
	if err != nil {
		return ""
	}
	return ref.Hash().String()
}

// ReadChannel reads the incident channel named channel against the
// desired branch's commit head, as last fetched. A channel that does not
// exist is an empty ChannelRead, not an error.
func (r *Repo) ReadChannel(ctx context.Context, channel, head string) (ChannelRead, error) {
	if err := app.ValidChannel(channel); err != nil {
		return ChannelRead{Name: channel}, fmt.Errorf("incident channel: %w; fix spec.freezes.channel in %s", err, app.SettingsFile)
	}
	ref := r.ChannelRef(channel)
	h := r.handle()
	h.mu.Lock()
	defer h.mu.Unlock()
	tip, err := h.repo.Reference(ref, true)
	if err != nil {
		return ChannelRead{Name: channel, Ref: ref.Short()}, nil
	}
	return WalkChannel(ctx, h.repo, channel, ref.Short(), tip.Hash(), plumbing.NewHash(head))
}

// WalkChannel reads the incident channel whose head is tip against the
// desired branch's commit head in g: it walks the channel's first-parent
// chain back to the desired branch (at most MaxChannelCommits commits)
// and judges each commit, oldest first, by its own diff: a freeze record
// adds what it changed to Freezes, any other commit is refused and
// skipped. ref names the channel in messages.
func WalkChannel(ctx context.Context, g *git.Repository, channel, ref string, tip, head plumbing.Hash) (ChannelRead, error) {
	out := ChannelRead{Name: channel, Ref: ref}
	tc, err := readCommit(g, tip)
	if err != nil {
		return out, fmt.Errorf("incident channel %s: commit %s: %w", ref, tip, err)
	}
	out.Tip = revisionOf(tc)
	hc, err := readCommit(g, head)
	if err != nil {
		return out, fmt.Errorf("incident channel %s: desired commit %s: %w", ref, head, err)
	}
	// The walk follows first parents back to where the chain meets the
	// desired branch; past a merge (refused anyway) it meets it where the
	// merge's first parent does.
	base, found, err := mergeBase(g, tc, hc)
	if err != nil {
		return out, fmt.Errorf("incident channel %s: %w", ref, err)
	}
	var chain []*object.Commit // newest first
	for c := tc; !found || c.Hash != base; {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if len(chain) >= MaxChannelCommits {
			out.TooLong = true
			return out, nil
		}
		chain = append(chain, c)
		if c.NumParents() == 0 {
			break
		}
		p, err := readCommit(g, c.ParentHashes[0])
		if err != nil {
			return out, fmt.Errorf("incident channel %s: parent of %s: %w", ref, c.Hash.String()[:7], err)
		}
		if c.NumParents() > 1 {
			if base, found, err = mergeBase(g, p, hc); err != nil {
				return out, fmt.Errorf("incident channel %s: %w", ref, err)
			}
		}
		c = p
	}
	if found {
		out.Base = base.String()
	}
	for i := len(chain) - 1; i >= 0; i-- {
		c := chain[i]
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if problem := freezeRecord(g, c, &out.Freezes); problem != "" {
			out.Refused = append(out.Refused, ChannelRefusal{Commit: revisionOf(c), Problem: problem})
			continue
		}
		out.Valid = c.Hash.String()
		out.Records = append(out.Records, revisionOf(c))
	}
	return out, nil
}

// freezeRecord says what commit c of g changes beyond freezes of existing
// Apps; "" when it is a freeze record, whose freezes it then adds to rec.
func freezeRecord(g *git.Repository, c *object.Commit, rec *app.ChannelRecords) string {
	if c.NumParents() != 1 {
		return fmt.Sprintf("is a commit with %d parents; a freeze record has one", c.NumParents())
	}
	// Bounded from its header: a record past the bound is refused unread.
	if size, err := gitobj.Size(g.Storer, c.Hash); err == nil && size > gitobj.MaxCommitBytes {
		return (&gitobj.TooLargeError{What: "its commit", Size: size, Max: gitobj.MaxCommitBytes}).Error()
	}
	p, err := readCommit(g, c.ParentHashes[0])
	if err != nil {
		return "its parent cannot be read: " + err.Error()
	}
	pt, err := p.Tree()
	if err != nil {
		return "its parent's tree cannot be read: " + err.Error()
	}
	ct, err := c.Tree()
	if err != nil {
		return "its tree cannot be read: " + err.Error()
	}
	changes, err := object.DiffTree(pt, ct)
	if err != nil {
		return "its changes cannot be read: " + err.Error()
	}
	if len(changes) > maxChannelChanges {
		return fmt.Sprintf("changes %d files, more than the %d a freeze record may", len(changes), maxChannelChanges)
	}
	var problems []string
	type change struct {
		name          string
		appFile       bool
		before, after []byte
	}
	var valid []change
	for _, ch := range changes {
		name := ch.To.Name
		if name == "" {
			name = ch.From.Name
		}
		if ch.From.Name != "" && ch.To.Name != "" && ch.From.Name != ch.To.Name {
			problems = append(problems, "renames "+ch.From.Name)
			continue
		}
		if name == app.SettingsFile || !isYAML(name) {
			problems = append(problems, "changes "+name)
			continue
		}
		before, err := entryBytes(pt, ch.From)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		after, err := entryBytes(ct, ch.To)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		check := app.FreezeOnlyChange
		if !isAppFile(name) {
			// A freeze of an app Argo CD or Flux owns is written into
			// its declaration, wherever the repository keeps it.
			check = app.OwnedFreezeOnlyChange
		}
		if err := check(name, before, after); err != nil {
			problems = append(problems, err.Error())
			continue
		}
		valid = append(valid, change{name, isAppFile(name), before, after})
	}
	if len(problems) > 0 {
		return strings.Join(problems, "; ")
	}
	// Recorded on a copy: a commit whose freezes cannot all be read adds
	// none of them.
	next := rec.Clone()
	for _, ch := range valid {
		if err := next.Record(ch.name, ch.appFile, ch.before, ch.after); err != nil {
			return err.Error()
		}
	}
	*rec = next
	return ""
}

// isAppFile says name is an App file: a YAML file directly in app.Dir,
// other than the settings.
func isAppFile(name string) bool {
	return path.Dir(name) == app.Dir && isYAML(name) && name != app.SettingsFile
}

// isYAML says name ends in .yaml or .yml.
func isYAML(name string) bool {
	ext := path.Ext(name)
	return ext == ".yaml" || ext == ".yml"
}

// entryBytes is the content of a diff side (nil when the side is empty),
// bounded by the size an App file may have.
func entryBytes(t *object.Tree, e object.ChangeEntry) ([]byte, error) {
	if e.Name == "" {
		return nil, nil
	}
	if !e.TreeEntry.Mode.IsFile() {
		return nil, fmt.Errorf("%s is not a regular file", e.Name)
	}
	f, err := t.TreeEntryFile(&e.TreeEntry)
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read: %v", e.Name, err)
	}
	if f.Size > int64(render.DefaultMaxFileBytes) {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d an App file may have", e.Name, f.Size, render.DefaultMaxFileBytes)
	}
	rd, err := f.Reader()
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read: %v", e.Name, err)
	}
	defer rd.Close()
	data, err := io.ReadAll(io.LimitReader(rd, int64(render.DefaultMaxFileBytes)+1))
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read: %v", e.Name, err)
	}
	return data, nil
}

// mergeBase is the newest commit both a and b of g descend from; found
// is false when they share no history. It reads commits bounded, a
// commit message past gitobj.MaxCommitBytes never inflated.
func mergeBase(g *git.Repository, a, b *object.Commit) (plumbing.Hash, bool, error) {
	bases, err := gitobj.MergeBase(g.Storer, a.Hash, b.Hash)
	if err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("common history of %s and %s: %w", a.Hash.String()[:7], b.Hash.String()[:7], err)
	}
	if len(bases) == 0 {
		return plumbing.ZeroHash, false, nil
	}
	return bases[0], true, nil
}
