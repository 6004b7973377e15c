package ui

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/status"
)

// hostileText is what a commit or a cluster object can put in any field:
// CSI (colour, clear screen), OSC (window title, clipboard write,
// hyperlink), a C1 control and a right-to-left override.
const hostileText = "\x1b[41mRED\x1b[2J\x1b]0;TITLE\a\x1b]52;c;aGk=\a\x1b]8;;http://x\x1b\\L\x1b]8;;\x1b\\\u009b1m\u202eRTL"

// poison appends hostileText to every plain string v reaches (typed
// strings, the enums, stay as they are), through pointers, structs,
// slices and map values.
func poison(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			poison(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				poison(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			poison(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			poison(e)
			v.SetMapIndex(k, e)
		}
	case reflect.String:
		if v.Type() == reflect.TypeFor[string]() && v.CanSet() {
			v.SetString(v.String() + hostileText)
		}
	}
}

// hostileFake is newFake with hostileText in every string the views show.
func hostileFake() *fakeBackend {
	be := newFake()
	poison(reflect.ValueOf(&be.apps))
	poison(reflect.ValueOf(&be.history))
	poison(reflect.ValueOf(&be.owners))
	poison(reflect.ValueOf(&be.plan))
	poison(reflect.ValueOf(&be.preview))
	d := deployDetail()
	poison(reflect.ValueOf(&d))
	be.details = map[status.ObjectRef]status.ObjectDetail{d.Resource.Ref: d}
	return be
}

// sgr is a style sequence the theme writes; in a NO_COLOR frame it never
// sets a colour.
var sgr = regexp.MustCompile("\x1b\\[[0-9;]*m")

// rawControl is the first character of frame a terminal would act on:
// an ESC that does not start a style, a colour the theme cannot have
// written without colours, a C0 or C1 control, DEL or a bidi override.
func rawControl(frame string) (string, bool) {
	if strings.Contains(frame, "\x1b[41m") {
		return `\x1b[41m`, true
	}
	for _, r := range sgr.ReplaceAllString(frame, "") {
		switch {
		case r == '\n':
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
			return string(r), true
		}
	}
	return "", false
}

// TestEveryViewShowsHostileTextEscaped walks every view, as
// TestEveryViewAtManySizes does, with CSI, OSC and U+202E in every field
// of every app, resource, line, commit, owner and plan step, and finds no
// raw control character in any frame.
func TestEveryViewShowsHostileTextEscaped(t *testing.T) {
	paths := [][]string{
		nil,
		{"j", "enter"},
		{"j", "enter", "j", "enter"},
		{"j", "enter", "j", "enter", "u"},
		{"j", "enter", "j", "o"},
		{"j", "enter", "j", "f"},
		{"j", "h"},
		{"j", "h", "j", "enter"},
		{"j", "f"},
		{"j", "u"},
		{"j", "s"},
		{"j", "i"},
		{"j", "/", "R"},
		{"?"},
		{":", "o", "w", "n", "e", "r", "s", "enter"},
		{":", "o", "w", "n", "e", "r", "s", "enter", "enter"},
	}
	for _, p := range paths {
		for _, sz := range [][2]int{{80, 24}, {250, 80}} {
			h := newHarness(t, hostileFake(), testConfig())
			h.send(windowSize(sz[0], sz[1]))
			h.keys(p...)
			frame := h.m.render()
			if c, bad := rawControl(frame); bad {
				t.Errorf("%v at %dx%d (%s): raw %q in the frame:\n%s", p, sz[0], sz[1], h.m.Breadcrumb(), c, strings.ReplaceAll(frame, "\x1b", "␛"))
			}
			if !strings.Contains(frame, `\e[41m`) && p == nil {
				t.Errorf("the apps view does not show the escaped text:\n%s", frame)
			}
		}
	}
}
