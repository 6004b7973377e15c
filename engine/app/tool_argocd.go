package app

import (
	"fmt"
	"strings"
	"time"

	yaml3 "gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// argoCDTool is Argo CD's Application: parsed in argo.go (its sources in
// argo_sources.go), read live from a cluster in argolive.go, its cluster
// Secrets in appset.go.
type argoCDTool struct{}

// EngineArgoCD is Argo CD: argoproj.io/v1alpha1 Application.
const EngineArgoCD Engine = "Argo CD"

// ArgoSyncWaveAnnotation orders applies as Argo CD's sync waves do: lower
// waves first, 0 when absent or not an integer.
const ArgoSyncWaveAnnotation = "argocd.argoproj.io/sync-wave"

// argoGroup is Argo CD's API group.
const argoGroup = "argoproj.io"

func (argoCDTool) Name() string { return "Argo CD Application" }

func (argoCDTool) Owns(o *Origin) bool {
	return o != nil && o.Engine == EngineArgoCD && o.GeneratorKind == ""
}

func (argoCDTool) Kinds() []schema.GroupKind {
	return []schema.GroupKind{{Group: argoGroup, Kind: "Application"}}
}

func (argoCDTool) Marker() string { return argoGroup }

// Edits: a freeze turns spec.syncPolicy.automated.selfHeal off (an
// Application without automated sync is left without it: writing the
// block would turn automated sync on); ignore rules go to
// spec.ignoreDifferences, the same fields as an App's.
func (argoCDTool) Edits() Edits {
	return Edits{
		Heal:       &HealField{Path: []string{"spec", "syncPolicy", "automated"}, Field: "selfHeal", Off: "false"},
		IgnoreList: []string{"ignoreDifferences"},
		IgnoreItem: ruleLines,
	}
}

// Paused: argocd.argoproj.io/skip-reconcile in Git.
func (argoCDTool) Paused(o *Origin) string {
	if o.SkipReconcile {
		return "skip-reconcile in Git"
	}
	return ""
}

func (argoCDTool) Leaves(*unstructured.Unstructured) string { return "" }

// Applied: status.sync.revision, or a multi-source Application's
// status.sync.revisions, one per source in order, joined by
// argoRevisionsSep.
func (argoCDTool) Applied(obj map[string]any) string {
	if rs, _, _ := unstructured.NestedStringSlice(obj, "status", "sync", "revisions"); len(rs) > 0 {
		return strings.Join(rs, argoRevisionsSep)
	}
	r, _, _ := unstructured.NestedString(obj, "status", "sync", "revision")
	return r
}

// AppliedAt: status.operationState.finishedAt of a sync that succeeded,
// when the sync's revision is the one Applied reads.
func (t argoCDTool) AppliedAt(obj map[string]any) time.Time {
	op, _, _ := unstructured.NestedMap(obj, "status", "operationState")
	if phase, _ := op["phase"].(string); phase != "Succeeded" {
		return time.Time{}
	}
	synced, _, _ := unstructured.NestedString(op, "syncResult", "revision")
	if synced == "" || synced != t.Applied(obj) {
		return time.Time{}
	}
	s, _ := op["finishedAt"].(string)
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return at
}

// argoRevisionsSep joins a multi-source Application's revisions in what
// Applied returns (neither a commit nor a chart version holds it).
const argoRevisionsSep = ", "

// ArgoSynced is, of what Applied read from chart c's live Application,
// the revision Argo CD last synced for c's source ("" when it says none),
// and the status field that holds it.
func (c *RemoteChart) ArgoSynced(applied string) (string, string) {
	if c.ArgoSource == 0 {
		return applied, "status.sync.revision"
	}
	field := fmt.Sprintf("status.sync.revisions[%d]", c.ArgoSource-1)
	revs := strings.Split(applied, argoRevisionsSep)
	if applied == "" || len(revs) < c.ArgoSource {
		return "", field
	}
	return revs[c.ArgoSource-1], field
}

// Tracking: Argo CD's resource tracking annotation. (Its
// app.kubernetes.io/instance label is often declared in Git, so it is
// compared; written by Argo CD it is owned by a GitOps manager and so not
// drift.)
func (argoCDTool) Tracking() Tracking {
	return Tracking{Annotations: []string{"argocd.argoproj.io/tracking-id"}}
}

func (argoCDTool) Hooks() []string { return []string{"argocd.argoproj.io/hook"} }

func (argoCDTool) Waves() string { return ArgoSyncWaveAnnotation }

func (argoCDTool) FieldManagers() []string {
	return []string{"argocd-controller", "argocd-application-controller"}
}

func (argoCDTool) declare(d *discovery, body *yaml3.Node, at docAt) bool {
	apiVersion, kind := scalar(lookup(body, "apiVersion")), scalar(lookup(body, "kind"))
	if apiVersion != ArgoAPIVersion || kind != "Application" {
		return false
	}
	d.found = append(d.found, argoApp(d.fsys, body, at.file, at.doc, at.line, at.generatedBy, at.from, d.opts))
	return true
}

// follow: an Application whose folder is built may render further
// Applications (app-of-apps).
func (argoCDTool) follow(a *App, depth int) (parent, bool) { return appParent(a, depth), true }

func (argoCDTool) resolve(*discovery) {}
