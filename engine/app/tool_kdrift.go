package app

import (
	yaml3 "gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kdriftTool is kdrift's own App: the documents of Dir, which Load reads
// (load.go, parse.go, validate.go). kdrift heals it itself.
type kdriftTool struct{}

func (kdriftTool) Name() string                             { return "kdrift App" }
func (kdriftTool) Owns(o *Origin) bool                      { return o == nil }
func (kdriftTool) Kinds() []schema.GroupKind                { return nil }
func (kdriftTool) Marker() string                           { return "" }
func (kdriftTool) Paused(*Origin) string                    { return "" }
func (kdriftTool) Tracking() Tracking                       { return Tracking{} }
func (kdriftTool) Hooks() []string                          { return nil }
func (kdriftTool) FieldManagers() []string                  { return []string{"kdrift", "kdrift-handover"} }
func (kdriftTool) resolve(*discovery)                       {}
func (kdriftTool) Leaves(*unstructured.Unstructured) string { return "" }

// Edits: the freeze is the App's spec.freeze; ignore rules go to
// spec.ignoreDifferences.
func (kdriftTool) Edits() Edits {
	return Edits{IgnoreList: []string{"ignoreDifferences"}, IgnoreItem: ruleLines}
}

// Waves: kdrift orders its own Apps by Argo CD's sync-wave annotation, so
// that a repository moving from Argo CD keeps its order.
func (kdriftTool) Waves() string { return ArgoSyncWaveAnnotation }

// follow: an App whose folder is built may render declarations.
func (kdriftTool) follow(a *App, depth int) (parent, bool) { return appParent(a, depth), true }

func (kdriftTool) declare(*discovery, *yaml3.Node, docAt) bool { return false }
