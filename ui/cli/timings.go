package cli

import (
	"fmt"
	"io"
	"sync"
	"time"

	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/engine/engine"
)

// processStart is when kdrift's command line was initialised: the origin
// of --timings. The Go runtime's and the libraries' own initialisation
// come before it and are not counted.
var processStart = time.Now()

// Phases --timings prints that the command line measures itself; the
// engine reports the others (engine.Phase).
const (
	phaseStartup = "start-up"
	phaseOpen    = "open"
	phaseOutput  = "output"
)

// timingsOrder is the order --timings prints phases in.
var timingsOrder = []string{phaseStartup, phaseOpen, string(engine.PhaseFetch), string(engine.PhaseGit), string(engine.PhaseDiscover), string(engine.PhaseCluster), string(engine.PhaseRender), string(engine.PhaseCompare), phaseOutput}

// timings records the phases of a one-shot command for --timings: for
// each, when it first started and last ended (from processStart), how
// long its steps took in all and how many there were. It is an
// engine.Observer; a nil *timings records nothing.
type timings struct {
	mu    sync.Mutex
	spans map[string]*timingSpan
	// repo, once the engine is open, says whether its fetch was skipped.
	repo engine.RepoInfo
}

// timingSpan is one phase's steps.
type timingSpan struct {
	first, last time.Duration
	took        time.Duration
	steps       int
	failed      int
}

func newTimings() *timings { return &timings{spans: map[string]*timingSpan{}} }

// registerTimings adds --timings.
func (g *globalFlags) registerTimings(fs *flag.FlagSet) {
	fs.BoolVar(&g.timings, "timings", false, "print on stderr how long each phase took (start-up, open, fetch, git, discover, cluster, render, compare, output), in ms since kdrift started")
}

// step records a step of phase that started at start and ends now.
func (t *timings) step(phase string, start time.Time, err error) {
	if t == nil {
		return
	}
	end := time.Now()
	t.add(phase, start.Sub(processStart), end.Sub(processStart), err)
}

func (t *timings) add(phase string, from, to time.Duration, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.spans[phase]
	if s == nil {
		s = &timingSpan{first: from, last: to}
		t.spans[phase] = s
	}
	s.first, s.last = min(s.first, from), max(s.last, to)
	s.took += to - from
	s.steps++
	if err != nil {
		s.failed++
	}
}

// opened notes the command's engine, which says whether its fetch was
// skipped.
func (t *timings) opened(repo engine.RepoInfo) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.repo = repo
}

// Timed records an engine step (engine.Observer).
func (t *timings) Timed(phase engine.Phase, _ string, took time.Duration, err error) {
	if t == nil {
		return
	}
	to := time.Since(processStart)
	t.add(string(phase), to-took, to, err)
}

// Heartbeat is not a phase (engine.Observer).
func (t *timings) Heartbeat(time.Time) {}

// Request is not a phase (engine.Observer).
func (t *timings) Request(engine.Verb, error) {}

// write prints the table: one row per phase that ran, with when it
// started and ended and how long its steps took in all (steps of one
// phase may run at once, and phases overlap: the cluster is reached
// while Git is read). The engine, once opened, says whether the fetch was
// skipped.
func (t *timings) write(w io.Writer) {
	if t == nil {
		return
	}
	total := time.Since(processStart)
	t.mu.Lock()
	defer t.mu.Unlock()
	ms := func(d time.Duration) string { return fmt.Sprintf("%8.1f", float64(d.Microseconds())/1000) }
	fmt.Fprintf(w, "kdrift: timings, in ms since kdrift started (phases overlap where they run at once)\n")
	fmt.Fprintf(w, "  %-9s %8s %8s %8s  %s\n", "PHASE", "START", "END", "TOOK", "STEPS")
	for _, name := range timingsOrder {
		s := t.spans[name]
		if s == nil {
			if name == string(engine.PhaseFetch) && t.repo != nil {
				if sk := t.repo.FetchSkipped(); sk.Skipped {
					fmt.Fprintf(w, "  %-9s %8s %8s %8s  skipped: %s was fetched %s ago\n", name, "-", "-", "-", sk.Remote, sk.Age.Round(time.Millisecond))
				}
			}
			continue
		}
		steps := fmt.Sprintf("%d", s.steps)
		if s.failed > 0 {
			steps += fmt.Sprintf(" (%d failed)", s.failed)
		}
		fmt.Fprintf(w, "  %-9s %s %s %s  %s\n", name, ms(s.first), ms(s.last), ms(s.took), steps)
	}
	fmt.Fprintf(w, "  %-9s %8s %s\n", "total", "", ms(total))
}
