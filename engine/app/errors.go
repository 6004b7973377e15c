package app

import (
	"fmt"
	"strings"
)

// Error is one problem with one App document: where it is, which field is
// wrong, what is wrong with it and what to do about it.
type Error struct {
	// File is the App file, relative to the repository root.
	File string
	// Doc is the 1-based document number inside File; 0 when unknown.
	Doc int
	// Line is the 1-based line of File at fault; 0 when unknown.
	Line int
	// App is the App's metadata.name when it could be read.
	App string
	// Field is the path of the offending field, such as spec.path; empty
	// when the whole document is at fault.
	Field string
	// Problem says what is wrong.
	Problem string
	// Fix says what to do about it.
	Fix string
}

// Error renders `FILE:LINE: App "NAME": FIELD: PROBLEM; FIX` (with
// "(document N)" instead of the line when only that is known).
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	switch {
	case e.Line > 0:
		fmt.Fprintf(&b, ":%d", e.Line)
	case e.Doc > 0:
		fmt.Fprintf(&b, " (document %d)", e.Doc)
	}
	b.WriteString(": ")
	if e.App != "" {
		fmt.Fprintf(&b, "App %q: ", e.App)
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Problem)
	if e.Fix != "" {
		b.WriteString("; ")
		b.WriteString(e.Fix)
	}
	return b.String()
}
