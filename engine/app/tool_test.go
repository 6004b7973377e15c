package app_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/fluxtest"
)

// toolSample is a repository declaring one App with a registered tool,
// and what the tool says of it: every part of the Tool interface.
type toolSample struct {
	files map[string]string
	opts  source.Options
	// app is the App's name.
	app string
	// paused is Tool.Paused of the App.
	paused string
	// leaves is an annotation whose value "disabled" makes the tool leave
	// an object alone; "" for none.
	leaves string
	// What the tool lists: its tracking labels and annotations, hooks,
	// wave annotation and field managers.
	labels, annotations, hooks []string
	waves                      string
	managers                   []string
}

// toolSamples holds one sample per registered tool, by Tool.Name.
func toolSamples() map[string]toolSample {
	argoManagers := []string{"argocd-controller", "argocd-application-controller"}
	return map[string]toolSample{
		"kdrift App": {
			files: map[string]string{
				".kdrift/web.yaml": "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata: {name: web}\nspec:\n  path: web\n  destination: {namespace: web}\n",
				"web/cm.yaml":      cm,
			},
			app: "web", waves: "argocd.argoproj.io/sync-wave", managers: []string{"kdrift", "kdrift-handover"},
		},
		"Argo CD Application": {
			files: map[string]string{"argocd/guestbook.yaml": ArgoApplication, "guestbook/cm.yaml": cm},
			app:   "guestbook", annotations: []string{"argocd.argoproj.io/tracking-id"},
			hooks: []string{"argocd.argoproj.io/hook"}, waves: "argocd.argoproj.io/sync-wave", managers: argoManagers,
		},
		"Argo CD ApplicationSet": {
			files: map[string]string{
				"argocd/envs.yaml": `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: envs, namespace: argocd}
spec:
  generators:
  - list:
      elements:
      - env: dev
  template:
    metadata: {name: 'web-{{env}}'}
    spec:
      project: default
      source: {repoURL: https://github.com/example/gitops.git, targetRevision: HEAD, path: web}
      destination: {server: https://kubernetes.default.svc, namespace: '{{env}}'}
`,
				"web/cm.yaml": cm,
			},
			app: "web-dev", annotations: []string{"argocd.argoproj.io/tracking-id"},
			hooks: []string{"argocd.argoproj.io/hook"}, waves: "argocd.argoproj.io/sync-wave", managers: argoManagers,
		},
		"Flux Kustomization": {
			files:  map[string]string{"clusters/sync.yaml": FluxSync, "podinfo/cm.yaml": cm},
			app:    "podinfo",
			leaves: "kustomize.toolkit.fluxcd.io/reconcile",
			labels: []string{"kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace"}, managers: []string{"kustomize-controller"},
		},
		"Flux HelmRelease": {
			files:  fluxtest.ReferenceLayout("ssh://git@github.com/example/gitops", "podinfo"),
			opts:   source.Options{Flux: &app.FluxCluster{Path: "clusters/production", From: "--cluster-path"}},
			app:    "podinfo",
			leaves: "kustomize.toolkit.fluxcd.io/reconcile",
			labels: []string{"helm.toolkit.fluxcd.io/name", "helm.toolkit.fluxcd.io/namespace"},
			hooks:  []string{"helm.sh/hook"}, managers: []string{"helm-controller", "helm"},
		},
	}
}

