package actions

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"kdrift.dev/kdrift/engine/redact"
)

// PushRefusedError says the remote refused a push on purpose: a hook
// declined the ref, the branch is protected, or the credentials may not
// push there. Unlike an unreachable remote or a lost race, retrying does not
// help: the change must reach the branch by another path (the incident
// channel for a freeze, a pull request for a change to desired state).
// Callers branch on it with errors.As.
type PushRefusedError struct {
	// Remote is the remote's name and redacted address ("origin (https://…)").
	Remote string `json:"remote"`
	// Branch is the remote branch that refused ("main").
	Branch string `json:"branch"`
	// Lines are the remote's own words, credentials redacted: its
	// "remote:" lines (a hook's output, a forge's protection message) and
	// the status it reported for the ref ("pre-receive hook declined").
	Lines []string `json:"lines,omitempty"`
}

// Error is one line: who refused what, and the remote's first word on it.
func (e *PushRefusedError) Error() string {
	msg := fmt.Sprintf("push to %s refused by the remote for branch %s", e.Remote, e.Branch)
	if len(e.Lines) > 0 {
		msg += ": " + strings.Join(e.Lines, "; ")
	}
	return msg
}

// Bounds on what a remote may make kdrift print: a hostile remote can send
// any amount of sideband text.
const (
	maxRefusedLines   = 20
	maxRefusedLineLen = 300
	maxProgressBytes  = 64 << 10
)

// refusalMarks are the words remotes use when they refuse a ref on purpose:
// git's own receive-pack ("pre-receive hook declined", "hook declined",
// "deny updating a hidden ref", "branch is currently checked out"), GitHub
// ("protected branch hook declined", "GH006: Protected branch update
// failed", "GH013"), GitLab ("You are not allowed to push code to protected
// branches", "You are not allowed to push code to this project"), Gitea and
// Forgejo ("Not allowed to push to protected branch"), and permission
// refusals of the forges and of SSH ("Permission to x denied", "permission
// denied", "403").
var refusalMarks = []string{
	"hook declined",
	"gh006",
	"gh013",
	"protected branch",
	"not allowed to push",
	"deny updating a hidden ref",
	"branch is currently checked out",
	"permission to ",
	"permission denied",
	"write access to repository not granted",
	"access denied",
	"the requested url returned error: 403",
}

// progressBuffer collects a push's sideband "remote:" output, bounded.
type progressBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (p *progressBuffer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if room := maxProgressBytes - p.buf.Len(); room > 0 {
		if len(b) > room {
			p.buf.Write(b[:room])
		} else {
			p.buf.Write(b)
		}
	}
	return len(b), nil
}

func (p *progressBuffer) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.String()
}

// refusal turns a push error into a *PushRefusedError when the remote
// refused on purpose, with the remote's sideband output as its lines; any
// other error (unreachable, a lost race) comes back nil.
func refusal(err error, remote, branch, progress string) *PushRefusedError {
	if err == nil || isRejected(err) && !refusedText(err.Error()) {
		return nil
	}
	authz := errors.Is(err, transport.ErrAuthorizationFailed)
	text := err.Error()
	if !authz && !refusedText(text) && !refusedText(progress) {
		return nil
	}
	lines := remoteLines(progress)
	// The status the remote reported for the ref, from go-git's
	// "command error on refs/heads/main: pre-receive hook declined".
	if _, status, ok := strings.Cut(text, "command error on "); ok {
		if _, st, ok := strings.Cut(status, ": "); ok {
			lines = appendLine(lines, st)
		}
	} else if authz {
		lines = appendLine(lines, "authorization failed (HTTP 403): the credentials may not push to this branch")
	} else if len(lines) == 0 {
		lines = appendLine(lines, lastClause(text))
	}
	return &PushRefusedError{Remote: redact.Text(remote), Branch: branch, Lines: lines}
}

// refusedText says s carries one of the refusal words.
func refusedText(s string) bool {
	l := strings.ToLower(s)
	for _, m := range refusalMarks {
		if strings.Contains(l, m) {
			return true
		}
	}
	return false
}

// remoteLines splits sideband output into the remote's lines: git ends a
// line with \n and rewrites a progress line in place with \r, so only the
// last state of each line is kept. Blank lines, pure progress counters and
// control bytes are dropped; credentials are redacted.
func remoteLines(progress string) []string {
	var out []string
	for _, raw := range strings.Split(progress, "\n") {
		if i := strings.LastIndexByte(strings.TrimRight(raw, "\r"), '\r'); i >= 0 {
			raw = raw[i+1:]
		}
		out = appendLine(out, raw)
	}
	return out
}

// appendLine adds one cleaned line, within the bounds.
func appendLine(lines []string, s string) []string {
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return -1
		}
		return r
	}, s))
	s = strings.TrimSpace(strings.TrimPrefix(s, "remote:"))
	if s == "" || len(lines) >= maxRefusedLines {
		return lines
	}
	for _, p := range []string{"Counting objects", "Compressing objects", "Writing objects", "Resolving deltas", "Total ", "Enumerating objects"} {
		if strings.HasPrefix(s, p) {
			return lines
		}
	}
	if len(s) > maxRefusedLineLen {
		s = s[:maxRefusedLineLen] + "…"
	}
	s = redact.Text(s)
	for _, l := range lines {
		if l == s {
			return lines
		}
	}
	return append(lines, s)
}

// lastClause is the innermost part of a wrapped error message.
func lastClause(s string) string {
	if i := strings.LastIndex(s, ": "); i >= 0 && i+2 < len(s) {
		return s[i+2:]
	}
	return s
}
