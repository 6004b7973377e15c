package gitobj

import (
	"container/heap"
	"errors"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Walk calls fn for each commit reachable from from, newest committer
// time first (git log's order, and go-git's LogOrderCommitterTime), each
// read with Commit: one past MaxCommitBytes comes with its header only
// and its *TooLargeError, and the walk goes on to its parents. fn
// returning storer.ErrStop ends the walk without an error.
func Walk(s storer.EncodedObjectStorer, from plumbing.Hash, fn func(c *object.Commit, tooLarge error) error) error {
	seen := map[plumbing.Hash]bool{from: true}
	q := &byTime{}
	push := func(h plumbing.Hash) error {
		c, err := Commit(s, h)
		var tl *TooLargeError
		if err != nil && !errors.As(err, &tl) {
			return err
		}
		heap.Push(q, queued{c, err})
		return nil
	}
	if err := push(from); err != nil {
		return err
	}
	for q.Len() > 0 {
		e := heap.Pop(q).(queued)
		if err := fn(e.c, e.err); err != nil {
			if errors.Is(err, storer.ErrStop) {
				return nil
			}
			return err
		}
		for _, p := range e.c.ParentHashes {
			if seen[p] {
				continue
			}
			seen[p] = true
			if err := push(p); err != nil {
				return err
			}
		}
	}
	return nil
}

type queued struct {
	c   *object.Commit
	err error
}

// byTime is a heap of commits, newest committer time on top.
type byTime []queued

func (b byTime) Len() int           { return len(b) }
func (b byTime) Less(i, j int) bool { return b[i].c.Committer.When.After(b[j].c.Committer.When) }
func (b byTime) Swap(i, j int)      { b[i], b[j] = b[j], b[i] }
func (b *byTime) Push(x any)        { *b = append(*b, x.(queued)) }
func (b *byTime) Pop() any {
	old := *b
	x := old[len(old)-1]
	*b = old[:len(old)-1]
	return x
}

// IsAncestor says whether commit older is newer or one of its ancestors,
// walking from newer with Walk (so bounded as Walk is).
func IsAncestor(s storer.EncodedObjectStorer, older, newer plumbing.Hash) (bool, error) {
	found := false
	err := Walk(s, newer, func(c *object.Commit, _ error) error {
		if c.Hash == older {
			found = true
			return storer.ErrStop
		}
		return nil
	})
	return found, err
}
