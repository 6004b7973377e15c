package app

import (
	"fmt"

	"github.com/itchyny/gojq"
)

// An ignore rule's jq expression is repository content that the parent
// evaluates on every object it compares. A timeout cannot stop one
// allocation (`"x" * 2000000000` asks for 2 GB at once), so the
// expression is held to what a path needs: it navigates and selects,
// it never builds a value. What it may use (vetJQ) allocates no more
// than the object it reads already holds.

// jqFuncs are the functions an ignore rule's expression may call, with
// the numbers of arguments each may take: navigation, selection and
// tests whose result is no larger than their input.
var jqFuncs = map[string][]int{
	"select": {1}, "not": {0}, "empty": {0}, "has": {1}, "in": {1},
	"contains": {1}, "inside": {1}, "startswith": {1}, "endswith": {1},
	"length": {0}, "type": {0}, "keys": {0}, "recurse": {0},
	"values": {0}, "nulls": {0}, "booleans": {0}, "numbers": {0},
	"strings": {0}, "arrays": {0}, "objects": {0}, "iterables": {0},
	"scalars": {0}, "ascii_downcase": {0}, "ascii_upcase": {0},
	"any": {0, 1}, "all": {0, 1}, "first": {0, 1}, "last": {0, 1},
}

// jqOps are the operators it may use: pipes, alternatives and
// comparisons. Arithmetic builds values (string repetition, doubling by
// `. + .`), and assignment is not a path.
var jqOps = map[gojq.Operator]bool{
	gojq.OpPipe: true, gojq.OpComma: true, gojq.OpAlt: true,
	gojq.OpAnd: true, gojq.OpOr: true,
	gojq.OpEq: true, gojq.OpNe: true, gojq.OpGt: true, gojq.OpLt: true, gojq.OpGe: true, gojq.OpLe: true,
}

// jqRefused is an expression that uses what vetJQ does not allow.
type jqRefused string

func (e jqRefused) Error() string {
	return "uses " + string(e) + ", which an ignore rule may not: kdrift evaluates only expressions that select paths " +
		"(.a.b, .[0], .[], .., select(...) with comparisons, has, startswith, contains, length and the like), never ones that build values"
}

// vetJQ checks that a parsed expression stays within what an ignore
// rule's path may use (see jqFuncs and jqOps): no arithmetic, no
// variables or bindings, no function definitions, no reduce, foreach or
// labels, no array, object or interpolated string construction.
func vetJQ(q *gojq.Query) error {
	if q == nil {
		return nil
	}
	switch {
	case q.Meta != nil || len(q.Imports) > 0:
		return jqRefused("a module directive")
	case len(q.FuncDefs) > 0:
		return jqRefused("a function definition (def)")
	case len(q.Patterns) > 0:
		return jqRefused("a variable binding (as $x)")
	case q.Op != 0 && !jqOps[q.Op]:
		return jqRefused(fmt.Sprintf("the operator %q", q.Op.String()))
	}
	if err := vetJQTerm(q.Term); err != nil {
		return err
	}
	if err := vetJQ(q.Left); err != nil {
		return err
	}
	return vetJQ(q.Right)
}

// vetJQTerm is vetJQ for one term and its suffixes.
func vetJQTerm(t *gojq.Term) error {
	if t == nil {
		return nil
	}
	var err error
	switch t.Type {
	case gojq.TermTypeIdentity, gojq.TermTypeRecurse, gojq.TermTypeNull, gojq.TermTypeTrue, gojq.TermTypeFalse, gojq.TermTypeNumber:
	case gojq.TermTypeIndex:
		err = vetJQIndex(t.Index)
	case gojq.TermTypeFunc:
		err = vetJQFunc(t.Func)
	case gojq.TermTypeString:
		if len(t.Str.Queries) > 0 {
			return jqRefused("string interpolation")
		}
	case gojq.TermTypeUnary:
		if t.Unary.Term == nil || t.Unary.Term.Type != gojq.TermTypeNumber || len(t.Unary.Term.SuffixList) > 0 {
			return jqRefused("a sign on something other than a number")
		}
	case gojq.TermTypeIf:
		err = vetJQIf(t.If)
	case gojq.TermTypeTry:
		if err = vetJQ(t.Try.Body); err == nil {
			err = vetJQ(t.Try.Catch)
		}
	case gojq.TermTypeQuery:
		err = vetJQ(t.Query)
	default:
		return jqRefused(jqTermName(t.Type))
	}
	if err != nil {
		return err
	}
	for _, s := range t.SuffixList {
		if err := vetJQIndex(s.Index); err != nil {
			return err
		}
	}
	return nil
}

// vetJQIndex checks the queries of an index or a slice.
func vetJQIndex(ix *gojq.Index) error {
	if ix == nil {
		return nil
	}
	if ix.Str != nil && len(ix.Str.Queries) > 0 {
		return jqRefused("string interpolation")
	}
	if err := vetJQ(ix.Start); err != nil {
		return err
	}
	return vetJQ(ix.End)
}

// vetJQFunc checks a call: a function of jqFuncs with an allowed number
// of arguments, each of them vetted; a variable ($x, $ENV, $__loc__) is
// refused, since nothing binds one.
func vetJQFunc(f *gojq.Func) error {
	arities, ok := jqFuncs[f.Name]
	if !ok {
		if len(f.Name) > 0 && f.Name[0] == '$' {
			return jqRefused("the variable " + f.Name)
		}
		return jqRefused("the function " + f.Name)
	}
	allowed := false
	for _, a := range arities {
		allowed = allowed || a == len(f.Args)
	}
	if !allowed {
		return jqRefused(fmt.Sprintf("the function %s with %d arguments", f.Name, len(f.Args)))
	}
	for _, a := range f.Args {
		if err := vetJQ(a); err != nil {
			return err
		}
	}
	return nil
}

// vetJQIf checks every branch of an if.
func vetJQIf(e *gojq.If) error {
	for _, q := range []*gojq.Query{e.Cond, e.Then, e.Else} {
		if err := vetJQ(q); err != nil {
			return err
		}
	}
	for _, el := range e.Elif {
		if err := vetJQ(el.Cond); err != nil {
			return err
		}
		if err := vetJQ(el.Then); err != nil {
			return err
		}
	}
	return nil
}

// jqTermName names a refused kind of term.
func jqTermName(t gojq.TermType) string {
	switch t {
	case gojq.TermTypeObject:
		return "object construction ({...})"
	case gojq.TermTypeArray:
		return "array construction ([...])"
	case gojq.TermTypeFormat:
		return "a format (@base64 and the like)"
	case gojq.TermTypeReduce:
		return "reduce"
	case gojq.TermTypeForeach:
		return "foreach"
	case gojq.TermTypeLabel, gojq.TermTypeBreak:
		return "label and break"
	}
	return "a construct"
}
