package actions

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"

	"kdrift.dev/kdrift/internal/gitobj"
)

// CommitDiff is, file by file, what a commit changes against its first
// parent (against nothing for a root commit), with Secret values masked:
// what a proposed action changes, for the pull request's description.
func (r *Repo) CommitDiff(commit string) ([]FileDiff, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := gitobj.Commit(r.git.Storer, plumbing.NewHash(commit))
	if err != nil {
		return nil, fmt.Errorf("commit %q is not in the repository: %w", commit, err)
	}
	var parent plumbing.Hash
	if c.NumParents() > 0 {
		parent = c.ParentHashes[0]
	}
	before, err := commitTree(r.git.Storer, parent)
	if err != nil {
		return nil, err
	}
	after, err := commitTree(r.git.Storer, c.Hash)
	if err != nil {
		return nil, err
	}
	return r.fileDiffs(before, after)
}
