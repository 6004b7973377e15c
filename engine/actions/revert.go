package actions

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/redact"
	"kdrift.dev/kdrift/internal/gitobj"
)

// RevertRequest asks for a new commit that undoes Commit.
type RevertRequest struct {
	// Commit is a revision: a full or abbreviated hash, or a ref.
	Commit string
	// Mainline picks, for a merge commit, the parent (1-based) whose side
	// is kept, as `git revert -m`.
	Mainline int
	Reason   string
}

// FileDiff is what a revert would do to one file.
type FileDiff struct {
	Path string `json:"path"`
	// Status is added, modified or deleted.
	Status string `json:"status"`
	// Diff is a unified diff (empty for binary files and mode-only changes).
	Diff string `json:"diff"`
}

// revertTarget is a resolved commit to revert and the parent it goes back to.
type revertTarget struct {
	commit *object.Commit
	parent plumbing.Hash // zero for a root commit
}

func (r *Repo) resolveRevert(req RevertRequest) (*revertTarget, error) {
	if strings.TrimSpace(req.Commit) == "" {
		return nil, fmt.Errorf("no commit named: pass the COMMIT to revert")
	}
	h, err := r.git.ResolveRevision(plumbing.Revision(req.Commit))
	if err != nil {
		return nil, fmt.Errorf("commit %s: not found in %s (%v)", req.Commit, r.location, err)
	}
	c, err := gitobj.Commit(r.git.Storer, *h)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", req.Commit, err)
	}
	t := &revertTarget{commit: c}
	switch n := c.NumParents(); {
	case n > 1 && req.Mainline == 0:
		return nil, fmt.Errorf("commit %s is a merge; pass --mainline N (1..%d) to say which parent's side to keep, as with git revert -m", c.Hash.String()[:12], n)
	case n > 1 && (req.Mainline < 1 || req.Mainline > n):
		return nil, fmt.Errorf("commit %s has %d parents; --mainline %d is out of range", c.Hash.String()[:12], n, req.Mainline)
	case n > 1:
		t.parent = c.ParentHashes[req.Mainline-1]
	case req.Mainline != 0:
		return nil, fmt.Errorf("commit %s is not a merge; drop --mainline", c.Hash.String()[:12])
	case n == 1:
		t.parent = c.ParentHashes[0]
	}
	return t, nil
}

// revertTree is the branch head's tree with the target's change undone.
func (r *Repo) revertTree(t *revertTarget, head flatTree) (flatTree, error) {
	s := r.git.Storer
	base, err := readFlatTree(s, t.commit.TreeHash)
	if err != nil {
		return nil, err
	}
	theirs, err := commitTree(s, t.parent)
	if err != nil {
		return nil, err
	}
	merged, conflicts, err := mergeTrees(s, base, head, theirs)
	if err != nil {
		return nil, err
	}
	if len(conflicts) > 0 {
		return nil, &ConflictError{What: fmt.Sprintf("revert of %s %q", t.commit.Hash.String()[:12], firstLine(t.commit.Message)), Files: conflicts}
	}
	if len(changedPaths(head, merged)) == 0 {
		return nil, fmt.Errorf("reverting %s changes nothing on %s (already reverted?); nothing was committed", t.commit.Hash.String()[:12], r.branch)
	}
	return merged, nil
}