// TestEveryToolHasEveryPart: each registered GitOps tool recognises and
// parses its declaration into an App that ToolOf gives back to it alone,
// names where freeze, unfreeze and ignore write, and says what it pauses,
// leaves alone, tracks, runs as hooks, orders by and writes as. A tool
// registered without a sample here, or lacking a part, fails.
func TestEveryToolHasEveryPart(t *testing.T) {
	t.Parallel()
	samples := toolSamples()
	seen := map[string]bool{}
	for _, tool := range app.Tools {
		name := tool.Name()
		if name == "" || seen[name] {
			t.Errorf("tool %T: its name %q is empty or another tool's", tool, name)
			continue
		}
		seen[name] = true
		s, ok := samples[name]
		if !ok {
			t.Errorf("registered tool %s has no sample in toolSamples: add a repository declaring one App with it", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := discoverWith(t, s.files, s.opts)
			a, ok := res.Find(s.app)
			if !ok {
				t.Fatalf("the sample's App %s was not discovered: apps %v, invalid %+v", s.app, names(res.Apps), res.Invalid)
			}
			var owners []string
			for _, other := range app.Tools {
				if other.Owns(a.Origin) {
					owners = append(owners, other.Name())
				}
			}
			if len(owners) != 1 || owners[0] != name || app.ToolOf(a.Origin).Name() != name {
				t.Fatalf("App %s (origin %+v) is owned by %v, want %s alone", s.app, a.Origin, owners, name)
			}

			// Recognition: a tool whose Apps have an origin reads
			// documents of its own kinds, found by its marker.
			if a.Origin != nil {
				if len(tool.Kinds()) == 0 || tool.Marker() == "" {
					t.Errorf("no kinds (%v) or no marker (%q) to recognise its documents by", tool.Kinds(), tool.Marker())
				}
				for _, k := range tool.Kinds() {
					if !strings.Contains(k.Group, tool.Marker()) {
						t.Errorf("kind %v does not hold the marker %q: discovery would never read it", k, tool.Marker())
					}
				}
			}

			// Edits: where a freeze and an ignore rule go.
			ed := tool.Edits()
			if len(ed.IgnoreList) == 0 || slices.Contains(ed.IgnoreList, "") || ed.IgnoreItem == nil {
				t.Errorf("no ignore list (%q) or item writer", ed.IgnoreList)
			} else if lines, err := ed.IgnoreItem(4, 2, app.IgnoreRule{Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}); err != nil || len(lines) == 0 || !strings.HasPrefix(lines[0], "    - ") {
				t.Errorf("an ignore rule is written as %q (%v), want a list item at column 4", lines, err)
			}
			if h := ed.Heal; a.Origin != nil && (h == nil || len(h.Path) == 0 || h.Field == "" || h.Off == "") {
				t.Errorf("its Apps are another tool's, but it names no healing field for a freeze to turn off: %+v", h)
			}

			if got := tool.Paused(a.Origin); got != s.paused {
				t.Errorf("Paused = %q, want %q", got, s.paused)
			}
			obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}}}
			if why := tool.Leaves(obj); why != "" {
				t.Errorf("Leaves an object without annotations: %q", why)
			}
			if s.leaves != "" {
				obj.SetAnnotations(map[string]string{s.leaves: "disabled"})
				if why := tool.Leaves(obj); !strings.Contains(why, s.leaves) {
					t.Errorf("Leaves with %s: disabled = %q, want the annotation named", s.leaves, why)
				}
			}

			tr := tool.Tracking()
			for _, c := range []struct {
				part      string
				got, want []string
			}{
				{"tracking labels", tr.Labels, s.labels},
				{"tracking annotations", tr.Annotations, s.annotations},
				{"hooks", tool.Hooks(), s.hooks},
				{"field managers", tool.FieldManagers(), s.managers},
			} {
				if !slices.Equal(c.got, c.want) {
					t.Errorf("%s %q, want %q", c.part, c.got, c.want)
				}
			}
			if len(tool.FieldManagers()) == 0 {
				t.Errorf("no field managers: what it writes would count as a person's drift")
			}
			if tool.Waves() != s.waves {
				t.Errorf("waves %q, want %q", tool.Waves(), s.waves)
			}
		})
	}
}

// TestToolUnions: what the registered tools list together is what the
// engine used before tools were plug-ins, in the same order.
func TestToolUnions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		part      string
		got, want []string
	}{
		{"kdrift managers", app.KdriftManagers(), []string{"kdrift", "kdrift-handover"}},
		{"GitOps managers", app.GitOpsManagers(), []string{"argocd-controller", "argocd-application-controller", "kustomize-controller", "helm-controller", "helm"}},
		{"tracking labels", app.TrackingLabels(), []string{"kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace", "helm.toolkit.fluxcd.io/name", "helm.toolkit.fluxcd.io/namespace"}},
		{"tracking annotations", app.TrackingAnnotations(), []string{"argocd.argoproj.io/tracking-id"}},
		{"hooks", app.HookAnnotations(), []string{"argocd.argoproj.io/hook", "helm.sh/hook"}},
		{"waves", app.WaveAnnotations(), []string{"argocd.argoproj.io/sync-wave"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: %q, want %q", c.part, c.got, c.want)
		}
	}
	wave := func(v string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{Object: map[string]any{}}
		o.SetAnnotations(map[string]string{"argocd.argoproj.io/sync-wave": v})
		return o
	}
	if app.Wave(wave(" -2 ")) != -2 || app.Wave(wave("x")) != 0 || app.Wave(&unstructured.Unstructured{Object: map[string]any{}}) != 0 {
		t.Fatal("Wave must read the wave annotation as an integer, 0 when absent or not one")
	}
	hook := wave("1")
	hook.SetAnnotations(map[string]string{"helm.sh/hook": "pre-install"})
	if objs, n := app.WithoutHooks([]*unstructured.Unstructured{hook, wave("1")}); n != 1 || len(objs) != 1 || app.IsHook(objs[0]) {
		t.Fatalf("WithoutHooks left %d, dropped %d", len(objs), n)
	}
}
