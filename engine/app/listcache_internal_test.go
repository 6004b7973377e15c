package app

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"kdrift.dev/kdrift/engine/render"
)

// gitTree is a versionedTree over a map of files: objects are named by
// the SHA-256 of what they hold.
type gitTree struct{ fstest.MapFS }

func (m gitTree) EntryID(name string) (string, error) {
	fi, err := fs.Stat(m.MapFS, name)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return "dir", nil
	}
	data, err := fs.ReadFile(m.MapFS, name)
	sum := sha256.Sum256(data)
	return fmt.Sprintf("%v %x", fi.Mode(), sum), err
}

func (m gitTree) ListingID(name string) (string, error) {
	entries, err := fs.ReadDir(m.MapFS, name)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, e := range entries {
		id := "dir"
		if !e.IsDir() {
			if id, err = m.EntryID(path.Join(name, e.Name())); err != nil {
				return "", err
			}
		}
		fmt.Fprintf(&b, "%s\x00%s\x00", e.Name(), id)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:]), nil
}

func (m gitTree) TreeHash(dir string) (string, error) {
	if fi, err := fs.Stat(m.MapFS, dir); err != nil || !fi.IsDir() {
		return "", &fs.PathError{Op: "treehash", Path: dir, Err: fs.ErrNotExist}
	}
	h := sha256.New()
	err := fs.WalkDir(m.MapFS, dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := fs.ReadFile(m.MapFS, p)
		fmt.Fprintf(h, "%s\x00%d\x00%s", p, len(data), data)
		return err
	})
	return hex.EncodeToString(h.Sum(nil)), err
}

// with is a copy of m with files changed (an empty value removes one).
func (m gitTree) with(files map[string]string) gitTree {
	out := gitTree{fstest.MapFS{}}
	for k, v := range m.MapFS {
		out.MapFS[k] = v
	}
	for k, v := range files {
		if v == "" {
			delete(out.MapFS, k)
			continue
		}
		out.MapFS[k] = &fstest.MapFile{Data: []byte(v)}
	}
	return out
}

// TestAppListCacheReuse: the app list is taken from the cache (by a new
// process: a new ChildCache on the same folder) only when every read
// that found it shows the same; otherwise discovery runs again, and
// either way the list is the one discovery without a cache finds.
func TestAppListCacheReuse(t *testing.T) {
	if render.BinaryID() == "" {
		t.Fatal("the test binary has no identity (os.Executable could not be read and hashed), so the app list cache would stay in memory and this test would prove nothing")
	}
	kdriftApp := func(name, spec string) string {
		return "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: " + name + "\nspec:\n" + spec + "  destination:\n    namespace: x\n"
	}
	cm := func(v string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: " + v + "\n"
	}
	base := gitTree{fstest.MapFS{}}.with(map[string]string{
		// App a's values file is outside .kdrift and outside its folder:
		// Validate reads it.
		".kdrift/a.yaml":      kdriftApp("a", "  path: charts/a\n  helm:\n    valueFiles: [/shared/values.yaml]\n"),
		".kdrift/b.yaml":      kdriftApp("b", "  path: apps/b\n"),
		"charts/a/Chart.yaml": "apiVersion: v2\nname: a\nversion: 0.1.0\n",
		"shared/values.yaml":  "replicas: 1\n",
		"apps/b/cm.yaml":      cm("v0"),
		"apps/c/cm.yaml":      cm("v0"),
	})
	for _, tc := range []struct {
		name   string
		change map[string]string
		reused bool
	}{
		{"the same tree", nil, true},
		{"another app's manifests change", map[string]string{"apps/b/cm.yaml": cm("v1")}, true},
		{"a folder no App names gains a file", map[string]string{"apps/c/more.yaml": cm("v2")}, true},
		{"a values file Validate reads is removed", map[string]string{"shared/values.yaml": ""}, false},
		{"a values file Validate reads changes", map[string]string{"shared/values.yaml": "replicas: 2\n"}, false},
		{"an App file changes", map[string]string{".kdrift/b.yaml": kdriftApp("b", "  path: apps/c\n")}, false},
		{"an App's folder is removed", map[string]string{"apps/b/cm.yaml": ""}, false},
		{"a marker appears in a counted folder", map[string]string{"apps/b/app.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: d\nspec:\n  source:\n    repoURL: https://example.com/x\n    path: apps/c\n"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := base.with(tc.change)
			c, got := rediscover(t, base, tree)
			if c.listHit != tc.reused {
				t.Errorf("list taken from the cache: %v, want %v", c.listHit, tc.reused)
			}
			if want := Discover(tree, DiscoverOptions{}); !reflect.DeepEqual(got, want) {
				t.Errorf("list:\n%+v\nwant (no cache):\n%+v", got, want)
			}
		})
	}
}

