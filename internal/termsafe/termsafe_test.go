package termsafe

import (
	"bytes"
	"strings"
	"testing"

	"kdrift.dev/kdrift/internal/hostile"
)

// hostile holds what a commit or a cluster object can carry: CSI, OSC
// (title, clipboard, hyperlink), C1, DEL, bidi overrides and a broken
// UTF-8 byte.
var hostileText = []string{
	"Evil \x1b[32m<e@x>",
	"x\x1b[41mRED\x1b]0;TITLE\a.yaml",
	"body \x1b[2J",
	"\x1b]52;c;aGk=\x07",
	"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\",
	"abc\u202edcba",
	"\u2066\u2069\u200e\u200f\u061c\u202a",
	"c1 \u009b31m \u0085",
	"del\x7f bs\b cr\r nul\x00",
	"bad \x9b utf8",
}

func rawControl(s string, layout bool) (rune, bool) {
	for _, r := range s {
		if (r == '\n' || r == '\t') && layout {
			continue
		}
		if unsafe(r, false) || r == 0xfffd {
			return r, true
		}
	}
	return 0, false
}

func TestLineAndTextEscapeEveryControl(t *testing.T) {
	for _, h := range append(hostile.TerminalText, hostileText...) {
		if r, bad := rawControl(Line(h+"\n\t"), false); bad {
			t.Errorf("Line(%q) keeps %U", h, r)
		}
		if r, bad := hostile.RawControl(Text(h + "\n\t")); bad {
			t.Errorf("Text(%q) keeps %U", h, r)
		}
		if !strings.HasSuffix(Text(h+"\n\t"), "\n\t") {
			t.Errorf("Text(%q) lost the tab or newline", h)
		}
	}
	for in, want := range map[string]string{
		"Evil \x1b[32m<e@x>": `Evil \e[32m<e@x>`,
		"a\u202eb":           `a\u202eb`,
		"a\tb\nc":            `a\tb\nc`,
		"\x9b":               `\x9b`,
		"\u009b":             `\u009b`,
		"ünïcødé ok":         "ünïcødé ok",
	} {
		if got := Line(in); got != want {
			t.Errorf("Line(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestWriterEscapesAcrossWrites: a character split between writes is
// escaped whole, and a printable one split so passes unchanged.
func TestWriterEscapesAcrossWrites(t *testing.T) {
	in := "ok ü \u202e end \x1b[2J\n"
	for cut := 0; cut <= len(in); cut++ {
		var b bytes.Buffer
		w := NewWriter(&b)
		for _, part := range []string{in[:cut], in[cut:]} {
			if n, err := w.Write([]byte(part)); err != nil || n != len(part) {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if want := Text(in); b.String() != want {
			t.Errorf("cut at %d: %q, want %q", cut, b.String(), want)
		}
	}
	var b bytes.Buffer
	w := NewWriter(&b)
	_, _ = w.Write([]byte("x\xe2\x80"))
	_ = w.Flush()
	if b.String() != `x\xe2\x80` {
		t.Errorf("a cut character at the end = %q", b.String())
	}
}

func TestStyledKeepsOnlySGR(t *testing.T) {
	in := "\x1b[1;38;5;2mok\x1b[m " + hostileText[1] + hostileText[3] + hostileText[4]
	got := Styled(in)
	if !strings.HasPrefix(got, "\x1b[1;38;5;2mok\x1b[m ") {
		t.Errorf("Styled lost the style: %q", got)
	}
	rest := strings.TrimPrefix(got, "\x1b[1;38;5;2mok\x1b[m ")
	// The hostile SGR inside survives as an SGR (Styled cannot tell it
	// from a style: fields go through Line first); nothing else does.
	rest = strings.ReplaceAll(rest, "\x1b[41m", "")
	if r, bad := rawControl(rest, true); bad {
		t.Errorf("Styled keeps %U: %q", r, got)
	}
}
