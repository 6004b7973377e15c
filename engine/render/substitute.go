package render

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/fluxcd/pkg/envsubst"
	"github.com/fluxcd/pkg/envsubst/parse"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// SubstituteOptOut is the label or annotation whose value "disabled"
// leaves an object out of Flux's variable substitution.
const SubstituteOptOut = "kustomize.toolkit.fluxcd.io/substitute"

// MaxSubstituteNesting bounds how deeply ${...} expressions nest in one
// object (${a:=${b:=...}}): the expression parser recurses on each level,
// and no manifest nests more than a few.
const MaxSubstituteNesting = 32

// varName is Flux's rule for a substitution variable's name.
var varName = regexp.MustCompile(`^[_[:alpha:]][_[:alpha:][:digit:]]*$`)

// CheckSubstitute refuses variables Flux refuses: a name that is not
// [_a-zA-Z][_a-zA-Z0-9]*.
func CheckSubstitute(vars map[string]string) error {
	for name := range vars {
		if !varName.MatchString(name) {
			return &OverlayError{Field: "postBuild.substitute." + name, Problem: "is not a valid variable name (Flux requires " + varName.String() + ")", Fix: "rename the variable"}
		}
	}
	return nil
}

// postBuild applies the overlay's steps that follow the build, as Flux
// does: variable substitution in each object that does not opt out, then
// commonMetadata. The total output stays within opts.MaxRenderBytes.
func (o *Overlay) postBuild(objs []*unstructured.Unstructured, opts Options) ([]*unstructured.Unstructured, error) {
	if o == nil {
		return objs, nil
	}
	if len(o.Substitute) > 0 {
		if err := CheckSubstitute(o.Substitute); err != nil {
			return nil, err
		}
		vars := make(map[string]string, len(o.Substitute))
		for k, v := range o.Substitute {
			vars[k] = strings.ReplaceAll(v, "\n", "")
		}
		var total int64
		for i, obj := range objs {
			if obj.GetLabels()[SubstituteOptOut] == "disabled" || obj.GetAnnotations()[SubstituteOptOut] == "disabled" {
				continue
			}
			out, err := substitute(obj, vars, opts.MaxRenderBytes-total)
			if err != nil {
				return nil, fmt.Errorf("%s/%s: %w", obj.GetKind(), obj.GetName(), err)
			}
			objs[i] = out
			js, err := out.MarshalJSON()
			if err != nil {
				return nil, err
			}
			if total += int64(len(js)); total > opts.MaxRenderBytes {
				return nil, limitf("", "rendered size", "the objects after variable substitution come to more than %d bytes", opts.MaxRenderBytes)
			}
		}
	}
	for _, obj := range objs {
		if len(o.MetadataLabels) > 0 {
			obj.SetLabels(merged(obj.GetLabels(), o.MetadataLabels))
		}
		if len(o.MetadataAnnotations) > 0 {
			obj.SetAnnotations(merged(obj.GetAnnotations(), o.MetadataAnnotations))
		}
	}
	return objs, nil
}

