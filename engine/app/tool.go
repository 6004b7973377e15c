package app

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	yaml3 "gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Tool is one GitOps tool whose documents declare apps: kdrift's own App,
// Argo CD's Application and ApplicationSet, Flux's Kustomization and
// HelmRelease. Everything kdrift does differently per tool is a part of
// its Tool, in the tool's own file (tool_*.go); the rest of kdrift asks
// the tool of an App (ToolOf) or the registered list (Tools) and never
// names a tool itself.
type Tool interface {
	// Name is the tool's declaration as a person names it: "Argo CD
	// Application".
	Name() string
	// Owns reports whether the tool declares an App of this Origin (nil
	// for an App of kdrift's own files).
	Owns(o *Origin) bool
	// Kinds are the kinds of the documents discovery reads for the tool,
	// in the repository tree and in what an app renders; none for
	// kdrift's own App, which Load reads from Dir.
	Kinds() []schema.GroupKind
	// Marker is a text every file that can hold one of Kinds contains;
	// discovery parses no file that holds no tool's marker. "" with no
	// Kinds.
	Marker() string
	// Edits says where kdrift's freeze, unfreeze and ignore actions write
	// into the tool's declaration.
	Edits() Edits
	// Paused says why the tool does not heal an App of this Origin by its
	// declaration alone ("suspended in Git"); "" when it heals, or is
	// merely not set to self-heal. A kdrift freeze pauses too: the
	// caller tells the two apart by the freeze annotations.
	Paused(o *Origin) string
	// Leaves says why the tool leaves obj, one of the objects of an App
	// it declares, alone (an annotation on the object); "" when it
	// reconciles it.
	Leaves(obj *unstructured.Unstructured) string
	// Tracking are the labels and annotations the tool writes on the
	// objects it applies for its own bookkeeping: never drift.
	Tracking() Tracking
	// Hooks are the annotations that mark an object as a hook the tool
	// runs around a sync: kdrift runs no hooks, so a hook is never
	// compared, applied, healed, pruned or counted as drift.
	Hooks() []string
	// Waves is the annotation whose integer orders applies, lower waves
	// first; "" when the tool has none.
	Waves() string
	// FieldManagers are the field managers the tool's controllers write
	// as: what they own is the tool's, never a person's drift.
	FieldManagers() []string
	// declare takes one document of the walk or of a render into
	// discovery when it is one of the tool's, and reports whether it was.
	declare(d *discovery, body *yaml3.Node, at docAt) bool
	// follow is how discovery renders App a, depth apps below the
	// repository's own documents, to find the declarations its output
	// holds (app-of-apps); ok is false when it never does.
	follow(a *App, depth int) (p parent, ok bool)
	// resolve turns the declarations the tool held back until the whole
	// walk (or a render's output) was read into found entries.
	resolve(d *discovery)
}

// AppliedReader is a Tool whose controller records, on the live
// declaration, the revision of the repository it last applied.
type AppliedReader interface {
	// Applied is that revision as the tool writes it ("main@sha1:3f2a…",
	// a commit hash), "" when obj carries none.
	Applied(obj map[string]any) string
}

// AppliedTimeReader is an AppliedReader whose controller also records
// when it finished applying that revision.
type AppliedTimeReader interface {
	AppliedReader
	// AppliedAt is that time; zero when obj does not say.
	AppliedAt(obj map[string]any) time.Time
}

// ChartReleaser is an AppliedReader whose Applied names the chart it
// last released ("chart NAME VERSION"), not a revision of the
// repository.
type ChartReleaser interface {
	AppliedReader
	// ReleasesCharts marks the tool.
	ReleasesCharts()
}

// Tools are the registered GitOps tools, in the order discovery resolves
// their declarations and their field managers, hooks and tracking are
// listed. A new tool is one file (tool_NAME.go) and one entry here.
var Tools = []Tool{
	kdriftTool{},
	argoCDTool{},
	fluxKustomizationTool{},
	fluxHelmReleaseTool{},
	appSetTool{},
}

// Edits say where kdrift's actions write into a tool's declaration.
type Edits struct {
	// Heal is the field whose value makes the tool heal: a freeze turns
	// it off and records the freeze (and the field's earlier value) in
	// the kdrift.dev/freeze-* annotations. Nil: the freeze is the App's
	// own spec.freeze (kdrift's App).
	Heal *HealField
	// IgnoreList is the path of keys under spec that leads to the list an
	// ignore rule is appended to: {"ignoreDifferences"} for an Argo CD
	// Application, {"driftDetection", "ignore"} for a Flux HelmRelease.
	IgnoreList []string
	// IgnoreItem writes rule r as an item of IgnoreList, its dash at
	// column dashInd in a file that indents by step, or says why the tool
	// cannot take the rule.
	IgnoreItem func(dashInd, step int, r IgnoreRule) ([]string, error)
}

// IgnoreField is IgnoreList as a person names the field:
// "spec.driftDetection.ignore".
func (e Edits) IgnoreField() string { return "spec." + strings.Join(e.IgnoreList, ".") }

// HealField is where a declaration says whether its tool heals.
type HealField struct {
	// Path leads from the document's root through block mappings to the
	// one holding Field. The first key must be there; when a later one is
	// absent (or null) the tool does not heal at all, and a freeze leaves
	// the declaration's healing as it is.
	Path []string
	// Field is the healing field, and Off its value that stops the tool.
	Field, Off string
}

