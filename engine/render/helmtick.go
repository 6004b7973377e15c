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
	tplFunc   = "kdriftTpl"
	noTplFunc = "kdriftNoTpl"
)

// maxTemplateFrames bounds the Go stack of a chart render, in frames:
// some 500 nested includes (about 15 frames each), far past any chart's
// helpers and far below a stack that would end the process (which Go
// cannot recover); Helm's own message for a deep recursion grows with the
// square of the depth, which this also bounds.
const maxTemplateFrames = 8_000

// maxTplFrames bounds the Go stack at a call of tpl, in frames: Helm's tpl
// clones the chart's whole template set at each call, so a value that
// calls tpl on itself grows the render's memory with every level, and at
// maxTemplateFrames it can pass the render worker's memory budget first
// (the render then ends without saying why). Charts call tpl from a few
// includes deep, a few hundred frames at most.
const maxTplFrames = 2_000

// maxIterations bounds the loop iterations of one chart render: a chart
// ranges over lists of values, thousands of items at most.
const maxIterations = 1_000_000

// instrument adds a call to kdriftTick at the start of the body of every
// range, and to kdriftDepth at the start of every define, in every
// template of c and its dependencies, and passes the text of every `tpl`
// through kdriftTpl, which checks the depth and instruments that text the
// same way. A range over a number (`range 1000000000`) calls no other
// function and so could run, and write, past every budget; a define that
// includes itself through other defines, or a value that calls tpl on
// itself, could nest until the stack ends the process. The calls are
// inserted at the
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
	if !strings.Contains(text, "range") && !strings.Contains(text, "define") && !strings.Contains(text, "block") && !strings.Contains(text, "tpl") {
		return text
	}
	tr := parse.New(name)
	tr.Mode = parse.SkipFuncCheck | parse.ParseComments
	trees := map[string]*parse.Tree{}
	if _, err := tr.Parse(text, "", "", trees); err != nil {
		return text
	}
	// An insert puts text at at, in place of cut bytes.
	type insert struct {
		at, cut int
		text    string
	}
	var ins []insert
	// "{{-" trims the whitespace before, as the delimiter it precedes (or
	// the range's own "-}}") did.
	call := func(at int, call string) insert { return insert{at: at, text: "{{- " + call + "}}"} }
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
		case *parse.ActionNode:
			walk(n.Pipe)
		case *parse.TemplateNode:
			walk(n.Pipe)
		case *parse.PipeNode:
			if n == nil {
				return
			}
			for _, c := range n.Cmds {
				walk(c)
			}
		case *parse.ChainNode:
			walk(n.Node)
		case *parse.CommandNode:
			for _, a := range n.Args {
				walk(a)
			}
			if len(n.Args) < 2 {
				return
			}
			if id, ok := n.Args[0].(*parse.IdentifierNode); !ok || id.Ident != "tpl" {
				return
			}
			// tpl TEXT ... becomes tpl (kdriftTpl TEXT) ...; a TEXT
			// whose end cannot be told is refused rather than left
			// unbounded.
			from, to := argSpan(text, n.Args[1])
			if from < 0 {
				ins = append(ins, insert{at: int(n.Args[0].Position()), cut: len("tpl"), text: noTplFunc})
				return
			}
			ins = append(ins, insert{at: to, text: ")"}, insert{at: from, text: "(" + tplFunc + " "})
		case *parse.RangeNode:
			if n.List != nil {
				ins = append(ins, call(int(n.List.Pos), fmt.Sprintf("%s %d", tickFunc, textSize(n.List))))
			}
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.IfNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.WithNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		}
	}
	for tname, t := range trees {
		if t.Root == nil {
			continue
		}
		if tname != name {
			ins = append(ins, call(int(t.Root.Pos), depthFunc))
		}
		walk(t.Root)
	}
	// Later positions first; at one position, the insert collected first
	// ends up last.
	slices.SortStableFunc(ins, func(a, b insert) int { return b.at - a.at })
	for _, in := range ins {
		if in.at < 0 || in.at+in.cut > len(text) {
			return text
		}
		text = text[:in.at] + in.text + text[in.at+in.cut:]
	}
	return text
}

// argSpan is where in text the argument n of a command starts and ends,
// or -1, -1 when that cannot be told. The parser records only where a
// node starts, and not even that for a parenthesized pipeline (it
// records its first command), a chain (its first field) or a field (its
// last name): the end is
// where the node's own text ends, or the parenthesis that closes it.
func argSpan(text string, n parse.Node) (from, to int) {
	from = argStart(text, n)
	if from < 0 || from >= len(text) {
		return -1, -1
	}
	s := n.String()
	if _, ok := n.(*parse.PipeNode); ok {
		s = "(" + s + ")"
	}
	if strings.HasPrefix(text[from:], s) {
		return from, from + len(s)
	}
	if text[from] != '(' {
		return -1, -1
	}
	to = closeParen(text, from)
	if to < 0 {
		return -1, -1
	}
	if c, ok := n.(*parse.ChainNode); ok {
		for _, f := range c.Field {
			if !strings.HasPrefix(text[to:], "."+f) {
				return -1, -1
			}
			to += 1 + len(f)
		}
	}
	return from, to
}

// argStart is where in text the argument n starts, or -1.
func argStart(text string, n parse.Node) int {
	switch n := n.(type) {
	case *parse.ChainNode:
		return argStart(text, n.Node)
	case *parse.PipeNode:
		i := int(n.Pos)
		for i > 0 && i <= len(text) && strings.ContainsRune(" \t\r\n", rune(text[i-1])) {
			i--
		}
		if i > 0 && i <= len(text) && text[i-1] == '(' {
			return i - 1
		}
		return -1
	}
	// A field or variable with more than one name records where its last
	// name starts.
	s, pos := n.String(), int(n.Position())
	return strings.LastIndex(text[:min(len(text), pos+len(s))], s)
}

// closeParen is the position after the parenthesis that closes the one
// at text[open], skipping string and character constants; -1 if none.
func closeParen(text string, open int) int {
	depth := 0
	for i := open; i < len(text); i++ {
		switch c := text[i]; c {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return i + 1
			}
		case '"', '\'', '`':
			for i++; i < len(text) && text[i] != c; i++ {
				if c != '`' && text[i] == '\\' {
					i++
				}
			}
		}
	}
	return -1
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
// recursion at maxTemplateFrames, and returns ""; kdriftTpl(text) does
// the same at maxTplFrames and returns text instrumented for tpl to
// parse; kdriftNoTpl
// stands for a tpl whose text instrument could not find.
func tickFuncs(ctx context.Context, fsys *treeFS) map[string]any {
	var n, size int64
	deep := func(frames int) error {
		var pc [1]uintptr
		if runtime.Callers(frames, pc[:]) > 0 {
			return fsys.refuse(limitf("", "template depth", "the chart's templates nest more than %d stack frames deep (a define that includes itself, or a value that calls tpl on itself?)", frames))
		}
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		return nil
	}
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
			return "", deep(maxTemplateFrames)
		},
		tplFunc: func(text string) (string, error) {
			if err := deep(maxTplFrames); err != nil {
				return "", err
			}
			return instrumentText("tpl", text), nil
		},
		noTplFunc: func(...any) (string, error) {
			return "", fsys.refuse(limitf("", "template depth", "kdrift cannot bound this call of tpl: write its text argument as a value, a variable or a parenthesized pipeline"))
		},
	}
}
