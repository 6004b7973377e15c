package render

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
)

// boundedFuncs are the template functions kdrift puts over Sprig's in a
// chart render. A repository's templates are untrusted: every function
// stops once the render's context ends (so a loop that calls any function
// ends at the render's time budget instead of running on), and no
// function may return a string or list larger than the render's output
// budget; the functions that allocate by a count (repeat, until, seq,
// indent, the random strings) check the count before they allocate.
// text/template turns the panics here into the template's error; the
// budget is also recorded in fsys, which the caller reports.
func boundedFuncs(ctx context.Context, fsys *treeFS) template.FuncMap {
	limit := fsys.opts.MaxRenderBytes
	check := func(name string, n int64) {
		if n > limit || n < 0 {
			// Recorded first: Helm rewords the template's error.
			panic(fsys.refuse(limitf("", "rendered size", "template function %s would make %d bytes or items, more than %d", name, n, limit)))
		}
	}
	out := template.FuncMap{}
	for name, fn := range sprig.TxtFuncMap() {
		switch name {
		case "env", "expandenv", "getHostByName":
			continue // Helm removes them or makes them return nothing
		}
		out[name] = guardFunc(ctx, name, fn, check)
	}
	counted := func(name string, f func(int) string) func(int) string {
		return func(n int) string {
			check(name, int64(n))
			return f(n)
		}
	}
	orig := sprig.TxtFuncMap()
	out["repeat"] = func(count int, s string) string {
		check("repeat", int64(count)*int64(max(len(s), 1)))
		return strings.Repeat(s, count)
	}
	for _, name := range []string{"randAlphaNum", "randAlpha", "randAscii", "randNumeric"} {
		out[name] = counted(name, orig[name].(func(int) string))
	}
	randBytes := orig["randBytes"].(func(int) (string, error))
	out["randBytes"] = func(n int) (string, error) {
		check("randBytes", int64(n))
		return randBytes(n)
	}
	until := orig["until"].(func(int) []int)
	out["until"] = func(n int) []int {
		check("until", int64(n))
		return until(n)
	}
	untilStep := orig["untilStep"].(func(int, int, int) []int)
	out["untilStep"] = func(start, stop, step int) []int {
		if step != 0 {
			check("untilStep", (int64(stop)-int64(start))/int64(step))
		}
		return untilStep(start, stop, step)
	}
	seq := orig["seq"].(func(...int) string)
	out["seq"] = func(p ...int) string {
		lo, hi, step := int64(1), int64(0), int64(1)
		switch len(p) {
		case 1:
			hi = int64(p[0])
		case 2:
			lo, hi = int64(p[0]), int64(p[1])
		case 3:
			lo, step, hi = int64(p[0]), int64(p[1]), int64(p[2])
		}
		if step != 0 {
			n := (hi - lo) / step
			check("seq", n*8)
		}
		return seq(p...)
	}
	indent := orig["indent"].(func(int, string) string)
	out["indent"] = func(n int, s string) string {
		check("indent", int64(n)*int64(strings.Count(s, "\n")+1)+int64(len(s)))
		return indent(n, s)
	}
	nindent := orig["nindent"].(func(int, string) string)
	out["nindent"] = func(n int, s string) string {
		check("nindent", int64(n)*int64(strings.Count(s, "\n")+1)+int64(len(s)))
		return nindent(n, s)
	}
	return out
}

// guardFunc wraps a template function so that it stops once ctx ends and
// refuses a result past the output budget.
func guardFunc(ctx context.Context, name string, fn any, check func(string, int64)) any {
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func {
		return fn
	}
	return reflect.MakeFunc(v.Type(), func(args []reflect.Value) []reflect.Value {
		if err := ctx.Err(); err != nil {
			panic(fmt.Errorf("template function %s: %w", name, context.Cause(ctx)))
		}
		var res []reflect.Value
		if v.Type().IsVariadic() {
			res = v.CallSlice(args)
		} else {
			res = v.Call(args)
		}
		if len(res) > 0 {
			switch r := res[0]; r.Kind() {
			case reflect.String, reflect.Slice, reflect.Map:
				check(name, int64(r.Len()))
			}
		}
		return res
	}).Interface()
}
