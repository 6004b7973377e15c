package render

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"text/template/parse"

	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// Template functions kdrift adds to every chart template; see instrument.
const (
	tickFunc  = "kdriftTick"
	depthFunc = "kdriftDepth"
)

// maxTemplateFrames bounds the Go stack of a chart render, in frames:
// some 500 nested includes (about 15 frames each), far past any chart's
// helpers and far below a stack that would end the process (which Go
// cannot recover); Helm's own message for a deep recursion grows with the
// square of the depth, which this also bounds.
const maxTemplateFrames = 8_000

// maxIterations bounds the loop iterations of one chart render: a chart
// ranges over lists of values, thousands of items at most.
const maxIterations = 1_000_000

// instrument adds a call to kdriftTick at the start of the body of every
// range, and to kdriftDepth at the start of every define, in every
// template of c and its dependencies. A range over a number (`range
// 1000000000`) calls no other function and so could run, and write, past
// every budget; a define that includes itself through other defines could
// nest until the stack ends the process. The calls are inserted at the
// parser's positions and contain no newline, so Helm's messages keep
// their lines. A template that does not parse is left for Helm to report.
func instrument(c *chart.Chart) {
	for _, f := range c.Templates {
		f.Data = []byte(instrumentText(f.Name, string(f.Data)))
	}
	for _, d := range c.Dependencies() {
		instrument(d)
	}
}

// instrumentText is instrument for one template's text.
func instrumentText(name, text string) string {
	if !strings.Contains(text, "range") && !strings.Contains(text, "define") && !strings.Contains(text, "block") {
		return text
	}
	tr := parse.New(name)
	tr.Mode = parse.SkipFuncCheck | parse.ParseComments
	trees := map[string]*parse.Tree{}
	if _, err := tr.Parse(text, "", "", trees); err != nil {
		return text
	}
	type insert struct {
		at   int
		call string
	}
	var ins []insert
	var walk func(n parse.Node)
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n == nil {
				return
			}
			for _, c := range n.Nodes {
				walk(c)
			}
		case *parse.RangeNode:
			if n.List != nil {
				ins = append(ins, insert{int(n.List.Pos), fmt.Sprintf("%s %d", tickFunc, textSize(n.List))})
			}
			walk(n.List)
			walk(n.ElseList)
		case *parse.IfNode:
			walk(n.List)
			walk(n.ElseList)
		case *parse.WithNode:
			walk(n.List)
			walk(n.ElseList)
		}
	}
	for tname, t := range trees {
		if t.Root == nil {
			continue
		}
		if tname != name {
			ins = append(ins, insert{int(t.Root.Pos), depthFunc})
		}
		walk(t.Root)
	}
	slices.SortFunc(ins, func(a, b insert) int { return b.at - a.at })
	for _, in := range ins {
		if in.at < 0 || in.at > len(text) {
			return text
		}
		// "{{-" trims the whitespace before, as the delimiter it precedes
		// (or the range's own "-}}") did.
		text = text[:in.at] + "{{- " + in.call + "}}" + text[in.at:]
	}
	return text
}

// textSize is how many bytes of template text a list writes, ranges
// inside it left out (they count their own).
func textSize(n parse.Node) int {
	size := 0
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return 0
		}
		for _, c := range n.Nodes {
			size += textSize(c)
		}
	case *parse.TextNode:
		size = len(n.Text)
	case *parse.IfNode:
		size = textSize(n.List) + textSize(n.ElseList)
	case *parse.WithNode:
		size = textSize(n.List) + textSize(n.ElseList)
	}
	return size
}

// tickFuncs are the functions instrument calls: kdriftTick(size) stops a
// loop once the render's context ends, after maxIterations, or once the
// loops' text would pass the rendered size budget; kdriftDepth stops a
// recursion at maxTemplateFrames. Both return "".
func tickFuncs(ctx context.Context, fsys *treeFS) map[string]any {
	var n, size int64
	return map[string]any{
		tickFunc: func(text int) (string, error) {
			n++
			size += int64(text)
			if n%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return "", context.Cause(ctx)
				}
			}
			switch {
			case n > maxIterations:
				return "", fsys.refuse(limitf("", "template loop", "the chart's templates ran more than %d loop iterations", maxIterations))
			case size > fsys.opts.MaxRenderBytes:
				return "", fsys.refuse(limitf("", "rendered size", "the chart's loops write more than %d bytes", fsys.opts.MaxRenderBytes))
			}
			return "", nil
		},
		depthFunc: func() (string, error) {
			var pc [1]uintptr
			if runtime.Callers(maxTemplateFrames, pc[:]) > 0 {
				return "", fsys.refuse(limitf("", "template depth", "the chart's templates nest more than %d stack frames deep (a define that includes itself?)", maxTemplateFrames))
			}
			if err := ctx.Err(); err != nil {
				return "", context.Cause(ctx)
			}
			return "", nil
		},
	}
}
