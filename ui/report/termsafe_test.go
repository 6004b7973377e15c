package report

import (
	"strings"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
)

// hostile is CSI, OSC (title, clipboard, hyperlink), C1, a tab, a newline
// and U+202E: what a commit or a cluster object can put in a field.
const hostile = "\x1b[32m\x1b]0;T\a\x1b]52;c;aGk=\a\x1b]8;;http://x\x1b\\L\u009b\t\nX\u202e"

// rawControl is the first character of s a terminal would act on, other
// than the newlines that end rows.
func rawControl(s string) (rune, bool) {
	for _, r := range s {
		switch {
		case r == '\n':
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return r, true
		}
	}
	return 0, false
}

// TestTablesShowHostileTextEscaped: status' SELF-HEAL and ERROR columns
// and audit's AUTHOR and REASON columns escape every control character,
// tab and newline included, so a field neither acts on the terminal nor
// makes a column or a row of its own.
func TestTablesShowHostileTextEscaped(t *testing.T) {
	now := time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)
	apps := []status.AppStatus{{Name: "web" + hostile, Sync: status.SyncError, SelfHeal: status.SelfHealFrozen,
		Freeze:   &app.Freeze{By: "Evil \x1b[32m<e@x>" + hostile, Reason: hostile, At: now},
		Revision: "abc" + hostile, Error: "x\x1b[41mRED\x1b]0;TITLE\a.yaml: bad YAML" + hostile}}
	var b strings.Builder
	if err := Status(&b, apps, now); err != nil {
		t.Fatal(err)
	}
	if r, bad := rawControl(b.String()); bad {
		t.Errorf("status wrote %U raw:\n%q", r, b.String())
	}
	if n := strings.Count(b.String(), "\n"); n != 2 {
		t.Errorf("status wrote %d lines, want a header and one row:\n%s", n, b.String())
	}
	for _, want := range []string{`by Evil \e[32m<e@x>`, `x\e[41mRED\e]0;TITLE\x07.yaml`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status does not show %s:\n%s", want, b.String())
		}
	}
	b.Reset()
	entries := []actions.AuditEntry{{Time: now, Author: "Evil" + hostile, Action: "freeze", Apps: []string{"web" + hostile},
		Commit: "0123456789abcdef", Reason: "body \x1b[2J" + hostile}}
	if err := WriteAuditTable(&b, entries); err != nil {
		t.Fatal(err)
	}
	if r, bad := rawControl(b.String()); bad {
		t.Errorf("audit wrote %U raw:\n%q", r, b.String())
	}
	if !strings.Contains(b.String(), `body \e[2J`) {
		t.Errorf("audit does not show the escaped reason:\n%s", b.String())
	}
}
