package render_test

import (
	"context"
	"testing"

	"kdrift.dev/kdrift/engine/render"
)

// BenchmarkSandboxOverhead is a cold render (a new Renderer, nothing
// cached) of a small App of each renderer, in a warm render worker and in
// this process: the difference is what the worker costs a render (the
// pipe's frames, the reads answered one at a time, the objects sent back
// as JSON).
func BenchmarkSandboxOverhead(b *testing.B) {
	files := chartFiles(b, "web", "apps/chart")
	for k, v := range guestbookFiles {
		files["apps/"+k] = v
	}
	files["apps/base/kustomization.yaml"] = "resources: [deploy.yaml, svc.yaml]\n"
	files["apps/base/deploy.yaml"] = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n"
	files["apps/base/svc.yaml"] = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {selector: {app: web}, ports: [{port: 80}]}\n"
	files["apps/overlay/kustomization.yaml"] = "namespace: prod\nresources: [../base]\npatches:\n- patch: |-\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata: {name: web}\n    spec: {replicas: 3}\n"
	_, snap := repo(b, files)
	s := snap()
	libs := *guestbookDir
	libs.Jsonnet = &render.Jsonnet{ExtVars: guestbookDir.Jsonnet.ExtVars, TLAs: guestbookDir.Jsonnet.TLAs, Libs: []string{"apps/lib"}}
	apps := []struct {
		name, dir string
		h         *render.Helm
		want      int
	}{
		{"kustomize", "apps/overlay", nil, 2},
		{"helm", "apps/chart", nil, 0},
		{"jsonnet", "apps/jsonnet-guestbook", &render.Helm{Directory: &libs}, 2},
	}
	for _, app := range apps {
		for _, mode := range []string{"worker", "inprocess"} {
			b.Run(app.name+"/"+mode, func(b *testing.B) {
				render1 := func() {
					r := render.NewRenderer()
					render.SetTestSandbox(r, true, mode == "inprocess", nil)
					objs, err := r.RenderApp(context.Background(), s, app.dir, app.h)
					if err != nil || len(objs) == 0 || (app.want > 0 && len(objs) != app.want) {
						b.Fatalf("%s: %d objects, %v", app.dir, len(objs), err)
					}
				}
				render1() // starts the workers: the overhead measured is a warm worker's
				render1()
				for b.Loop() {
					render1()
				}
			})
		}
	}
}
