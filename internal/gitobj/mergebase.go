package gitobj

import (
	"container/heap"
	"errors"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Paint flags of MergeBase's walk, as git's merge-base names them.
const (
	fromA uint8 = 1 << iota
	fromB
	stale
	result
)

// MergeBase is the best common ancestors of commits a and b, as
// `git merge-base --all a b` gives them: common ancestors none of which
// is an ancestor of another, newest committer time first; none when a
// and b share no history. Every commit is read with Commit (its header
// only past MaxCommitBytes), never a message past the bound: go-git's
// object.Commit.MergeBase decodes each commit whole.
func MergeBase(s storer.EncodedObjectStorer, a, b plumbing.Hash) ([]plumbing.Hash, error) {
	if a == b {
		if _, err := headerOnly(s, a); err != nil {
			return nil, err
		}
		return []plumbing.Hash{a}, nil
	}
	cands, err := paint(s, a, []plumbing.Hash{b})
	if err != nil || len(cands) < 2 {
		return cands, err
	}
	return independent(s, cands)
}

// headerOnly reads commit h with Commit, an over-bound commit's header
// being all a walk of parents needs.
func headerOnly(s storer.EncodedObjectStorer, h plumbing.Hash) (*object.Commit, error) {
	c, err := Commit(s, h)
	var tl *TooLargeError
	if errors.As(err, &tl) {
		return c, nil
	}
	return c, err
}

// paint walks from one (painted fromA) and others (painted fromB),
// newest committer time first, and returns the commits reached from both
// whose descendants on the walk were not (git's paint_down_to_common),
// in the order met: newest first.
func paint(s storer.EncodedObjectStorer, one plumbing.Hash, others []plumbing.Hash) ([]plumbing.Hash, error) {
	flags := map[plumbing.Hash]uint8{}
	q := &byTime{}
	push := func(h plumbing.Hash, f uint8) error {
		c, err := headerOnly(s, h)
		if err != nil {
			return err
		}
		flags[h] |= f
		heap.Push(q, queued{c: c})
		return nil
	}
	if err := push(one, fromA); err != nil {
		return nil, err
	}
	for _, o := range others {
		if err := push(o, fromB); err != nil {
			return nil, err
		}
	}
	var found []plumbing.Hash
	// Once every commit queued is stale, no better base is below them.
	for queueHasFresh(q, flags) {
		c := heap.Pop(q).(queued).c
		f := flags[c.Hash] & (fromA | fromB | stale)
		if f == fromA|fromB {
			if flags[c.Hash]&result == 0 {
				flags[c.Hash] |= result
				found = append(found, c.Hash)
			}
			f |= stale
		}
		for _, p := range c.ParentHashes {
			if flags[p]&f == f {
				continue
			}
			if err := push(p, f); err != nil {
				return nil, err
			}
		}
	}
	var out []plumbing.Hash
	for _, h := range found {
		if flags[h]&stale == 0 {
			out = append(out, h)
		}
	}
	return out, nil
}

// queueHasFresh says a commit on q is not stale.
func queueHasFresh(q *byTime, flags map[plumbing.Hash]uint8) bool {
	for _, e := range q.q {
		if flags[e.c.Hash]&stale == 0 {
			return true
		}
	}
	return false
}

// independent drops from cands every commit that is an ancestor of
// another of them (git's remove_redundant): a candidate that the walk
// from the others paints is reachable from one of them.
func independent(s storer.EncodedObjectStorer, cands []plumbing.Hash) ([]plumbing.Hash, error) {
	redundant := map[plumbing.Hash]bool{}
	for i, c := range cands {
		if redundant[c] {
			continue
		}
		var others []plumbing.Hash
		for j, o := range cands {
			if j != i && !redundant[o] {
				others = append(others, o)
			}
		}
		for _, o := range others {
			ok, err := IsAncestor(s, c, o)
			if err != nil {
				return nil, err
			}
			if ok {
				redundant[c] = true
				break
			}
		}
	}
	var out []plumbing.Hash
	for _, c := range cands {
		if !redundant[c] {
			out = append(out, c)
		}
	}
	return out, nil
}
