package app

import (
	yaml3 "gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// appSetTool is Argo CD's ApplicationSet: read in appset.go, its
// generators in appset_generators.go. Its Apps are the Argo CD
// Applications it generates (Origin.GeneratorKind "ApplicationSet"),
// which Argo CD itself heals: every part but discovery is the
// Application's.
type appSetTool struct{ argoCDTool }

func (appSetTool) Name() string { return "Argo CD ApplicationSet" }

func (appSetTool) Owns(o *Origin) bool {
	return o != nil && o.Engine == EngineArgoCD && o.GeneratorKind == "ApplicationSet"
}

func (appSetTool) Kinds() []schema.GroupKind {
	return []schema.GroupKind{{Group: argoGroup, Kind: "ApplicationSet"}}
}

func (t appSetTool) Edits() Edits                               { return t.argoCDTool.Edits() }
func (t appSetTool) Paused(o *Origin) string                    { return t.argoCDTool.Paused(o) }
func (t appSetTool) Leaves(o *unstructured.Unstructured) string { return t.argoCDTool.Leaves(o) }

// declare holds an ApplicationSet back until the walk is read (the
// cluster Secrets its cluster generator reads may come later), and reads
// the Argo CD cluster Secrets committed to the repository.
func (appSetTool) declare(d *discovery, body *yaml3.Node, at docAt) bool {
	apiVersion, kind := scalar(lookup(body, "apiVersion")), scalar(lookup(body, "kind"))
	switch {
	case apiVersion == ArgoAPIVersion && kind == "ApplicationSet":
		ns, name := metaOf(body, ArgoNamespace)
		if st := d.argo(); !st.sets[ns+"/"+name] {
			st.sets[ns+"/"+name] = true
			st.pending = append(st.pending, pendingDoc{body: body, file: at.file, doc: at.doc, line: at.line, generatedBy: at.generatedBy, from: at.from})
		}
		return true
	case apiVersion == "v1" && kind == "Secret":
		d.argoSecret(body, at.file)
		return true
	}
	return false
}

func (appSetTool) resolve(d *discovery) { d.resolveAppSets() }
