//go:build unix

package actions

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Environment of the crashing child process.
const (
	envCrashDir  = "KDRIFT_TEST_CRASH_DIR"
	envCrashStep = "KDRIFT_TEST_CRASH_STEP"
)

// TestCrashHelperProcess is the child of TestKilledMidCommit: it freezes
// two apps (two files) in the repository named by the environment and
// SIGKILLs itself at the named step of the commit. Run on its own (no
// environment) it has nothing to do and passes.
func TestCrashHelperProcess(t *testing.T) {
	dir, step := os.Getenv(envCrashDir), os.Getenv(envCrashStep)
	if dir == "" {
		return
	}
	r, err := Open(context.Background(), RepoOptions{Repo: dir, Author: testAuthor, Now: newClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	r.crashPoint = func(s string) {
		if s == step {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}
	_, err = r.Freeze(context.Background(), FreezeRequest{Selection: Selection{Apps: []string{"render-prod", "web-staging"}}, Reason: "INC-13 killed mid-commit"})
	t.Fatalf("the process was not killed at step %q: %v", step, err)
}

// TestKilledMidCommit kills a real process at each step of a commit into a
// checked-out branch. Right after the kill the ref is at the old commit or
// the whole new one and git fsck --strict is clean; once kdrift opens the
// repository again the action left either nothing or the whole commit,
// with a clean git status and no lock, journal or temporary file.
func TestKilledMidCommit(t *testing.T) {
	for _, c := range []struct {
		step  string
		whole bool
	}{{"locked", false}, {"file", false}, {"index", false}, {"ref", true}, {"published", true}} {
		t.Run(c.step, func(t *testing.T) {
			isolate(t)
			remote := newRemote(t)
			dir := cloneOf(t, remote)
			old := gitRun(t, dir, "rev-parse", "HEAD")
			before := readFile(t, dir, ".kdrift/apps.yaml") + readFile(t, dir, ".kdrift/web.yaml")

			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelperProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), envCrashDir+"="+dir, envCrashStep+"="+c.step)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("the child was not killed: %v\n%s", err, out)
			}

			head := gitRun(t, dir, "rev-parse", "HEAD")
			if c.whole == (head == old) {
				t.Fatalf("killed at %s: HEAD is %s (old %s)", c.step, head, old)
			}
			fsckClean(t, dir)

			r := openRepo(t, dir, newClock()) // finds the journal and settles
			if st := gitRun(t, dir, "status", "--porcelain", "--untracked-files=all"); st != "" {
				t.Fatalf("killed at %s, then reopened: git status %q", c.step, st)
			}
			gd := filepath.Join(dir, ".git")
			for _, p := range []string{filepath.Join(gd, "index.lock"), filepath.Join(gd, journalName)} {
				if _, err := os.Stat(p); err == nil {
					t.Fatalf("%s left behind", p)
				}
			}
			after := readFile(t, dir, ".kdrift/apps.yaml") + readFile(t, dir, ".kdrift/web.yaml")
			switch {
			case c.whole && (gitRun(t, dir, "rev-parse", "HEAD") == old || strings.Count(after, "INC-13 killed mid-commit") != 2):
				t.Fatalf("killed after the ref moved: the commit is not whole:\n%s", after)
			case !c.whole && (gitRun(t, dir, "rev-parse", "HEAD") != old || after != before):
				t.Fatalf("killed before the ref moved: the files are not as they were:\n%s", after)
			}
			fsckClean(t, dir)

			// Nothing blocks the next action; a whole commit is pushed with it.
			next := freezeOne(t, r, "api-prod", "INC-14 after the crash")
			if !next.Pushed {
				t.Fatalf("next action: %+v", next)
			}
			if got := strings.Contains(gitRun(t, remote, "log", "--format=%s", "main"), "INC-13"); got != c.whole {
				t.Fatalf("remote has the killed action: %v, want %v", got, c.whole)
			}
			fsckClean(t, remote, dir)
		})
	}
}
