package gitobj_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"kdrift.dev/kdrift/internal/gitfs"
	"kdrift.dev/kdrift/internal/gitobj"
	"kdrift.dev/kdrift/internal/gittest"
	"kdrift.dev/kdrift/internal/hostile"
)

// big is the size of the hostile objects: past every bound, small in .git.
const big = 64 << 20

// allocated is how many bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

func open(t *testing.T, r *gittest.Repo) *git.Repository {
	t.Helper()
	g, err := gitfs.PlainOpen(r.Dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestOverBoundObjectsAreRefusedUnread: a 64 MiB blob and a commit with
// a 64 MiB message, loose and then packed, are refused from their
// headers, allocating a small part of their size; the commit's header
// still gives its tree and parent, and a walk goes on past it.
func TestOverBoundObjectsAreRefusedUnread(t *testing.T) {
	r := gittest.Init(t)
	first := r.Commit("base", hostile.BaseFiles)
	hostile.BigSettings(t, r, big)
	blob := plumbing.NewHash(r.Git("rev-parse", "HEAD:.kdrift/settings.yaml"))
	tree := r.Git("rev-parse", "HEAD^{tree}")
	parent := r.Git("rev-parse", "HEAD")
	huge := plumbing.NewHash(hostile.BigMessage(t, r, "web", big))
	top := plumbing.NewHash(r.Commit("after", map[string]string{"x": "y"}))
	for _, packed := range []bool{false, true} {
		if packed {
			r.Git("repack", "-a", "-d", "-q")
		}
		g := open(t, r)
		var err error
		n := allocated(func() { _, err = gitobj.Blob(g.Storer, blob, 4<<20, "settings") })
		var tl *gitobj.TooLargeError
		if !errors.As(err, &tl) || tl.Size != big+int64(len("apiVersion: kdrift.dev/v1alpha1\nkind: Settings\n")) || tl.Max != 4<<20 {
			t.Fatalf("packed %v: Blob = %v, want a TooLargeError with both sizes", packed, err)
		}
		if !strings.Contains(err.Error(), "settings is 67108911 bytes, more than the 4194304") {
			t.Errorf("error %q does not name the object and both sizes", err)
		}
		if n > 8<<20 {
			t.Errorf("packed %v: refusing the blob allocated %d bytes", packed, n)
		}
		var c *object.Commit
		n = allocated(func() { c, err = gitobj.Commit(g.Storer, huge) })
		if !errors.As(err, &tl) || c == nil {
			t.Fatalf("packed %v: Commit = %v, %v, want the header and a TooLargeError", packed, c, err)
		}
		if n > 8<<20 {
			t.Errorf("packed %v: reading the commit's header allocated %d bytes", packed, n)
		}
		if c.Hash != huge || c.TreeHash.String() != tree || len(c.ParentHashes) != 1 || c.ParentHashes[0].String() != parent || c.Message != "" {
			t.Errorf("packed %v: header-only commit = %s tree %s parents %v message %d bytes", packed, c.Hash, c.TreeHash, c.ParentHashes, len(c.Message))
		}
		var seen []string
		n = allocated(func() {
			err = gitobj.Walk(g.Storer, top, func(c *object.Commit, tooLarge error) error {
				seen = append(seen, c.Hash.String()[:7])
				if (c.Hash == huge) != (tooLarge != nil) {
					t.Errorf("commit %s: tooLarge %v", c.Hash, tooLarge)
				}
				return nil
			})
		})
		if err != nil || len(seen) != 4 || seen[3] != first[:7] {
			t.Errorf("packed %v: Walk saw %v, %v; want 4 commits down to %s", packed, seen, err, first[:7])
		}
		if n > 8<<20 {
			t.Errorf("packed %v: walking past the commit allocated %d bytes", packed, n)
		}
		if ok, err := gitobj.IsAncestor(g.Storer, plumbing.NewHash(first), top); !ok || err != nil {
			t.Errorf("IsAncestor(first, top) = %v, %v", ok, err)
		}
	}
}

// TestBlobWithinBound reads a blob under its bound whole, and refuses one
// a byte over.
func TestBlobWithinBound(t *testing.T) {
	r := gittest.Init(t)
	r.Commit("base", map[string]string{"f": "12345"})
	g := open(t, r)
	h := plumbing.NewHash(r.Git("rev-parse", "HEAD:f"))
	if data, err := gitobj.Blob(g.Storer, h, 5, "f"); err != nil || string(data) != "12345" {
		t.Errorf("Blob at its bound = %q, %v", data, err)
	}
	if _, err := gitobj.Blob(g.Storer, h, 4, "f"); !errors.Is(err, gitobj.ErrTooLarge) {
		t.Errorf("Blob a byte over = %v, want ErrTooLarge", err)
	}
}
