package live_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/internal/enginetest"
)

var (
	deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	widgetGVK     = schema.GroupVersionKind{Group: "cache-probe.kdrift.example", Version: "v1", Kind: "CacheProbe"}
)

// diskClientSet builds a fresh client set (a new process, as far as the
// cache is concerned) keeping discovery in dir.
func diskClientSet(t *testing.T, dir string) *live.ClientSet {
	t.Helper()
	cs, err := live.NewClients(enginetest.Kubeconfig(), live.Options{DiscoveryCacheDir: dir}).For("")
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// cacheFile is the one cache file in dir.
func cacheFile(t *testing.T, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) != 1 {
		t.Fatalf("want one cache file in %s, got %v (%v)", dir, files, err)
	}
	return files[0]
}

// withWidget is the cache file's document with a kind the apiserver does
// not serve: a client set that maps it read the file.
func withWidget(t *testing.T, raw []byte, resource string) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	doc["groups"] = append(doc["groups"].([]any), map[string]any{"name": "cache-probe.kdrift.example",
		"versions":         []any{map[string]any{"groupVersion": "cache-probe.kdrift.example/v1", "version": "v1"}},
		"preferredVersion": map[string]any{"groupVersion": "cache-probe.kdrift.example/v1", "version": "v1"}})
	doc["resources"] = append(doc["resources"].([]any), map[string]any{"groupVersion": "cache-probe.kdrift.example/v1",
		"resources": []any{map[string]any{"name": resource, "singularName": "cacheprobe", "namespaced": true, "kind": "CacheProbe", "verbs": []any{"get", "list"}}}})
	return doc
}

func writeJSON(t *testing.T, path string, doc any, mode os.FileMode) {
	t.Helper()
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// TestDiscoveryCacheOnDisk: discovery is written to a private file per
// apiserver and the next client set reads it instead of asking; a file
// that is corrupt, hostile, stale, of another server, not private or not
// a regular file is ignored (the apiserver is asked and the file
// rewritten); a kind the file lacks is still found on the apiserver.
func TestDiscoveryCacheOnDisk(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "discovery")
	if _, err := diskClientSet(t, dir).Mapping(ctx, deploymentGVK); err != nil {
		t.Fatal(err)
	}
	path := cacheFile(t, dir)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cache file %s: %v, mode %v; want 0600", path, err, fi.Mode())
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	// Read from the file: the apiserver serves no CacheProbe.
	writeJSON(t, path, withWidget(t, good, "cacheprobes"), 0o600)
	m, err := diskClientSet(t, dir).Mapping(ctx, widgetGVK)
	if err != nil || m.Resource.Resource != "cacheprobes" {
		t.Fatalf("the cache file was not used: %v %v", m, err)
	}
	// A kind the file lacks (a CRD installed since) is asked for.
	noRBAC := withWidget(t, good, "cacheprobes")
	var groups, resources []any
	for _, g := range noRBAC["groups"].([]any) {
		if g.(map[string]any)["name"] != "rbac.authorization.k8s.io" {
			groups = append(groups, g)
		}
	}
	for _, r := range noRBAC["resources"].([]any) {
		if !strings.HasPrefix(r.(map[string]any)["groupVersion"].(string), "rbac.authorization.k8s.io/") {
			resources = append(resources, r)
		}
	}
	noRBAC["groups"], noRBAC["resources"] = groups, resources
	writeJSON(t, path, noRBAC, 0o600)
	if _, err := diskClientSet(t, dir).Mapping(ctx, schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}); err != nil {
		t.Fatalf("a kind the cache lacks: %v", err)
	}

	stale := withWidget(t, good, "cacheprobes")
	stale["written"] = time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	other := withWidget(t, good, "cacheprobes")
	other["server"] = "https://elsewhere.example:6443"
	elsewhere := filepath.Join(t.TempDir(), "elsewhere.json")
	for _, c := range []struct {
		name  string
		write func()
	}{
		{"corrupt", func() { os.WriteFile(path, []byte(`{"version": 1, "groups": [`), 0o600) }},
		{"request path in a resource name", func() { writeJSON(t, path, withWidget(t, good, "../../api/v1/secrets"), 0o600) }},
		{"stale", func() { writeJSON(t, path, stale, 0o600) }},
		{"another server", func() { writeJSON(t, path, other, 0o600) }},
		{"others may write it", func() { writeJSON(t, path, withWidget(t, good, "cacheprobes"), 0o666) }},
		{"symbolic link", func() {
			writeJSON(t, elsewhere, withWidget(t, good, "cacheprobes"), 0o600)
			os.Remove(path)
			if err := os.Symlink(elsewhere, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"too large", func() {
			raw, _ := json.Marshal(withWidget(t, good, "cacheprobes"))
			os.WriteFile(path, append(raw, []byte(strings.Repeat(" ", 17<<20))...), 0o600)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.write()
			cs := diskClientSet(t, dir)
			if m, err := cs.Mapping(ctx, widgetGVK); err == nil {
				t.Fatalf("the file was trusted: CacheProbe maps to %s", m.Resource)
			}
			if _, err := cs.Mapping(ctx, deploymentGVK); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(path)
			raw, rerr := os.ReadFile(path)
			if err != nil || rerr != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 || strings.Contains(string(raw), "CacheProbe") {
				t.Fatalf("the file was not rewritten from the apiserver: %v %v %v", err, rerr, fi.Mode())
			}
		})
	}
}