// Tracking are the labels and annotations a tool keeps on the objects it
// applies.
type Tracking struct {
	Labels, Annotations []string
}

// ToolOf is the registered tool that declares an App of this Origin (nil:
// kdrift's own App). An Origin no tool owns panics: every Origin is made
// by a registered tool's parser.
func ToolOf(o *Origin) Tool {
	for _, t := range Tools {
		if t.Owns(o) {
			return t
		}
	}
	panic(fmt.Sprintf("app: no registered tool declares %s %s", o.Engine, o.Kind))
}

// union lists what part says of every registered tool, each once, in
// the order of Tools.
func union(part func(Tool) []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range Tools {
		for _, s := range part(t) {
			if s != "" && !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// TrackingLabels are the registered tools' tracking labels.
func TrackingLabels() []string { return union(func(t Tool) []string { return t.Tracking().Labels }) }

// TrackingAnnotations are the registered tools' tracking annotations.
func TrackingAnnotations() []string {
	return union(func(t Tool) []string { return t.Tracking().Annotations })
}

// HookAnnotations are the registered tools' hook annotations.
func HookAnnotations() []string { return union(func(t Tool) []string { return t.Hooks() }) }

// WaveAnnotations are the registered tools' wave annotations.
func WaveAnnotations() []string { return union(func(t Tool) []string { return []string{t.Waves()} }) }

// KdriftManagers are the field managers of kdrift's own App tool: kdrift
// itself.
func KdriftManagers() []string {
	return union(func(t Tool) []string {
		if t.Owns(nil) {
			return t.FieldManagers()
		}
		return nil
	})
}

// GitOpsManagers are the field managers of every other registered tool.
func GitOpsManagers() []string {
	return union(func(t Tool) []string {
		if !t.Owns(nil) {
			return t.FieldManagers()
		}
		return nil
	})
}

// hookAnnotations and waveAnnotations are HookAnnotations and
// WaveAnnotations, listed once: IsHook and Wave are asked of every object.
var (
	hookAnnotations = HookAnnotations()
	waveAnnotations = WaveAnnotations()
)

// IsHook reports whether obj carries a registered tool's hook annotation.
func IsHook(obj *unstructured.Unstructured) bool {
	ann := obj.GetAnnotations()
	for _, a := range hookAnnotations {
		if _, ok := ann[a]; ok {
			return true
		}
	}
	return false
}

// WithoutHooks returns objs without the hooks (IsHook), and how many it
// left out.
func WithoutHooks(objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, int) {
	out := objs[:0:0]
	for _, o := range objs {
		if !IsHook(o) {
			out = append(out, o)
		}
	}
	return out, len(objs) - len(out)
}

// Wave returns obj's wave: the first registered wave annotation it
// carries, 0 when none does or its value is not an integer.
func Wave(obj *unstructured.Unstructured) int {
	ann := obj.GetAnnotations()
	for _, a := range waveAnnotations {
		if v, ok := ann[a]; ok {
			w, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return 0
			}
			return w
		}
	}
	return 0
}

// appParent is App a as a parent of the declarations its render holds.
func appParent(a *App, depth int) parent {
	return parent{name: a.Metadata.Name, path: a.Spec.Path, helm: a.RenderHelm(), depth: depth}
}

// docAt is where discovery read a document: its file and 1-based document
// and line, or the app whose render yields it (generatedBy, at from).
type docAt struct {
	file              string
	doc, line         int
	generatedBy, from string
}

// declaresKind reports whether a registered tool reads documents of gk.
func declaresKind(gk schema.GroupKind) bool { return ToolOfKind(gk) != nil }

// ToolOfKind is the registered tool whose documents are of kind gk; nil
// when no tool declares that kind.
func ToolOfKind(gk schema.GroupKind) Tool {
	for _, t := range Tools {
		for _, k := range t.Kinds() {
			if k == gk {
				return t
			}
		}
	}
	return nil
}

// QuoteYAML quotes s as a YAML double-quoted string. Go's quoting and
// YAML's double-quoted style agree on every escape but \xNN, which Go
// writes for a byte that is not UTF-8 and YAML reads as a code point; YAML
// holds text only, so such bytes become U+FFFD first.
func QuoteYAML(s string) string { return strconv.Quote(strings.ToValidUTF8(s, "\uFFFD")) }

// ruleLines writes an ignore rule as an item of an App's (or an Argo CD
// Application's) spec.ignoreDifferences.
func ruleLines(dashInd, _ int, r IgnoreRule) ([]string, error) {
	var kv []string
	add := func(k, v string) {
		if v != "" {
			kv = append(kv, k+": "+QuoteYAML(v))
		}
	}
	add("group", r.Group)
	add("kind", r.Kind)
	add("name", r.Name)
	add("namespace", r.Namespace)
	list := func(k string, vs []string) {
		if len(vs) == 0 {
			return
		}
		q := make([]string, len(vs))
		for i, v := range vs {
			q[i] = QuoteYAML(v)
		}
		kv = append(kv, k+": ["+strings.Join(q, ", ")+"]")
	}
	list("jsonPointers", r.JSONPointers)
	list("managedFieldsManagers", r.ManagedFieldsManagers)
	out := make([]string, len(kv))
	for i, l := range kv {
		if i == 0 {
			out[i] = strings.Repeat(" ", dashInd) + "- " + l
		} else {
			out[i] = strings.Repeat(" ", dashInd+2) + l
		}
	}
	return out, nil
}
