package render_test

import (
	"context"
	"fmt"
	"path"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/render"
)

// benchFiles is a base of 20 objects (8 Deployments, 8 Services, 4
// ConfigMaps) and a prod overlay that patches every Deployment.
func benchFiles() map[string]string {
	files := map[string]string{}
	base := "resources:\n"
	overlay := "namespace: prod\nnamePrefix: prod-\nresources: [../../base]\npatches:\n"
	for i := range 8 {
		files[fmt.Sprintf("deploy/base/deploy-%d.yaml", i)] = fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: svc-%d, labels: {app: svc-%d}}
spec:
  replicas: 2
  selector: {matchLabels: {app: svc-%d}}
  template:
    metadata: {labels: {app: svc-%d}}
    spec:
      containers:
      - name: app
        image: registry.example.com/svc-%d:1.0.0
        ports: [{containerPort: 8080}]
        resources: {requests: {cpu: 100m, memory: 128Mi}}
`, i, i, i, i, i)
		files[fmt.Sprintf("deploy/base/service-%d.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: svc-%d}\nspec:\n  selector: {app: svc-%d}\n  ports: [{port: 80, targetPort: 8080}]\n", i, i)
		files[fmt.Sprintf("deploy/overlays/prod/patch-%d.yaml", i)] = fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: svc-%d}\nspec: {replicas: 6}\n", i)
		base += fmt.Sprintf("- deploy-%d.yaml\n- service-%d.yaml\n", i, i)
		overlay += fmt.Sprintf("- path: patch-%d.yaml\n", i)
	}
	for i := range 4 {
		files[fmt.Sprintf("deploy/base/config-%d.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: config-%d}\ndata: {key: value-%d}\n", i, i)
		base += fmt.Sprintf("- config-%d.yaml\n", i)
	}
	files["deploy/base/kustomization.yaml"] = base
	files["deploy/overlays/prod/kustomization.yaml"] = overlay
	return files
}

// BenchmarkRender renders a 20-object overlay: cold (a new Renderer each
// time, a full kustomize build) and cached (nothing changed).
func BenchmarkRender(b *testing.B) {
	_, snap := repo(b, benchFiles())
	s := snap()
	check := func(b *testing.B, n int, err error) {
		if err != nil || n != 20 {
			b.Fatalf("rendered %d objects, %v; want 20", n, err)
		}
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			objs, err := render.NewRenderer().Render(s, "deploy/overlays/prod")
			check(b, len(objs), err)
		}
	})
	b.Run("cached", func(b *testing.B) {
		r := render.NewRenderer()
		objs, err := r.Render(s, "deploy/overlays/prod")
		check(b, len(objs), err)
		for b.Loop() {
			objs, err := r.Render(s, "deploy/overlays/prod")
			check(b, len(objs), err)
		}
		if st := r.Stats(); st.Builds != 1 {
			b.Fatalf("stats = %+v, want one build", st)
		}
	})
}

// BenchmarkRenderCached50Apps is the render phase of a reconcile pass with
// nothing changed: 50 overlays of 20 objects each, all cached, on a new
// commit that touched none of them.
func BenchmarkRenderCached50Apps(b *testing.B) {
	files := benchFiles()
	for i := range 50 {
		files[fmt.Sprintf("deploy/overlays/app-%02d/kustomization.yaml", i)] = fmt.Sprintf("namespace: app-%02d\nresources: [../prod]\n", i)
	}
	g, snap := repo(b, files)
	r := render.NewRenderer()
	for i := range 50 {
		if _, err := r.Render(snap(), fmt.Sprintf("deploy/overlays/app-%02d", i)); err != nil {
			b.Fatal(err)
		}
	}
	g.Commit("unrelated", map[string]string{"README.md": "changed\n"})
	s := snap()
	for b.Loop() {
		for i := range 50 {
			objs, err := r.Render(s, fmt.Sprintf("deploy/overlays/app-%02d", i))
			if err != nil || len(objs) != 20 {
				b.Fatalf("rendered %d objects, %v", len(objs), err)
			}
		}
	}
	if st := r.Stats(); st.Builds != 50 {
		b.Fatalf("stats = %+v, want 50 builds", st)
	}
}

// BenchmarkRenderHelmSchema is a cold render of a chart with a schema (and
// a dependency with one), and of the same chart with both schemas
// removed: the difference is what checking values costs.
func BenchmarkRenderHelmSchema(b *testing.B) {
	files := chartFiles(b, "schema", "deploy/schema")
	for k, v := range chartFiles(b, "schema", "deploy/noschema") {
		if !strings.HasSuffix(k, "values.schema.json") {
			files[k] = v
		}
	}
	_, snap := repo(b, files)
	s := snap()
	for _, dir := range []string{"deploy/schema", "deploy/noschema"} {
		b.Run(path.Base(dir), func(b *testing.B) {
			for b.Loop() {
				objs, err := render.NewRenderer().RenderApp(context.Background(), s, dir, nil)
				if err != nil || len(objs) != 2 {
					b.Fatalf("rendered %d objects, %v", len(objs), err)
				}
			}
		})
	}
}