// substitute runs Flux's substitution over obj as YAML: ${var} and the
// bash forms Flux knows (${var:=default}, ${var:-default}, ...), an unset
// variable without a default becoming empty. Before it runs, the output's
// size is bounded from the parsed expressions and the variables' values,
// so that no object can expand past budget.
func substitute(obj *unstructured.Unstructured, vars map[string]string, budget int64) (*unstructured.Unstructured, error) {
	data, err := yaml.Marshal(obj.Object)
	if err != nil {
		return nil, err
	}
	text := string(data)
	if !strings.Contains(text, "${") {
		return obj, nil
	}
	if depth := nesting(text); depth > MaxSubstituteNesting {
		return nil, limitf("", "substitution nesting", "${...} expressions nest %d deep, more than %d", depth, MaxSubstituteNesting)
	}
	tree, err := parse.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("variable substitution failed: %w", err)
	}
	c := bound(tree.Root, vars)
	if c.size > budget {
		return nil, limitf("", "rendered size", "variable substitution could expand the object to %d bytes, more than the %d left of the render's budget", c.size, budget)
	}
	if c.work > MaxSubstituteWork {
		return nil, limitf("", "substitution work", "its ${var#pattern} and ${var%%pattern} forms could compare %d bytes, more than %d", c.work, MaxSubstituteWork)
	}
	out, err := envsubst.Eval(text, func(name string) (string, bool) { return vars[name], true })
	if err != nil {
		return nil, fmt.Errorf("variable substitution failed: %w", err)
	}
	// A variable's value is YAML once substituted: "[a,a,...]" is nodes
	// the size bound does not see.
	if _, ok := yamlNodes([]byte(out), DefaultMaxFileNodes, DefaultMaxDepth); !ok {
		return nil, limitf("", "nodes", "variable substitution makes the object more than %d YAML nodes (or nested deeper than %d)", DefaultMaxFileNodes, DefaultMaxDepth)
	}
	js, err := yaml.YAMLToJSON([]byte(out))
	if err != nil {
		return nil, fmt.Errorf("the object is no longer YAML after variable substitution: %w", err)
	}
	res := &unstructured.Unstructured{}
	if err := res.UnmarshalJSON(js); err != nil {
		return nil, fmt.Errorf("the object is no longer an object after variable substitution: %w", err)
	}
	return res, nil
}

// nesting is how deeply ${ opens inside another ${ in s, counting braces
// the way the expression parser pairs them.
func nesting(s string) int {
	depth, deepest := 0, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '$' && i+1 < len(s) && s[i+1] == '{':
			depth++
			deepest = max(deepest, depth)
			i++
		case s[i] == '}' && depth > 0:
			depth--
		}
	}
	return deepest
}

// MaxSubstituteWork bounds the pattern matching Flux's trim forms
// (${var#pattern}, ${var%%pattern}, ...) may do in one object, counted as
// bytes compared: each tries the pattern on every prefix or suffix of the
// value, a cost that grows with the square of its length.
const MaxSubstituteWork = 100_000_000

// cost bounds what expanding a tree does: the size of its output and the
// bytes its pattern matching compares.
type cost struct{ size, work int64 }

// bound is an upper bound of what node costs to expand with vars.
func bound(node parse.Node, vars map[string]string) cost {
	switch n := node.(type) {
	case *parse.TextNode:
		return cost{size: int64(len(n.Value))}
	case *parse.ListNode:
		var sum cost
		for _, c := range n.Nodes {
			b := bound(c, vars)
			sum.size += b.size
			sum.work += b.work
		}
		return sum
	case *parse.FuncNode:
		v := int64(len(vars[n.Param]))
		args := make([]int64, len(n.Args))
		var sum, work int64
		for i, a := range n.Args {
			b := bound(a, vars)
			args[i] = b.size
			sum += b.size
			work += b.work
		}
		switch n.Name {
		case "/", "/#", "/%":
			// one replacement
			return cost{v + sum, work + v*(sum+1)}
		case "//":
			// every match replaced, an empty pattern matching between
			// each byte
			repl := int64(0)
			if len(args) > 1 {
				repl = args[1]
			}
			return cost{v + (v+1)*repl, work + v*(sum+1)}
		case "#", "##", "%", "%%":
			if len(args) == 0 {
				return cost{20, work} // a length
			}
			// the pattern tried on every prefix or suffix
			return cost{v, work + v*v*(sum+1)}
		}
		return cost{max(v, sum) + 20, work}
	}
	return cost{}
}

// merged is m with over's entries set over it (m may be nil).
func merged(m, over map[string]string) map[string]string {
	if m == nil {
		m = make(map[string]string, len(over))
	}
	for k, v := range over {
		m[k] = v
	}
	return m
}
