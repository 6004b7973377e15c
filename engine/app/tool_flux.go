package app

import (
	"fmt"
	"strings"

	yaml3 "gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fluxKustomizationTool is Flux's Kustomization: parsed in flux.go, its
// GitRepositories and cluster folders in fluxlayout.go, its overlay in
// overlay.go.
type fluxKustomizationTool struct{}

// EngineFlux is Flux: kustomize.toolkit.fluxcd.io/v1 Kustomization and
// helm.toolkit.fluxcd.io/v2 HelmRelease.
const EngineFlux Engine = "Flux"

// FluxReconcileAnnotation set to "disabled" on an object makes Flux leave
// it alone.
const FluxReconcileAnnotation = "kustomize.toolkit.fluxcd.io/reconcile"

// fluxMarker is in the API group of every Flux kind (toolkit.fluxcd.io,
// and source.extensions.fluxcd.io of the ArtifactGenerator).
const fluxMarker = "fluxcd.io"

func (fluxKustomizationTool) Name() string { return "Flux Kustomization" }

func (fluxKustomizationTool) Owns(o *Origin) bool {
	return o != nil && o.Engine == EngineFlux && o.Kind == "Kustomization"
}

func (fluxKustomizationTool) Kinds() []schema.GroupKind {
	return []schema.GroupKind{
		{Group: "kustomize.toolkit.fluxcd.io", Kind: "Kustomization"},
		{Group: "source.toolkit.fluxcd.io", Kind: "GitRepository"},
		{Group: ArtifactGeneratorGroup, Kind: "ArtifactGenerator"},
	}
}

func (fluxKustomizationTool) Marker() string { return fluxMarker }

// Edits: a freeze sets spec.suspend; ignore rules go to spec.ignore.
func (fluxKustomizationTool) Edits() Edits {
	return Edits{Heal: fluxHeal, IgnoreList: []string{"ignore"}, IgnoreItem: fluxRuleLines}
}

// fluxHeal is the healing field of both Flux kinds: spec.suspend.
var fluxHeal = &HealField{Path: []string{"spec"}, Field: "suspend", Off: "true"}

// fluxTarget writes a rule's object as the {group, kind, name, namespace}
// selector both Flux kinds take, "" when the rule names none of them.
func fluxTarget(r IgnoreRule) string {
	var target []string
	for _, kv := range [][2]string{{"group", r.Group}, {"kind", r.Kind}, {"name", r.Name}, {"namespace", r.Namespace}} {
		if kv[1] != "" {
			target = append(target, kv[0]+": "+QuoteYAML(kv[1]))
		}
	}
	if len(target) == 0 {
		return ""
	}
	return "{" + strings.Join(target, ", ") + "}"
}

// fluxPointers writes a rule's JSON pointers as a flow list.
func fluxPointers(r IgnoreRule) string {
	q := make([]string, len(r.JSONPointers))
	for i, p := range r.JSONPointers {
		q[i] = QuoteYAML(p)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// fluxRuleLines writes a rule as an item of a Kustomization's spec.ignore:
// {target, jsonPointers}.
func fluxRuleLines(dashInd, _ int, r IgnoreRule) ([]string, error) {
	if len(r.ManagedFieldsManagers) > 0 {
		return nil, fmt.Errorf("Flux's spec.ignore takes JSON pointers, not field managers")
	}
	target := fluxTarget(r)
	if target == "" {
		target = "{}"
	}
	return []string{
		strings.Repeat(" ", dashInd) + "- target: " + target,
		strings.Repeat(" ", dashInd+2) + "jsonPointers: " + fluxPointers(r),
	}, nil
}

// Paused: spec.suspend in Git, with the reason `flux suspend --reason`
// wrote.
func (fluxKustomizationTool) Paused(o *Origin) string {
	if o.Heals {
		return ""
	}
	if o.SuspendReason != "" {
		return "suspended in Git: " + o.SuspendReason
	}
	return "suspended in Git"
}

// Leaves: kustomize.toolkit.fluxcd.io/reconcile: disabled.
// Applied: status.lastAppliedRevision ("main@sha1:…").
func (fluxKustomizationTool) Applied(obj map[string]any) string {
	r, _, _ := unstructured.NestedString(obj, "status", "lastAppliedRevision")
	return r
}

func (fluxKustomizationTool) Leaves(obj *unstructured.Unstructured) string {
	if obj.GetAnnotations()[FluxReconcileAnnotation] == "disabled" {
		return "Flux does not reconcile this object (" + FluxReconcileAnnotation + ": disabled): nothing heals it"
	}
	return ""
}

// Tracking: the kustomize-controller's labels.
func (fluxKustomizationTool) Tracking() Tracking {
	return Tracking{Labels: []string{"kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace"}}
}

func (fluxKustomizationTool) Hooks() []string         { return nil }
func (fluxKustomizationTool) Waves() string           { return "" }
func (fluxKustomizationTool) FieldManagers() []string { return []string{"kustomize-controller"} }

// declare reads GitRepositories and holds Kustomizations back until every
// GitRepository of the walk is read.
func (fluxKustomizationTool) declare(d *discovery, body *yaml3.Node, at docAt) bool {
	apiVersion, kind := scalar(lookup(body, "apiVersion")), scalar(lookup(body, "kind"))
	switch {
	case strings.HasPrefix(apiVersion, "source.toolkit.fluxcd.io/") && kind == "GitRepository":
		ns, name := metaOf(body, "")
		d.repos[ns+"/"+name] = gitRepository{url: scalar(lookupPath(body, "spec.url")), ref: gitRefOf(lookupPath(body, "spec.ref")), file: at.file}
		return true
	case strings.HasPrefix(apiVersion, ArtifactGeneratorGroup+"/") && kind == "ArtifactGenerator":
		var g artifactGenerator
		if decodeNode(body, &g) == nil {
			file := at.file
			if file == "" {
				file = "generated by " + at.generatedBy + " (" + at.from + ")"
			}
			d.generators = append(d.generators, pendingGenerator{gen: g, file: file})
		}
		return true
	case strings.HasPrefix(apiVersion, "kustomize.toolkit.fluxcd.io/") && kind == "Kustomization":
		if at.file != "" && d.patchFile(at.file) {
			// A partial Kustomization a kustomization file patches
			// another with: what the render yields is the declaration.
			return true
		}
		d.pending = append(d.pending, pendingKustomization{body: body, file: at.file, doc: at.doc, line: at.line, generatedBy: at.generatedBy, from: at.from})
		return true
	}
	return false
}

// follow: a Kustomization may apply further Kustomizations, and its plain
// folder is rendered too when the tree holds HelmReleases, which are
// taken from what a Kustomization applies only.
func (fluxKustomizationTool) follow(a *App, depth int) (parent, bool) {
	p := appParent(a, depth)
	p.flux = true
	p.artifact = a.Spec.Artifact
	return p, true
}

// resolve turns the Flux declarations held back (Kustomizations and
// HelmReleases, in the order they were read) into apps, now that the
// GitRepositories are known.
func (fluxKustomizationTool) resolve(d *discovery) {
	repos := d.fluxRepos()
	artifacts := d.artifacts(repos)
	for _, k := range d.pending {
		if k.helm {
			d.found = append(d.found, fluxHelmApp(d.fsys, k, repos, d.opts.SameRepo, d.opts.Branch))
			continue
		}
		d.found = append(d.found, fluxApp(d.fsys, k, repos, artifacts, d.opts.SameRepo, d.opts.Branch))
	}
	d.pending = nil
}
