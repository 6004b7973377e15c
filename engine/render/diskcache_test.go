package render_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/internal/sopstest"
)

// diskRenderer is a new Renderer (a new process, as far as caching goes)
// keeping renders in dir for repository repo.
func diskRenderer(dir, repo string) *render.Renderer {
	r := render.NewRenderer()
	r.SetDiskCache(dir, repo)
	return r
}

// cacheFiles lists the entries in dir.
func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestDiskCacheBetweenRenderers: a second Renderer on the same cache
// folder answers from disk with exactly what the first rendered; a change
// to any folder the render read (here the base only) renders again, and
// so does another repository, another App path or other budgets.
func TestDiskCacheBetweenRenderers(t *testing.T) {
	g, snap := repo(t, overlayFiles)
	dir := filepath.Join(t.TempDir(), "render")
	first := diskRenderer(dir, "repo-a")
	want, err := first.Render(snap(), "deploy/overlays/prod")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(cacheFiles(t, dir)); n != 1 {
		t.Fatalf("%d cache files after one render, want 1", n)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("cache folder mode %v (%v), want 0700", st.Mode().Perm(), err)
	}
	if st, err := os.Stat(cacheFiles(t, dir)[0]); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("cache file mode %v (%v), want 0600", st.Mode().Perm(), err)
	}

	second := diskRenderer(dir, "repo-a")
	got, err := second.Render(snap(), "deploy/overlays/prod")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("from disk: %s, want %s", ids(got), ids(want))
	}
	if st := second.Stats(); st.Builds != 0 || st.DiskHits != 1 {
		t.Fatalf("stats %+v, want the render answered from disk", st)
	}
	// The disk entry is kept in memory too, and Inputs knows its folders.
	if _, err := second.Render(snap(), "deploy/overlays/prod"); err != nil {
		t.Fatal(err)
	}
	if st := second.Stats(); st.Hits != 1 || st.DiskHits != 1 {
		t.Fatalf("stats %+v, want the second render from memory", st)
	}
	if in := second.Inputs("deploy/overlays/prod"); !reflect.DeepEqual(in, []string{"deploy/base", "deploy/overlays/prod"}) {
		t.Fatalf("Inputs = %v", in)
	}

	// Another repository, another path: no hit.
	other := diskRenderer(dir, "repo-b")
	if _, err := other.Render(snap(), "deploy/overlays/prod"); err != nil {
		t.Fatal(err)
	}
	if st := other.Stats(); st.Builds != 1 || st.DiskHits != 0 {
		t.Fatalf("another repository: stats %+v, want a build", st)
	}
	tight := diskRenderer(dir, "repo-a")
	tight.Options.MaxDepth = 150
	if _, err := tight.Render(snap(), "deploy/overlays/prod"); err != nil {
		t.Fatal(err)
	}
	if st := tight.Stats(); st.Builds != 1 {
		t.Fatalf("other budgets: stats %+v, want a build", st)
	}

	// Only the base changes: the overlay folder's hash is the same, the
	// cached render is not used.
	g.Commit("bump image", map[string]string{"deploy/base/deployment.yaml": strings.Replace(overlayFiles["deploy/base/deployment.yaml"], "nginx:1.27", "nginx:1.28", 1)})
	third := diskRenderer(dir, "repo-a")
	objs, err := third.Render(snap(), "deploy/overlays/prod")
	if err != nil {
		t.Fatal(err)
	}
	if st := third.Stats(); st.Builds != 1 || st.DiskHits != 0 {
		t.Fatalf("after the base changed: stats %+v, want a build", st)
	}
	if !strings.Contains(ids(objs), "Deployment/prod/prod-web") || !strings.Contains(string(mustJSON(t, objs[2])), "nginx:1.28") {
		t.Fatalf("render after the base changed: %s", mustJSON(t, objs[2]))
	}
}

