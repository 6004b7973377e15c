package ui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// Every view draws at any terminal size without panicking, and never
// draws more lines than the terminal has.
func TestEveryViewAtManySizes(t *testing.T) {
	paths := [][]string{
		nil,
		{"j", "enter"},
		{"j", "enter", "j", "enter"},
		{"j", "enter", "j", "enter", "u"},
		{"j", "enter", "j", "o"},
		{"j", "h"},
		{"j", "f"},
		{"?"},
		{":", "o", "w", "n", "e", "r", "s", "enter"},
		{":", "o", "w", "n", "e", "r", "s", "enter", "enter"},
	}
	sizes := [][2]int{{1, 1}, {10, 4}, {40, 10}, {80, 24}, {99, 30}, {100, 30}, {250, 80}}
	for _, p := range paths {
		for _, sz := range sizes {
			h := newHarness(t, newFake(), testConfig())
			h.send(windowSize(sz[0], sz[1]))
			h.keys(p...)
			out := h.m.render()
			lines := strings.Split(out, "\n")
			if sz[1] >= 6 && len(lines) > sz[1] {
				t.Errorf("%v at %dx%d: %d lines", p, sz[0], sz[1], len(lines))
			}
			if sz[0] >= 40 {
				for _, l := range lines {
					if w := ansi.StringWidth(l); w > sz[0] {
						t.Errorf("%v at %dx%d: a line is %d wide: %q", p, sz[0], sz[1], w, ansi.Strip(l))
						break
					}
				}
			}
		}
	}
}
