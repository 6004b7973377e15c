// Package termsafe makes text from Git or the cluster safe to show on a
// terminal: every character a terminal would act on rather than print
// (C0 controls, ESC, DEL, C1 controls, bidirectional overrides) is shown
// as a visible escape instead, so a name, a path, a commit message or an
// error cannot move the cursor, clear the screen, set the window title,
// write the clipboard (OSC 52), hide a link (OSC 8) or reorder what a
// person reads (U+202E). kubectl escapes its output the same way since
// CVE-2021-25743.
//
// Text for people goes through it whether or not stdout is a terminal:
// pagers, CI logs and `watch` show it on one later. JSON and YAML output
// never does: scripts get the exact strings.
package termsafe

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// Line is s for one line of a table or a list: every control character,
// tab and newline included, shown escaped.
func Line(s string) string { return escape(s, false) }

// Text is s for text of several lines: tab and newline stay, every other
// control character is shown escaped.
func Text(s string) string { return escape(s, true) }

// Safe says whether s needs no escaping for text of several lines.
func Safe(s string) bool { return escape(s, true) == s }

// unsafe says whether r must be shown escaped; keepLayout keeps tab and
// newline.
func unsafe(r rune, keepLayout bool) bool {
	switch {
	case r == '\t' || r == '\n':
		return !keepLayout
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069,
		r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

// escape writes s with every unsafe character and every byte that is not
// UTF-8 escaped.
func escape(s string, keepLayout bool) string {
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || unsafe(r, keepLayout) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i-1])
		case !unsafe(r, keepLayout):
			b.WriteString(s[i-n : i])
		default:
			b.WriteString(visible(r))
		}
	}
	return b.String()
}

// visible is how an unsafe character is shown.
func visible(r rune) string {
	switch r {
	case '\t':
		return `\t`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case 0x1b:
		return `\e`
	}
	if r < 0x80 {
		return fmt.Sprintf(`\x%02x`, r)
	}
	return fmt.Sprintf(`\u%04x`, r)
}

// Writer is an io.Writer that passes text on with Text's escaping. A
// character split between two writes is escaped whole; Flush writes what
// is left of one at the end. It is safe for concurrent use.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	pending []byte
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes p and writes it to the underlying writer; it reports
// len(p) when all was written.
func (t *Writer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	buf := p
	if len(t.pending) > 0 {
		buf = append(t.pending, p...)
		t.pending = nil
	}
	// Hold back an incomplete UTF-8 sequence at the end for the next write.
	cut := len(buf)
	for k := 1; k < utf8.UTFMax && k <= len(buf); k++ {
		c := buf[len(buf)-k]
		if c < 0x80 {
			break
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(buf[len(buf)-k:]) {
				cut = len(buf) - k
			}
			break
		}
	}
	if cut < len(buf) {
		t.pending = append([]byte(nil), buf[cut:]...)
	}
	if _, err := io.WriteString(t.w, Text(string(buf[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what is left of a character split at the end of the last
// write, escaped.
func (t *Writer) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.pending) == 0 {
		return nil
	}
	s := Text(string(t.pending))
	t.pending = nil
	_, err := io.WriteString(t.w, s)
	return err
}

// Styled is s, text of several lines already styled with SGR sequences
// (ESC [ params m: colours, bold, reverse), with those sequences kept and
// everything else as Text shows it: a terminal UI's frame, after its
// fields went through Line. A sequence that is not SGR (a cursor move,
// a clear, an OSC title, clipboard write or hyperlink) is shown escaped.
func Styled(s string) string {
	if !strings.ContainsRune(s, 0x1b) {
		return Text(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for s != "" {
		i := strings.IndexByte(s, 0x1b)
		if i < 0 {
			b.WriteString(Text(s))
			break
		}
		b.WriteString(Text(s[:i]))
		s = s[i:]
		if n := sgrLen(s); n > 0 {
			b.WriteString(s[:n])
			s = s[n:]
			continue
		}
		b.WriteString(`\e`)
		s = s[1:]
	}
	return b.String()
}

// sgrLen is the length of the SGR sequence s starts with, or 0.
func sgrLen(s string) int {
	if len(s) < 3 || s[0] != 0x1b || s[1] != '[' {
		return 0
	}
	for i := 2; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c == ';', c == ':':
		case c == 'm':
			return i + 1
		default:
			return 0
		}
	}
	return 0
}
