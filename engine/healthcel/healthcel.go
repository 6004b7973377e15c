// Package healthcel compiles and evaluates the CEL expressions a team
// writes to judge the health of a kind (an App's spec.health.checks, in
// the manner of Flux's healthCheckExprs). An expression sees the live
// object as self and its top-level fields as metadata, spec and status
// (an empty map when the object has none), and must give a bool.
//
// Expressions come from a repository, which is hostile input: each is
// bounded in length, compiled once (kept by its text), and every
// evaluation is bounded in cost, so a commit cannot make the engine spin.
package healthcel

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

// Bounds on expressions.
const (
	// MaxLength is the longest expression kdrift compiles, in bytes.
	MaxLength = 4096
	// CostLimit bounds one evaluation (cel-go's runtime cost units,
	// about one per operation): a filter over a few hundred conditions
	// fits, a quadratic walk over a large object does not.
	CostLimit = 100_000
	// EvalTimeout bounds one evaluation in wall time, a second guard
	// behind CostLimit.
	EvalTimeout = 100 * time.Millisecond
	// cacheSize bounds the compiled expressions kept.
	cacheSize = 1024
)

// Expr is one compiled expression.
type Expr struct {
	src  string
	prog cel.Program
}

// String is the expression's source.
func (e *Expr) String() string { return e.src }

var (
	envOnce sync.Once
	env     *cel.Env
	envErr  error

	mu    sync.Mutex
	cache = map[string]*Expr{}
)

func newEnv() (*cel.Env, error) {
	envOnce.Do(func() {
		env, envErr = cel.NewEnv(
			cel.Variable("self", cel.DynType),
			cel.Variable("metadata", cel.DynType),
			cel.Variable("spec", cel.DynType),
			cel.Variable("status", cel.DynType),
		)
	})
	return env, envErr
}

// Compile compiles an expression, or returns from the cache the one
// compiled before from the same text. The error says what is wrong in
// cel-go's words (with line and column inside the expression).
func Compile(src string) (*Expr, error) {
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("is empty")
	}
	if len(src) > MaxLength {
		return nil, fmt.Errorf("is %d bytes, more than the %d an expression may have", len(src), MaxLength)
	}
	mu.Lock()
	e, ok := cache[src]
	mu.Unlock()
	if ok {
		return e, nil
	}
	en, err := newEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := en.Compile(src)
	if iss != nil && iss.Err() != nil {
		return nil, errors.New(strings.ReplaceAll(iss.Err().Error(), "\n", " "))
	}
	if t := ast.OutputType(); t != cel.BoolType && t != cel.DynType {
		return nil, fmt.Errorf("gives %s, not a bool", t)
	}
	prog, err := en.Program(ast, cel.CostLimit(CostLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, err
	}
	e = &Expr{src: src, prog: prog}
	mu.Lock()
	if len(cache) >= cacheSize {
		clear(cache)
	}
	cache[src] = e
	mu.Unlock()
	return e, nil
}

// Eval evaluates the expression against a live object (its JSON form).
// A result that is not a bool is an error.
func (e *Expr) Eval(obj map[string]any) (bool, error) {
	part := func(k string) any {
		if v, ok := obj[k]; ok && v != nil {
			return v
		}
		return map[string]any{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), EvalTimeout)
	defer cancel()
	out, _, err := e.prog.ContextEval(ctx, map[string]any{
		"self": obj, "metadata": part("metadata"), "spec": part("spec"), "status": part("status"),
	})
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("gave %v (%s), not a bool", out, out.Type())
	}
	return bool(b), nil
}
