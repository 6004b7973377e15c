package diff

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/itchyny/gojq"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/app"
)

// JQ budgets: an ignore rule's expression comes from the repository, so
// its evaluation on one object is bounded in time and in paths.
const (
	// JQTimeout bounds one expression on one object.
	JQTimeout = 100 * time.Millisecond
	// JQMaxPaths bounds the paths one expression yields on one object.
	JQMaxPaths = 1000
)

// jqCodes caches compiled expressions: rules are the same on every pass.
var jqCodes sync.Map // string -> *gojq.Code

func jqCode(expr string) (*gojq.Code, error) {
	if c, ok := jqCodes.Load(expr); ok {
		return c.(*gojq.Code), nil
	}
	c, err := app.CompileJQPath(expr)
	if err != nil {
		return nil, err
	}
	jqCodes.Store(expr, c)
	return c, nil
}

// JQPointers evaluates a jq path expression (as in Argo CD's
// jqPathExpressions) on obj and returns the JSON pointers of the paths it
// selects. An expression that fails on this object, runs past JQTimeout
// or yields more than JQMaxPaths paths is an error; callers treat it as
// selecting nothing.
func JQPointers(expr string, obj map[string]any) ([]string, error) {
	code, err := jqCode(expr)
	if err != nil {
		return nil, err
	}
	// gojq reads JSON types: numbers as float64 or int, not int64.
	js, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var input any
	if err := json.Unmarshal(js, &input); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), JQTimeout)
	defer cancel()
	iter := code.RunWithContext(ctx, input)
	var out []string
	for {
		v, ok := iter.Next()
		if !ok {
			return out, nil
		}
		if err, isErr := v.(error); isErr {
			return nil, fmt.Errorf("jq %q: %w", expr, err)
		}
		path, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("jq %q: yields %T, not a path", expr, v)
		}
		if len(out) >= JQMaxPaths {
			return nil, fmt.Errorf("jq %q: selects more than %d paths", expr, JQMaxPaths)
		}
		var b strings.Builder
		for _, step := range path {
			b.WriteByte('/')
			switch s := step.(type) {
			case string:
				b.WriteString(strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1"))
			case int:
				fmt.Fprint(&b, s)
			case float64:
				fmt.Fprint(&b, int(s))
			default:
				return nil, fmt.Errorf("jq %q: path step %v is not a key or an index", expr, step)
			}
		}
		out = append(out, b.String())
	}
}

// ExpandJQ returns rules with each rule's jqPathExpressions evaluated on
// the given objects (desired, live; nil ones skipped) and added to its
// JSONPointers, so that everything downstream (compare, hand-over, the
// apply that leaves ignored fields out) sees pointers only. Rules without
// expressions come back as they are; rules is never modified.
func ExpandJQ(rules []app.IgnoreRule, objs ...*unstructured.Unstructured) []app.IgnoreRule {
	has := false
	for _, r := range rules {
		if len(r.JQPathExpressions) > 0 {
			has = true
			break
		}
	}
	if !has {
		return rules
	}
	out := make([]app.IgnoreRule, len(rules))
	for i, r := range rules {
		out[i] = r
		if len(r.JQPathExpressions) == 0 {
			continue
		}
		ptrs := append([]string(nil), r.JSONPointers...)
		seen := map[string]bool{}
		for _, p := range ptrs {
			seen[p] = true
		}
		for _, o := range objs {
			if o == nil {
				continue
			}
			for _, expr := range r.JQPathExpressions {
				got, err := JQPointers(expr, o.Object)
				if err != nil {
					continue // selects nothing on this object, as in Argo CD
				}
				for _, p := range got {
					if !seen[p] {
						seen[p] = true
						ptrs = append(ptrs, p)
					}
				}
			}
		}
		out[i].JSONPointers = ptrs
	}
	return out
}