// touchedApps names the apps whose App file or path the target changed,
// looking at the Apps of the branch head and of the target commit.
func (r *Repo) touchedApps(t *revertTarget, head *snapshot) ([]string, error) {
	s := r.git.Storer
	before, err := commitTree(s, t.parent)
	if err != nil {
		return nil, err
	}
	after, err := readFlatTree(s, t.commit.TreeHash)
	if err != nil {
		return nil, err
	}
	changed := changedPaths(before, after)
	var apps []app.App
	for _, snap := range []*snapshot{head, {repo: r, commit: t.commit.Hash, tree: after}} {
		as, err := loadApps(snap)
		if err != nil {
			// An App file the person broke must not block a revert
			// (it may be what is being reverted); the list is a hint.
			continue
		}
		apps = append(apps, as.apps...)
	}
	set := map[string]bool{}
	for _, a := range apps {
		dir := path.Clean(a.Spec.Path)
		for _, p := range changed {
			if p == a.File || (a.Spec.Path != "" && (dir == "." || p == dir || strings.HasPrefix(p, dir+"/"))) {
				set[a.Metadata.Name] = true
				break
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// Revert commits, on the branch head, the undoing of a commit: the same tree
// `git revert --no-edit` makes when it reverts cleanly. A line-level
// conflict with later changes is refused with a *ConflictError naming the
// files and lines; nothing is committed.
func (r *Repo) Revert(ctx context.Context, req RevertRequest) (Result, error) {
	reason, err := cleanReason(req.Reason)
	if err != nil {
		return Result{}, err
	}
	r.mu.Lock()
	err = r.refreshCache(ctx)
	var t *revertTarget
	if err == nil {
		t, err = r.resolveRevert(req)
	}
	r.mu.Unlock()
	if err != nil {
		return Result{}, err
	}
	sha := t.commit.Hash.String()
	return r.commit(ctx, func(s *snapshot) (*plan, error) {
		merged, err := r.revertTree(t, s.tree)
		if err != nil {
			return nil, err
		}
		apps, err := r.touchedApps(t, s)
		if err != nil {
			return nil, err
		}
		p := &plan{apps: apps, files: map[string]*entry{}}
		for _, path := range changedPaths(s.tree, merged) {
			if e, ok := merged[path]; ok {
				p.files[path] = &e
			} else {
				p.files[path] = nil
			}
		}
		trailers := []trailer{{TrailerAction, ActionRevert}, {TrailerRevertOf, sha}}
		for _, a := range apps {
			trailers = append(trailers, trailer{TrailerApp, a})
		}
		p.msg = message{
			Subject:  "Revert \"" + firstLine(t.commit.Message) + "\"",
			Body:     fmt.Sprintf("This reverts commit %s.\n\n%s", sha, reason),
			Trailers: trailers,
		}
		return p, nil
	})
}

// RevertDiff is what a revert would commit, without committing it.
type RevertDiff struct {
	// Files are the changed files, in path order.
	Files []FileDiff `json:"files"`
	// Head is the branch head the revert would go on top of.
	Head string `json:"head"`
	// Tree is the hash of the reverted root tree. Its objects are stored
	// in the repository (as a merge of a file stores its blob) but no
	// commit or ref names them: what renders it for the cluster part of a
	// preview reads it there (source.Repo.TreeSnapshot).
	Tree string `json:"tree"`
}

// RevertPreview shows, file by file, what reverting the commit on the
// current branch head would change, without committing, and stores the
// reverted tree for a render. A conflict is returned as a
// *ConflictError.
func (r *Repo) RevertPreview(ctx context.Context, req RevertRequest) (RevertDiff, error) {
	if err := ctx.Err(); err != nil {
		return RevertDiff{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.refreshCache(ctx); err != nil {
		return RevertDiff{}, err
	}
	t, err := r.resolveRevert(req)
	if err != nil {
		return RevertDiff{}, err
	}
	headHash, err := r.head()
	if err != nil {
		return RevertDiff{}, err
	}
	head, err := commitTree(r.git.Storer, headHash)
	if err != nil {
		return RevertDiff{}, err
	}
	merged, err := r.revertTree(t, head)
	if err != nil {
		return RevertDiff{}, err
	}
	tree, err := writeFlatTree(r.git.Storer, merged)
	if err != nil {
		return RevertDiff{}, fmt.Errorf("revert of %s: storing the reverted tree: %w", t.commit.Hash.String()[:12], err)
	}
	files, err := r.fileDiffs(head, merged)
	if err != nil {
		return RevertDiff{}, err
	}
	return RevertDiff{Files: files, Head: headHash.String(), Tree: tree.String()}, nil
}

// fileDiffs is, file by file, the change from tree head to merged, with
// Secret values masked.
func (r *Repo) fileDiffs(head, merged flatTree) ([]FileDiff, error) {
	var err error
	var out []FileDiff
	for _, p := range changedPaths(head, merged) {
		o, inOld := head[p]
		n, inNew := merged[p]
		fd := FileDiff{Path: p, Status: "modified"}
		var a, b []byte
		nameA, nameB := "a/"+p, "b/"+p
		if inOld {
			if a, err = readBlob(r.git.Storer, o.Hash); err != nil {
				return nil, err
			}
		} else {
			fd.Status, nameA = "added", "/dev/null"
		}
		if inNew {
			if b, err = readBlob(r.git.Storer, n.Hash); err != nil {
				return nil, err
			}
		} else {
			fd.Status, nameB = "deleted", "/dev/null"
		}
		if !isBinary(a) && !isBinary(b) {
			// A Secret's values in Git are credentials: the preview says
			// which keys change, never what they hold.
			a, b = []byte(redact.SecretYAML(string(a))), []byte(redact.SecretYAML(string(b)))
			fd.Diff = unifiedDiff(nameA, nameB, a, b)
		}
		out = append(out, fd)
	}
	return out, nil
}

func isBinary(b []byte) bool {
	for _, c := range b[:min(len(b), 8000)] {
		if c == 0 {
			return true
		}
	}
	return false
}

// IsConflict reports whether err is a refused merge (revert or re-apply).
func IsConflict(err error) bool {
	var ce *ConflictError
	return errors.As(err, &ce)
}
