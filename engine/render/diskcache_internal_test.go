package render

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestDiskCachePrune: files unused for two weeks and temporary files a
// killed process left go first, then the least recently used past the
// count or size bound; a prune ran less than an hour ago is not run again.
func TestDiskCachePrune(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	put := func(name string, size int, age time.Duration) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	put("stale.json", 10, 15*24*time.Hour)
	put(".tmp-123", 10, 2*time.Hour)
	put(".tmp-new", 10, time.Minute) // a write in progress
	put("a.json", 100, 5*time.Hour)
	put("b.json", 100, 4*time.Hour)
	put("c.json", 100, 3*time.Hour)
	put("d.json", 100, 2*time.Hour)
	put("e.json", 100, time.Hour)
	put("notes.txt", 10, 30*24*time.Hour) // not the cache's

	d := &diskCache{dir: dir}
	d.prune(now, 4, 350)
	left := func() []string {
		var names []string
		des, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, de := range des {
			names = append(names, de.Name())
		}
		return names
	}
	// 4 files bound: a goes; 350 bytes bound: b goes too.
	if got, want := left(), []string{".pruned", ".tmp-new", "c.json", "d.json", "e.json", "notes.txt"}; !slices.Equal(got, want) {
		t.Fatalf("after prune: %v, want %v", got, want)
	}
	put("f.json", 100, 0)
	d.prune(now, 1, 100)
	if !slices.Contains(left(), "c.json") {
		t.Fatal("a second prune within the hour ran")
	}
}
