package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// BuildPhase is the step a build of the control plane is in.
type BuildPhase string

// The phases of a build, in order.
const (
	// PhaseWait waits for another process that builds the same sources
	// (test packages run in parallel); its binary is then used.
	PhaseWait BuildPhase = "wait"
	// PhaseCount lists the packages the build will compile (Go's build
	// cache may already hold the rest), downloading modules a fresh
	// checkout lacks.
	PhaseCount BuildPhase = "count"
	// PhaseCompile compiles packages.
	PhaseCompile BuildPhase = "compile"
	// PhaseLink links the binary.
	PhaseLink BuildPhase = "link"
	// PhaseDone is the end of a build that succeeded.
	PhaseDone BuildPhase = "done"
)

// BuildProgress is how far a build of the control plane has come.
type BuildProgress struct {
	// Phase is the step the build is in.
	Phase BuildPhase
	// Done is the number of packages compiled so far.
	Done int
	// Total is the number of packages this build compiles; 0 while they
	// are counted.
	Total int
	// Cached is the number of packages Go's build cache already holds.
	Cached int
	// Last names the package compiled last, or the module being
	// downloaded while counting.
	Last string
	// Elapsed is the time since the build started.
	Elapsed time.Duration
}

// build runs go build for opts.SourceDir into out, reporting progress.
func build(ctx context.Context, opts BuildOptions, out string, start time.Time) error {
	report := func(p BuildProgress) {
		if opts.Progress != nil {
			p.Elapsed = time.Since(start)
			opts.Progress(p)
		}
	}
	var said bytes.Buffer
	var saidMu sync.Mutex
	// keep forwards what the go command says to Log and keeps it for an
	// error message.
	keep := func(line string) {
		saidMu.Lock()
		said.WriteString(line + "\n")
		saidMu.Unlock()
		fmt.Fprintln(opts.Log, line)
	}
	fail := func(what string, err error) error {
		saidMu.Lock()
		defer saidMu.Unlock()
		return fmt.Errorf("build %s (%s in %s) failed after %s: %w\n%s",
			opts.Name, what, opts.SourceDir, time.Since(start).Round(time.Second), err, tail(said.String(), 40))
	}

	report(BuildProgress{Phase: PhaseCount})
	// Stale is what `go build -trimpath` would compile: the packages whose
	// result is not in the build cache.
	listArgs := []string{"list", "-trimpath", "-deps", "-f", "{{if .Stale}}S{{else}}C{{end}} {{.ImportPath}}"}
	if opts.Tags != "" {
		listArgs = append(listArgs, "-tags", opts.Tags)
	}
	list := goCommand(ctx, opts.SourceDir, append(listArgs, opts.pkg())...)
	var listOut bytes.Buffer
	list.Stdout = &listOut
	listErr, waitList := lineWriter(func(line string) {
		if m, ok := strings.CutPrefix(line, "go: downloading "); ok {
			report(BuildProgress{Phase: PhaseCount, Last: m})
		}
		keep(line)
	})
	list.Stderr = listErr
	err := list.Run()
	waitList()
	if err != nil {
		return fail("go list", err)
	}
	stale := map[string]bool{}
	cached := 0
	mainPkg := ""
	for _, line := range strings.Split(strings.TrimSpace(listOut.String()), "\n") {
		state, pkg, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		mainPkg = pkg // -deps lists the named package last
		if state == "S" {
			stale[pkg] = true
		} else {
			cached++
		}
	}
	total := len(stale)
	report(BuildProgress{Phase: PhaseCompile, Total: total, Cached: cached})

	flags := opts.LDFlags
	if flags == nil {
		flags = []string{
			"-s", "-w",
			"-X k8s.io/component-base/version.gitVersion=" + KubeVersion,
			"-X k8s.io/component-base/version.gitMajor=1",
			"-X k8s.io/component-base/version.gitMinor=37",
			"-X k8s.io/component-base/version.gitTreeState=clean",
		}
	}
	ldflags := strings.Join(flags, " ")
	// -v names each package as the go command compiles it.
	args := []string{"build", "-v", "-trimpath", "-ldflags", ldflags}
	if opts.Tags != "" {
		args = append(args, "-tags", opts.Tags)
	}
	cmd := goCommand(ctx, opts.SourceDir, append(args, "-o", out, opts.pkg())...)
	done := 0
	lw, waitBuild := lineWriter(func(line string) {
		if stale[line] {
			done++
			phase := PhaseCompile
			if line == mainPkg {
				phase = PhaseLink
			}
			report(BuildProgress{Phase: phase, Done: min(done, total), Total: total, Cached: cached, Last: line})
			return
		}
		keep(line)
	})
	cmd.Stdout = lw
	cmd.Stderr = lw
	err = cmd.Run()
	waitBuild()
	if err != nil {
		return fail("go build", err)
	}
	report(BuildProgress{Phase: PhaseDone, Done: total, Total: total, Cached: cached})
	return nil
}

// goCommand is the go command run in the nested module. It has its own
// go.mod: a go.work from the caller's environment must not leak into its
// build.
func goCommand(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	return cmd
}

