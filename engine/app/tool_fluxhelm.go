package app

import (
	"fmt"
	"strings"

	yaml3 "gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fluxHelmReleaseTool is Flux's HelmRelease: parsed in fluxhelm.go. It
// joins the Kustomizations' wait for GitRepositories (tool_flux.go), and
// is taken only from what a Kustomization applies.
type fluxHelmReleaseTool struct{}

func (fluxHelmReleaseTool) Name() string { return "Flux HelmRelease" }

func (fluxHelmReleaseTool) Owns(o *Origin) bool {
	return o != nil && o.Engine == EngineFlux && o.Kind == "HelmRelease"
}

func (fluxHelmReleaseTool) Kinds() []schema.GroupKind {
	return []schema.GroupKind{
		{Group: fluxHelmGroup, Kind: "HelmRelease"},
		{Group: fluxSourceGroup, Kind: "HelmRepository"},
		{Group: fluxSourceGroup, Kind: "OCIRepository"},
	}
}

func (fluxHelmReleaseTool) Marker() string { return fluxMarker }

// Edits: a freeze sets spec.suspend, as for a Kustomization; ignore rules
// go to spec.driftDetection.ignore, which helm-controller reads (it puts
// drift back only with spec.driftDetection.mode enabled, but honours the
// rules in every mode, and an ignore leaves the mode as it is).
func (fluxHelmReleaseTool) Edits() Edits {
	return Edits{Heal: fluxHeal, IgnoreList: []string{"driftDetection", "ignore"}, IgnoreItem: fluxHelmRuleLines}
}

// fluxHelmRuleLines writes a rule as an item of a HelmRelease's
// spec.driftDetection.ignore: {paths, target}, the target left out when
// the rule names no object (it then covers every object of the release).
func fluxHelmRuleLines(dashInd, _ int, r IgnoreRule) ([]string, error) {
	if len(r.ManagedFieldsManagers) > 0 {
		return nil, fmt.Errorf("a HelmRelease's spec.driftDetection.ignore takes JSON pointers (paths), not field managers; name the fields it should ignore as JSON pointers")
	}
	out := []string{strings.Repeat(" ", dashInd) + "- paths: " + fluxPointers(r)}
	if t := fluxTarget(r); t != "" {
		out = append(out, strings.Repeat(" ", dashInd+2)+"target: "+t)
	}
	return out, nil
}

// Paused: spec.suspend in Git. Drift detection turned off also stops it
// healing (Heals is false) but is no suspension.
func (fluxHelmReleaseTool) Paused(o *Origin) string {
	if !o.Suspended {
		return ""
	}
	return fluxKustomizationTool{}.Paused(o)
}

// Leaves: as a Kustomization's objects, kustomize.toolkit.fluxcd.io/
// reconcile: disabled.
func (fluxHelmReleaseTool) Leaves(obj *unstructured.Unstructured) string {
	return fluxKustomizationTool{}.Leaves(obj)
}

// Applied: the chart helm-controller last released, "chart NAME
// VERSION" (status.history[0]; status.lastAttemptedRevision, the version
// alone, before the first release is recorded).
func (fluxHelmReleaseTool) Applied(obj map[string]any) string {
	hist, _, _ := unstructured.NestedSlice(obj, "status", "history")
	if len(hist) > 0 {
		if m, ok := hist[0].(map[string]any); ok {
			name, _ := m["chartName"].(string)
			v, _ := m["chartVersion"].(string)
			if v != "" && name != "" {
				return "chart " + name + " " + v
			}
		}
	}
	if r, _, _ := unstructured.NestedString(obj, "status", "lastAttemptedRevision"); r != "" {
		return "chart " + r
	}
	return ""
}

// ReleasesCharts: Applied is a chart release.
func (fluxHelmReleaseTool) ReleasesCharts() {}

// Tracking: the helm-controller's labels.
func (fluxHelmReleaseTool) Tracking() Tracking {
	return Tracking{Labels: []string{"helm.toolkit.fluxcd.io/name", "helm.toolkit.fluxcd.io/namespace"}}
}

// Hooks: Helm's, which the helm-controller runs.
func (fluxHelmReleaseTool) Hooks() []string { return []string{"helm.sh/hook"} }

func (fluxHelmReleaseTool) Waves() string { return "" }

// FieldManagers: the helm-controller, and helm for releases installed by
// hand before.
func (fluxHelmReleaseTool) FieldManagers() []string { return []string{"helm-controller", "helm"} }

// declare holds a HelmRelease back with the Kustomizations, and keeps
// the HelmRepositories and OCIRepositories Git declares (fluxsource.go).
// A HelmRelease is taken from what a Flux Kustomization applies, never
// from the file alone: the Kustomization's overlay (an environment's
// values patch) decides what it says.
func (fluxHelmReleaseTool) declare(d *discovery, body *yaml3.Node, at docAt) bool {
	apiVersion, kind := scalar(lookup(body, "apiVersion")), scalar(lookup(body, "kind"))
	if d.declareChartSource(apiVersion, kind, body, at) {
		return true
	}
	if !strings.HasPrefix(apiVersion, fluxHelmGroup+"/") || kind != "HelmRelease" {
		return false
	}
	if at.generatedBy != "" {
		d.pending = append(d.pending, pendingKustomization{body: body, file: at.file, doc: at.doc, line: at.line, generatedBy: at.generatedBy, from: at.from, helm: true})
	}
	return true
}

// follow: a HelmRelease's chart declares no further apps.
func (fluxHelmReleaseTool) follow(*App, int) (parent, bool) { return parent{}, false }

// resolve: the Kustomizations' resolve reads HelmReleases too.
func (fluxHelmReleaseTool) resolve(*discovery) {}
