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
		heap.Push(q, queued{c: c, err: err})
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
	seq uint64
}

// byTime is a heap of commits, newest committer time on top; of equal
// times the first queued, as git's priority queue does.
type byTime struct {
	q   []queued
	seq uint64
}

func (b *byTime) Len() int      { return len(b.q) }
func (b *byTime) Swap(i, j int) { b.q[i], b.q[j] = b.q[j], b.q[i] }
func (b *byTime) Less(i, j int) bool {
	ti, tj := b.q[i].c.Committer.When, b.q[j].c.Committer.When
	if !ti.Equal(tj) {
		return ti.After(tj)
	}
	return b.q[i].seq < b.q[j].seq
}
func (b *byTime) Push(x any) {
	e := x.(queued)
	e.seq = b.seq
	b.seq++
	b.q = append(b.q, e)
}
func (b *byTime) Pop() any {
	x := b.q[len(b.q)-1]
	b.q = b.q[:len(b.q)-1]
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
