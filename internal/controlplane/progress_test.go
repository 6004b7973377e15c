package controlplane

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// feed sends a build of total packages through print: counting, every
// package, linking and the end.
func feed(print func(BuildProgress), total int) {
	print(BuildProgress{Phase: PhaseCount})
	print(BuildProgress{Phase: PhaseCompile, Total: total, Cached: 7})
	for i := 1; i <= total; i++ {
		phase := PhaseCompile
		if i == total {
			phase = PhaseLink
		}
		print(BuildProgress{Phase: phase, Done: i, Total: total, Cached: 7, Last: "k8s.io/kubernetes/pkg/x", Elapsed: time.Duration(i) * time.Second})
	}
	print(BuildProgress{Phase: PhaseDone, Done: total, Total: total, Cached: 7, Elapsed: time.Duration(total+30) * time.Second})
}

// TestProgressLog: in a log (not a terminal) a build prints a line when it
// starts, one per tenth of the packages, one when linking starts and one at
// the end naming what happens next; no carriage returns.
func TestProgressLog(t *testing.T) {
	var b bytes.Buffer
	feed(progressPrinter(&b, false, Subject{What: "local control plane", From: "testdata/localcluster", Cold: "10-30 minutes"}, "run the tests"), 200)
	out := b.String()
	if strings.ContainsAny(out, "\r\x1b") {
		t.Fatalf("a log got terminal control characters:\n%q", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// counting, compiling N, 10%..90% (9 lines), linking, built.
	if len(lines) != 13 {
		t.Fatalf("%d lines, want 13:\n%s", len(lines), out)
	}
	for _, want := range []string{
		"compiling 200 packages (7 already in Go's build cache)",
		"compiled 20/200 packages (10%) in 20s",
		"compiled 180/200 packages (90%) in 3m0s, about <1 min left",
		"compiled 200/200 packages in 3m20s; linking the binary",
		"built in 3m50s (200 packages compiled, 7 from Go's build cache); next: run the tests",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// TestProgressTerminal: on a terminal the progress is one line redrawn in
// place, and the final line ends it.
func TestProgressTerminal(t *testing.T) {
	var b bytes.Buffer
	feed(progressPrinter(&b, true, Subject{What: "local control plane", From: "testdata/localcluster", Cold: "10-30 minutes"}, "start the demo"), 50)
	out := b.String()
	if n := strings.Count(out, "\n"); n != 1 {
		t.Fatalf("%d newlines on a terminal, want 1 (the last line):\n%q", n, out)
	}
	for _, want := range []string{"\r\x1b[Klocal control plane: compiling 25/50 packages (50%) · 25s", "linking the binary", "next: start the demo\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, out)
		}
	}
}