func mustJSON(t *testing.T, o interface{ MarshalJSON() ([]byte, error) }) []byte {
	t.Helper()
	js, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// TestDiskCacheKeepsNoSecrets: a render holding a Secret, decrypted SOPS
// values or SOPS values no key opened is never written to disk.
func TestDiskCacheKeepsNoSecrets(t *testing.T) {
	id := sopstest.Identity(t)
	files := sopstest.AppFiles(t, "apps/secure", id)
	files["apps/plain-secret/s.yaml"] = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: hunter2}\n"
	files["apps/cm/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n"
	_, snap := repo(t, files)
	dir := t.TempDir()
	r := diskRenderer(dir, "repo")
	for _, app := range []string{"apps/secure", "apps/plain-secret"} {
		if _, err := r.Render(snap(), app); err != nil {
			t.Fatal(err)
		}
		if n := len(cacheFiles(t, dir)); n != 0 {
			t.Fatalf("%s: %d cache files written", app, n)
		}
	}
	if _, err := r.Render(snap(), "apps/cm"); err != nil {
		t.Fatal(err)
	}
	if n := len(cacheFiles(t, dir)); n != 1 {
		t.Fatalf("a ConfigMap's render: %d cache files, want 1", n)
	}
}

// TestDiskCacheDamagedFile: a cache file that is not what kdrift wrote
// (truncated, foreign) is a miss: the render runs and rewrites it.
func TestDiskCacheDamagedFile(t *testing.T) {
	_, snap := repo(t, overlayFiles)
	dir := t.TempDir()
	want, err := diskRenderer(dir, "repo").Render(snap(), "deploy/overlays/prod")
	if err != nil {
		t.Fatal(err)
	}
	files := cacheFiles(t, dir)
	for _, damage := range []string{"", "{", `{"format":"kdrift-render/1","key":"deploy/overlays/prod","inputs":{},"objects":[{"kind":1}]}`, strings.Repeat("x", 100)} {
		if err := os.WriteFile(files[0], []byte(damage), 0o600); err != nil {
			t.Fatal(err)
		}
		r := diskRenderer(dir, "repo")
		got, err := r.Render(snap(), "deploy/overlays/prod")
		if err != nil {
			t.Fatalf("damaged cache %q: %v", damage, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("damaged cache %q: rendered %s, want %s", damage, ids(got), ids(want))
		}
		if st := r.Stats(); st.Builds != 1 || st.DiskHits != 0 {
			t.Fatalf("damaged cache %q: stats %+v, want a build", damage, st)
		}
	}
	r := diskRenderer(dir, "repo")
	if _, err := r.Render(snap(), "deploy/overlays/prod"); err != nil || r.Stats().DiskHits != 1 {
		t.Fatalf("rewritten entry not used: %+v, %v", r.Stats(), err)
	}
}

// TestDiskCacheUnwritable: a cache folder that cannot be made costs
// nothing but the cache.
func TestDiskCacheUnwritable(t *testing.T) {
	_, snap := repo(t, overlayFiles)
	file := filepath.Join(t.TempDir(), "not-a-folder")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := diskRenderer(filepath.Join(file, "render"), "repo")
	if _, err := r.Render(snap(), "deploy/overlays/prod"); err != nil {
		t.Fatal(err)
	}
}

// TestDiskCacheTrustsOnlyPrivateFiles: a kept render is desired state a
// sync would apply, so a file others may write, or a link, is not used.
func TestDiskCacheTrustsOnlyPrivateFiles(t *testing.T) {
	_, snap := repo(t, overlayFiles)
	dir := t.TempDir()
	if _, err := diskRenderer(dir, "repo").Render(snap(), "deploy/overlays/prod"); err != nil {
		t.Fatal(err)
	}
	file := cacheFiles(t, dir)[0]
	if err := os.Chmod(file, 0o666); err != nil {
		t.Fatal(err)
	}
	r := diskRenderer(dir, "repo")
	if _, err := r.Render(snap(), "deploy/overlays/prod"); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.DiskHits != 0 || st.Builds != 1 {
		t.Fatalf("a world-writable cache file was used: %+v", st)
	}
	// The render wrote a private file again; a link to it is not followed.
	elsewhere := filepath.Join(t.TempDir(), "kept.json")
	if err := os.Rename(file, elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, file); err != nil {
		t.Fatal(err)
	}
	r = diskRenderer(dir, "repo")
	if _, err := r.Render(snap(), "deploy/overlays/prod"); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.DiskHits != 0 || st.Builds != 1 {
		t.Fatalf("a linked cache file was used: %+v", st)
	}
}
