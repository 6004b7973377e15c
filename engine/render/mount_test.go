package render_test

import (
	"context"
	"io/fs"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/render"
)

// TestMountRendersAChartFromMemory: a chart served from memory under a
// folder no repository has renders as the same chart kept in the
// repository (its vendored dependency included), with values files from
// the repository root; a render is cached for the mounted content's id
// only, and the mount hides the tree's own files under its folder.
func TestMountRendersAChartFromMemory(t *testing.T) {
	files := chartFiles(t, "web", "deploy/web")
	files["env/prod.yaml"] = "replicaCount: 5\n"
	files["@charts/x/hidden.yaml"] = "kind: ConfigMap\n"
	_, snap := repo(t, files)
	s := snap()
	chart := map[string][]byte{}
	if err := fs.WalkDir(s, "deploy/web", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(s, p)
		chart[strings.TrimPrefix(p, "deploy/web/")] = data
		return err
	}); err != nil {
		t.Fatal(err)
	}
	h := &render.Helm{ReleaseName: "shop", Namespace: "prod", ValueFiles: []string{"/env/prod.yaml"}}
	r := render.NewRenderer()
	want, err := r.RenderApp(context.Background(), s, "deploy/web", h)
	if err != nil {
		t.Fatal(err)
	}
	const dir = "@charts/x"
	mounted := render.Mount(s, dir, chart, "sha256:aaaa")
	if _, err := fs.Stat(mounted, dir+"/hidden.yaml"); err == nil {
		t.Fatal("the tree's own file under the mount shows through")
	}
	if !render.IsChart(mounted, dir) {
		t.Fatal("the mounted folder is not a chart")
	}
	got, err := r.RenderApp(context.Background(), mounted, dir, h)
	if err != nil {
		t.Fatal(err)
	}
	if ids(got) != ids(want) || len(got) == 0 {
		t.Fatalf("mounted chart renders %s, the repository's %s", ids(got), ids(want))
	}
	dep := find(got, "Deployment", "shop-web")
	if n := dep.Object["spec"].(map[string]any)["replicas"]; n != int64(5) {
		t.Fatalf("values from the repository root: replicas %v", n)
	}
	// Other content under the same folder is another render.
	builds := r.Stats().Builds
	if _, err := r.RenderApp(context.Background(), mounted, dir, h); err != nil || r.Stats().Builds != builds {
		t.Fatalf("the same content renders again: %v (builds %d -> %d)", err, builds, r.Stats().Builds)
	}
	chart["values.yaml"] = append(chart["values.yaml"], []byte("\nreplicaCount: 7\n")...)
	other := render.Mount(s, dir, chart, "sha256:bbbb")
	if _, err := r.RenderApp(context.Background(), other, dir, h); err != nil || r.Stats().Builds == builds {
		t.Fatalf("new content must render: %v", err)
	}
}
