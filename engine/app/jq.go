package app

import (
	"fmt"

	"github.com/itchyny/gojq"
)

// MaxJQBytes bounds the text of one jq path expression: an ignore rule is
// a path, not a program.
const MaxJQBytes = 1024

// CheckJQPath checks that expr is a jq expression kdrift can evaluate as a
// path (it is used as path(EXPR)): it parses, compiles, is at most
// MaxJQBytes long and uses only what selecting a path needs (see vetJQ:
// the parent evaluates it, and nothing in it may allocate more than the
// object it reads). The expression sees the object only: no environment
// ($ENV and env are empty) and no further inputs.
func CheckJQPath(expr string) error {
	_, err := CompileJQPath(expr)
	return err
}

// CompileJQPath compiles path(expr) for ignore rules; see CheckJQPath.
func CompileJQPath(expr string) (*gojq.Code, error) {
	if len(expr) > MaxJQBytes {
		return nil, fmt.Errorf("is %d bytes, more than the %d a jq path expression may have", len(expr), MaxJQBytes)
	}
	q, err := gojq.Parse("path(" + expr + ")")
	if err != nil {
		return nil, fmt.Errorf("is not a jq expression: %v", err)
	}
	// The expression alone, to vet what it may cost (see vetJQ).
	inner, err := gojq.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("is not a jq expression: %v", err)
	}
	if err := vetJQ(inner); err != nil {
		return nil, err
	}
	// No environment, no inputs: a repository's expression sees the
	// object and nothing else.
	code, err := gojq.Compile(q, gojq.WithEnvironLoader(func() []string { return nil }))
	if err != nil {
		return nil, fmt.Errorf("does not compile: %v", err)
	}
	return code, nil
}