// lineWriter calls f, in one goroutine, with each line written to it;
// wait ends the input and returns once f has seen every line. Writes are
// serialised: exec copies stdout and stderr in a goroutine each when they
// are not *os.File.
func lineWriter(f func(string)) (w io.Writer, wait func()) {
	pr, pw := io.Pipe()
	lw := &linePipe{w: pw}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			f(sc.Text())
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	return lw, func() {
		_ = pw.Close()
		<-done
	}
}

type linePipe struct {
	mu sync.Mutex
	w  *io.PipeWriter
}

func (l *linePipe) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// BuildOutput returns a BuildOptions Log and Progress that show a build on
// w: on a terminal one line redrawn in place (the go command's own messages
// print above it), otherwise (a CI log, a pipe) a line when the packages are
// counted, at every tenth of them, when linking starts and at the end. next
// says what happens once the binary is built.
func BuildOutput(w io.Writer, next string) (log io.Writer, progress func(BuildProgress)) {
	return BuildOutputOf(w, Subject{What: "local control plane", From: "testdata/localcluster", Cold: "10-30 minutes"}, next)
}

// Subject is what a build's progress lines name.
type Subject struct {
	// What names the binary at the start of each line.
	What string
	// From says what it is built from; Cold how long a cold build takes
	// on 2 cores ("10-30 minutes").
	From, Cold string
}

// BuildOutputOf is BuildOutput for another binary, named by s.
func BuildOutputOf(w io.Writer, s Subject, next string) (log io.Writer, progress func(BuildProgress)) {
	tty := IsTerminal(w)
	if tty {
		log = clearLine{w}
	} else {
		log = w
	}
	return log, progressPrinter(w, tty, s, next)
}

// clearLine writes each line at the start of a cleared terminal line, over
// the progress line.
type clearLine struct{ w io.Writer }

func (c clearLine) Write(p []byte) (int, error) {
	if _, err := io.WriteString(c.w, "\r\x1b[K"); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// progressPrinter is BuildOutput's Progress.
func progressPrinter(w io.Writer, tty bool, s Subject, next string) func(BuildProgress) {
	what, from := s.What, s.From
	var mu sync.Mutex
	lastTenth := -1
	linkShown := false
	return func(p BuildProgress) {
		mu.Lock()
		defer mu.Unlock()
		el := p.Elapsed.Round(time.Second)
		switch p.Phase {
		case PhaseWait:
			fmt.Fprintf(w, "%s: another process is building it; waiting for that build\n", what)
		case PhaseCount:
			if tty {
				msg := "counting the packages to compile"
				if p.Last != "" {
					msg = "downloading " + p.Last
				}
				fmt.Fprintf(w, "\r\x1b[K%s: %s · %s", what, clip(msg, 70), el)
			} else if p.Last == "" {
				fmt.Fprintf(w, "%s: building once from %s (later runs reuse the cached binary); counting packages\n", what, from)
			}
		case PhaseCompile, PhaseLink:
			if p.Total == 0 {
				return
			}
			pct := 100 * p.Done / p.Total
			eta := ""
			if p.Done >= p.Total/10 && p.Done > 0 && p.Done < p.Total {
				left := time.Duration(float64(p.Elapsed) / float64(p.Done) * float64(p.Total-p.Done))
				eta = ", about " + minutes(left) + " left"
			}
			if tty {
				if p.Phase == PhaseLink {
					fmt.Fprintf(w, "\r\x1b[K%s: compiled %d/%d packages · linking the binary · %s", what, p.Done, p.Total, el)
					return
				}
				fmt.Fprintf(w, "\r\x1b[K%s: compiling %d/%d packages (%d%%) · %s%s · %s", what, p.Done, p.Total, pct, el, eta, clip(p.Last, 48))
				return
			}
			if p.Done == 0 {
				fmt.Fprintf(w, "%s: compiling %s (%d already in Go's build cache); a cold build takes %s on 2 cores\n", what, packages(p.Total), p.Cached, s.Cold)
				lastTenth = 0
				return
			}
			if p.Phase == PhaseLink && !linkShown {
				linkShown = true
				fmt.Fprintf(w, "%s: compiled %d/%d packages in %s; linking the binary\n", what, p.Done, p.Total, el)
				return
			}
			if tenth := 10 * p.Done / p.Total; tenth > lastTenth && tenth < 10 {
				lastTenth = tenth
				fmt.Fprintf(w, "%s: compiled %d/%d packages (%d%%) in %s%s\n", what, p.Done, p.Total, pct, el, eta)
			}
		case PhaseDone:
			if tty {
				fmt.Fprint(w, "\r\x1b[K")
			}
			fmt.Fprintf(w, "%s: built in %s (%s compiled, %d from Go's build cache); next: %s\n", what, el, packages(p.Total), p.Cached, next)
		}
	}
}

// IsTerminal reports whether w is a terminal, where progress is redrawn in
// place rather than printed line by line.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// packages is "1 package" or "N packages".
func packages(n int) string {
	if n == 1 {
		return "1 package"
	}
	return fmt.Sprintf("%d packages", n)
}

// minutes is d as a rough number of minutes for a person: "2 min", "<1 min".
func minutes(d time.Duration) string {
	if d < time.Minute {
		return "<1 min"
	}
	return fmt.Sprintf("%d min", int(d.Minutes()+0.5))
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n+1:]
}