// rediscover discovers base with a cache kept in a folder, then tree
// with a new cache on that folder (a later process), and returns that
// cache and what it found.
func rediscover(t *testing.T, base, tree gitTree) (*ChildCache, LoadResult) {
	t.Helper()
	dir := t.TempDir()
	first := NewChildCache(dir, "/repo", "https://example.com/x")
	Discover(base, DiscoverOptions{Children: first})
	first.Save()
	c := NewChildCache(dir, "/repo", "https://example.com/x")
	return c, Discover(tree, DiscoverOptions{Children: c})
}

// TestAppListCacheCorruptFile: a list file that is not one (garbage,
// truncated, another format, a hostile list) is ignored: discovery runs
// again and finds what it finds without a cache.
func TestAppListCacheCorruptFile(t *testing.T) {
	if render.BinaryID() == "" {
		t.Fatal("the test binary has no identity (os.Executable could not be read and hashed), so the app list cache would stay in memory and this test would prove nothing")
	}
	tree := gitTree{fstest.MapFS{}}.with(map[string]string{
		".kdrift/a.yaml": "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: a\nspec:\n  path: apps/a\n  destination:\n    namespace: x\n",
		"apps/a/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
	})
	want := Discover(tree, DiscoverOptions{})
	dir := t.TempDir()
	c := NewChildCache(dir, "/repo", "r")
	Discover(tree, DiscoverOptions{Children: c})
	c.Save()
	good, err := os.ReadFile(c.listPath())
	if err != nil {
		t.Fatal(err)
	}
	root, _ := tree.TreeHash(".")
	hostile := func(result string) string {
		return fmt.Sprintf(`{"format":%q,"scope":%q,"lists":[{"root":%q,"opts":%q,"deps":{},"result":%s}]}`, listFormat, c.scope, root, listOptsKey(DiscoverOptions{}), result)
	}
	for name, data := range map[string]string{
		"garbage":          "\x00\xff not json",
		"truncated":        string(good[:len(good)/2]),
		"another format":   strings.Replace(string(good), listFormat, "kdrift-apps/0", 1),
		"an empty error":   hostile(`{"invalid":[{"name":"a","err":{}}]}`),
		"a wrong type":     hostile(`{"apps":[{"app":{"metadata":{"name":7}}}]}`),
		"a result not one": hostile(`"x"`),
		"deep nesting":     hostile(strings.Repeat(`{"join":[`, 5000)),
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(c.listPath())), []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			c := NewChildCache(dir, "/repo", "r")
			got := Discover(tree, DiscoverOptions{Children: c})
			if c.listHit {
				t.Error("a list taken from a corrupt file")
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("list:\n%+v\nwant (no cache):\n%+v", got, want)
			}
		})
	}
}

// TestKeptAppFiles: when the app list must be found again, an App file
// whose blob was parsed before without error is not parsed again (a new
// process: a new ChildCache on the same folder), a changed one is, one
// with errors is never kept, and the list is always the one discovery
// without a cache finds, errors and their lines included.
func TestKeptAppFiles(t *testing.T) {
	if render.BinaryID() == "" {
		t.Fatal("the test binary has no identity (os.Executable could not be read and hashed), so the cache would stay in memory and this test would prove nothing")
	}
	kdriftApp := func(name, path string) string {
		return "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: " + name + "\n  labels: {team: x}\nspec:\n  path: " + path + "\n  destination:\n    namespace: x\n"
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"
	base := gitTree{fstest.MapFS{}}.with(map[string]string{
		".kdrift/a.yaml":      kdriftApp("a", "apps/a") + "---\n" + kdriftApp("a2", "apps/a"),
		".kdrift/b.yaml":      kdriftApp("b", "apps/b"),
		".kdrift/broken.yaml": "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: broken\nspec:\n  path: [\n",
		"apps/a/cm.yaml":      cm,
		"apps/b/cm.yaml":      cm,
		"apps/c/cm.yaml":      cm,
	})
	for _, tc := range []struct {
		name   string
		change map[string]string
		hits   int
	}{
		// The list is found again (a folder an App names is gone), with
		// the three good documents' two files kept.
		{"an App's folder is removed", map[string]string{"apps/b/cm.yaml": ""}, 2},
		{"an App file changes", map[string]string{".kdrift/b.yaml": kdriftApp("b", "apps/c")}, 1},
		// A kept file's App is now declared twice: the error names the
		// line in the kept file, which is read for it.
		{"a name declared again", map[string]string{".kdrift/c.yaml": kdriftApp("b", "apps/c")}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := base.with(tc.change)
			c, got := rediscover(t, base, tree)
			if c.listHit || c.appFileHits != tc.hits {
				t.Errorf("list taken whole %v, App files kept %d; want false and %d", c.listHit, c.appFileHits, tc.hits)
			}
			want := Discover(tree, DiscoverOptions{})
			if !reflect.DeepEqual(got, want) {
				t.Errorf("list:\n%+v\nwant (no cache):\n%+v", got, want)
			}
			if fmt.Sprint(got.Invalid) != fmt.Sprint(want.Invalid) || len(want.Invalid) == 0 {
				t.Errorf("errors:\n%v\nwant:\n%v", got.Invalid, want.Invalid)
			}
		})
	}
}
