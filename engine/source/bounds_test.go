package source_test

import (
	"context"
	"errors"
	"io/fs"
	"runtime"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/gitobj"
	"kdrift.dev/kdrift/internal/gittest"
	"kdrift.dev/kdrift/internal/hostile"
)

// allocated is how many bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestHugeObjectsAreRefusedFromTheirHeaders: a 128 MiB settings file, a
// symbolic link whose target is 128 MiB and a HEAD commit with a 128 MiB
// message are each refused (or, for the commit, read to its header) from
// the object's header, allocating a small part of their size; the Apps
// are still read.
func TestHugeObjectsAreRefusedFromTheirHeaders(t *testing.T) {
	const big = 128 << 20
	ctx := context.Background()
	work := gittest.Init(t)
	work.Commit("base", hostile.BaseFiles)
	hostile.BigSettings(t, work, big)
	hostile.BigLink(t, work, "deploy/web/link.yaml", big)
	head := hostile.BigMessage(t, work, "web", big)
	r, err := source.Open(ctx, source.Options{Location: work.Dir})
	if err != nil {
		t.Fatal(err)
	}
	var rev source.Revision
	n := allocated(func() { rev, err = r.Head(ctx) })
	if err != nil || rev.Hash != head {
		t.Fatalf("Head = %+v, %v; want %s", rev, err, head)
	}
	if n > 16<<20 {
		t.Errorf("reading HEAD, a commit of %d bytes, allocated %d bytes", big, n)
	}
	snap, err := r.Snapshot(rev.Hash)
	if err != nil {
		t.Fatal(err)
	}
	n = allocated(func() { _, err = app.ReadSettings(snap) })
	if err == nil || !strings.Contains(err.Error(), "is 134217775 bytes, more than the 4194304 a settings file may have") {
		t.Errorf("ReadSettings = %v, want the settings file refused with both sizes", err)
	}
	if n > 16<<20 {
		t.Errorf("refusing the settings file allocated %d bytes", n)
	}
	n = allocated(func() { _, err = fs.ReadFile(snap, "deploy/web/link.yaml") })
	if !errors.Is(err, gitobj.ErrTooLarge) || !strings.Contains(err.Error(), "symbolic link deploy/web/link.yaml is 134217728 bytes, more than the 4096") {
		t.Errorf("reading through the link = %v, want it refused with both sizes", err)
	}
	if n > 16<<20 {
		t.Errorf("refusing the link allocated %d bytes", n)
	}
	if _, err := snap.ReadLink("deploy/web/link.yaml"); !errors.Is(err, gitobj.ErrTooLarge) {
		t.Errorf("ReadLink = %v, want ErrTooLarge", err)
	}
	apps := snap.Apps()
	if _, ok := apps.Find("web"); !ok {
		t.Errorf("App web is not read beside the hostile objects: %+v", apps)
	}
}
