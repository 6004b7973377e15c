package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/internal/demo"
	"kdrift.dev/kdrift/internal/enginetest"
)

// e2eDeadline bounds each wait of the end-to-end test: generous, because
// the machine may be busy; a healthy run takes a few seconds per step.
const e2eDeadline = 90 * time.Second

// TestE2ETmux drives the real kdrift binary in tmux against the package's
// control plane and a real demo repository: drift shows in the apps view,
// the diff names the kubectl manager, `s` heals a drifted (frozen) app,
// `f` and `F` with a reason commit to the repository, and `q` quits.
func TestE2ETmux(t *testing.T) {
	skipSlow(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is not installed: install tmux (e.g. apt-get install tmux) to run kdrift's end-to-end test: %v", err)
	}
	bin := kdriftBinary(t)
	repo := stageTestDemo(t)
	u := startTmuxUI(t, bin, repo.Clone)
	cs := enginetest.Clientset(t)

	// 1. The apps view: staging drifted and frozen by the earlier on-call.
	u.waitFor("staging OutOfSync and FROZEN in the apps view", func(s string) bool {
		l := lineWith(s, demo.AppStaging)
		return strings.Contains(l, "OutOfSync") && strings.Contains(l, "FROZEN")
	})

	// 2. enter on staging, then on Deployment render-worker (the first
	// resource is the ConfigMap; j skips the Deployment header): the diff
	// names the manager that wrote the drift.
	u.filter("staging")
	u.keys("Enter")
	u.waitFor("the app view of staging", func(s string) bool {
		return title(s) == appsTitle+" › app "+demo.AppStaging && strings.Contains(s, "render-worker")
	})
	u.keys("j")
	u.keys("Enter")
	u.waitFor("the diff of render-worker naming the kubectl manager", func(s string) bool {
		return strings.HasSuffix(title(s), " › diff Deployment/"+demo.Namespace("staging")+"/render-worker") &&
			strings.Contains(s, "kubectl Update/scale")
	})
	// It opens on the drift: defaults hidden, the cursor on replicas; x
	// shows the defaults.
	u.waitFor("the diff opened on replicas with the defaults hidden", func(s string) bool {
		return strings.Contains(s, "defaulted hidden") && !strings.Contains(s, "progressDeadlineSeconds") &&
			strings.Contains(markedLine(s), "replicas:")
	})
	u.keys("x")
	u.waitFor("the defaults shown on x", func(s string) bool {
		return strings.Contains(s, "defaulted shown") && strings.Contains(s, "progressDeadlineSeconds")
	})
	// One esc at a time, each acted on before the next: two in a row would
	// reach kdrift as alt+esc.
	u.keys("Escape")
	u.waitFor("back in the app view", func(s string) bool { return title(s) == appsTitle+" › app "+demo.AppStaging })
	u.keys("Escape")
	u.waitFor("back in the apps view", func(s string) bool {
		return title(s) == appsTitle && strings.Contains(s, "filter: staging")
	})

	// 3. s on staging: the plan, then the frozen app's second question;
	// the cluster is back at Git's replicas.
	u.keys("s")
	u.waitFor("the sync plan", func(s string) bool {
		return strings.Contains(s, "Sync "+demo.AppStaging+"?") && strings.Contains(s, "/spec/replicas")
	})
	u.keys("Enter")
	u.waitFor("the frozen app's second question", func(s string) bool {
		return strings.Contains(s, "Sync FROZEN app "+demo.AppStaging+" anyway?")
	})
	u.keys("y")
	u.waitFor("staging Synced", func(s string) bool {
		return strings.Contains(lineWith(s, demo.AppStaging), "✓ Synced")
	})
	var replicas int32
	u.poll("render-worker back at Git's 6 replicas in the cluster", func() bool {
		d, err := cs.AppsV1().Deployments(demo.Namespace("staging")).Get(context.Background(), "render-worker", metav1.GetOptions{})
		if err != nil || d.Spec.Replicas == nil {
			return false
		}
		replicas = *d.Spec.Replicas
		return replicas == 6
	}, func() string { return fmt.Sprintf("replicas = %d", replicas) })

	// 4. f on prod (not frozen) with a reason: a freeze commit, pushed.
	u.keys("Escape")
	u.waitFor("the filter cleared", func(s string) bool { return !strings.Contains(s, "filter: staging") })
	u.filter("prod")
	u.keys("f")
	u.waitFor("the freeze dialog", func(s string) bool {
		return strings.Contains(s, "Freeze 1 app?") && strings.Contains(s, "Apps: "+demo.AppProd)
	})
	freezeReason := "INC-2002 hold prod while the HPA is checked"
	u.typeText(freezeReason)
	u.keys("Enter")
	u.waitForCommit(repo, "freeze("+demo.AppProd+"): "+freezeReason, "freeze")
	u.waitFor("prod FROZEN by the test's author", func(s string) bool {
		return strings.Contains(lineWith(s, demo.AppProd), "FROZEN") && strings.Contains(s, testAuthorName)
	})

	// 5. F on staging with a reason: an unfreeze commit.
	u.keys("Escape")
	u.waitFor("the filter cleared", func(s string) bool { return !strings.Contains(s, "filter: prod") })
	u.filter("staging")
	u.keys("F")
	u.waitFor("the unfreeze dialog", func(s string) bool { return strings.Contains(s, "Unfreeze 1 app?") })
	unfreezeReason := "INC-1001 resolved, back to Git"
	u.typeText(unfreezeReason)
	u.keys("Enter")
	u.waitForCommit(repo, "unfreeze("+demo.AppStaging+"): "+unfreezeReason, "unfreeze")
	u.waitFor("staging's self-heal on again", func(s string) bool {
		l := lineWith(s, demo.AppStaging)
		return !strings.Contains(l, "FROZEN") && strings.Contains(l, " on ")
	})

	// 6. q quits cleanly: the process exits 0.
	u.keys("q")
	u.poll("kdrift to exit 0 after q", func() bool { return u.exitStatus() == "0" }, u.lingering)
	log, err := os.ReadFile(u.logFile)
	if err != nil || !strings.Contains(string(log), "ui stopped") {
		t.Fatalf("log file %s: %v\n%s", u.logFile, err, log)
	}
}

// tmuxUI is kdrift running in a detached tmux session on a server of its
// own (its own socket, no configuration of the person running the tests).
type tmuxUI struct {
	t        *testing.T
	sock     string
	env      []string
	logFile  string
	exitFile string
	last     string
}

// startTmuxUI runs `kdrift --repo clone [extra...]` in a 120×40 tmux
// session; the cleanup kills the tmux server and makes sure kdrift is gone.
func startTmuxUI(t *testing.T, bin, clone string, extra ...string) *tmuxUI {
	t.Helper()
	dir := t.TempDir()
	u := &tmuxUI{t: t, sock: filepath.Join(dir, "tmux.sock"), env: isolatedEnv(t, bin),
		logFile: filepath.Join(dir, "kdrift.log"), exitFile: filepath.Join(dir, "exit")}
	conf := filepath.Join(dir, "tmux.conf")
	// remain-on-exit keeps the last screen after kdrift exits; no status
	// bar, so kdrift has all 40 lines.
	if err := os.WriteFile(conf, []byte("set -g remain-on-exit on\nset -g status off\nset -s escape-time 0\nset -g history-limit 50000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A shell waits for kdrift and writes its exit status to a file: tmux
	// itself sometimes leaves an exited pane process unreaped, without a
	// status, for a long while.
	script := `exitfile=$1; shift; "$@"; echo $? > "$exitfile"`
	args := []string{"-f", conf, "new-session", "-d", "-s", "kdrift", "-x", "120", "-y", "40", "--",
		"/bin/sh", "-c", script, "sh", u.exitFile,
		bin, "--repo", clone, "--kubeconfig", enginetest.Kubeconfig(), "--log-file", u.logFile}
	args = append(args, extra...)
	if out, err := u.tmux(args...); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(u.stop)
	return u
}

// exitStatus is kdrift's exit status, "" while it runs.
func (u *tmuxUI) exitStatus() string {
	data, _ := os.ReadFile(u.exitFile)
	return strings.TrimSpace(string(data))
}

// pids are the pane's shell and its children (kdrift), from /proc.
func (u *tmuxUI) pids() []int {
	out, err := u.tmux("display-message", "-p", "-t", "kdrift", "#{pane_pid}")
	shell, _ := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || shell <= 0 {
		return nil
	}
	pids := []int{shell}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		if st := procStat(pid); len(st) > 1 && st[1] == strconv.Itoa(shell) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procStat is a process's /proc stat fields after its name: state, parent…
func procStat(pid int) []string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	return strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
}

func (u *tmuxUI) tmux(args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-S", u.sock}, args...)...)
	cmd.Env = u.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// stop kills the tmux server and waits until kdrift, its shell and the
// server are gone; whatever survives is killed and reported.
func (u *tmuxUI) stop() {
	pids := u.pids()
	if out, err := u.tmux("display-message", "-p", "#{pid}"); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(out)); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	_, _ = u.tmux("kill-server")
	for _, pid := range pids {
		deadline := time.Now().Add(10 * time.Second)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			u.t.Errorf("pid %d (%v) outlived the tmux server; killed it", pid, procStat(pid))
		}
	}
}

// alive reports whether a process exists and is not a zombie (a zombie
// holds nothing; init reaps it once its parent is gone).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	st := procStat(pid)
	return len(st) > 0 && st[0] != "Z"
}

// keys sends tmux key names (Enter, Escape, j) one by one.
func (u *tmuxUI) keys(keys ...string) {
	u.t.Helper()
	for _, k := range keys {
		if out, err := u.tmux("send-keys", "-t", "kdrift", k); err != nil {
			u.t.Fatalf("tmux send-keys %s: %v\n%s", k, err, out)
		}
	}
}

// typeText types text literally.
func (u *tmuxUI) typeText(text string) {
	u.t.Helper()
	if out, err := u.tmux("send-keys", "-t", "kdrift", "-l", text); err != nil {
		u.t.Fatalf("tmux send-keys -l %q: %v\n%s", text, err, out)
	}
}

// filter narrows the apps view to the apps matching text.
func (u *tmuxUI) filter(text string) {
	u.t.Helper()
	u.keys("/")
	u.typeText(text)
	u.keys("Enter")
	u.waitFor("the filter "+text, func(s string) bool { return strings.Contains(s, "filter: "+text) })
}

// screen is the visible pane as text.
// markedLine is the screen line the diff's cursor ▶ is on, "" when none.
func markedLine(screen string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, "▶") {
			return l
		}
	}
	return ""
}

func (u *tmuxUI) screen() string {
	out, err := u.tmux("capture-pane", "-p", "-t", "kdrift")
	if err != nil {
		return fmt.Sprintf("(capture-pane: %v: %s)", err, out)
	}
	u.last = out
	return out
}

func (u *tmuxUI) screenAndLog() string {
	log, _ := os.ReadFile(u.logFile)
	l := string(log)
	if len(l) > 4000 {
		l = "…" + l[len(l)-4000:]
	}
	return "last screen:\n" + u.last + "\nkdrift log (tail):\n" + l
}

// lingering says why kdrift has not exited 0: its exit status and what
// it printed, or, while it still runs, its goroutines (SIGQUIT makes the
// Go runtime print them on the pane, read back from its history; it ends
// kdrift).
func (u *tmuxUI) lingering() string {
	desc := u.screenAndLog()
	if st := u.exitStatus(); st != "" {
		hist, _ := u.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "kdrift")
		return desc + "\nkdrift exited " + st + "; pane history:\n" + hist
	}
	for i, pid := range u.pids() {
		if i > 0 && alive(pid) && syscall.Kill(pid, syscall.SIGQUIT) == nil {
			time.Sleep(2 * time.Second)
			dump, _ := u.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "kdrift")
			return desc + "\nkdrift's goroutines after SIGQUIT:\n" + dump
		}
	}
	return desc + "\nno kdrift process under the pane's shell"
}

// waitFor polls the screen until ok says yes, or fails printing the last
// screen and the log.
func (u *tmuxUI) waitFor(what string, ok func(screen string) bool) {
	u.t.Helper()
	u.poll(what, func() bool { return ok(u.screen()) }, u.screenAndLog)
}

// poll retries ok every 100ms until e2eDeadline; on timeout it fails with
// what describe says.
func (u *tmuxUI) poll(what string, ok func() bool, describe func() string) {
	u.t.Helper()
	deadline := time.Now().Add(e2eDeadline)
	for !ok() {
		if time.Now().After(deadline) {
			u.t.Fatalf("waited %s for %s; %s", e2eDeadline, what, describe())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitForCommit waits for the clone's HEAD to be kdrift's action commit
// with subject, then checks its author, trailer and push, and that the
// repository is sound.
func (u *tmuxUI) waitForCommit(repo *demo.Repo, subject, action string) {
	u.t.Helper()
	var head string
	u.poll("the commit "+subject, func() bool {
		cmd := exec.Command("git", "-C", repo.Clone, "log", "-1", "--format=%s")
		out, _ := cmd.Output()
		head = strings.TrimSpace(string(out))
		return head == subject
	}, func() string { return "HEAD is " + strconv.Quote(head) + "; " + u.screenAndLog() })
	got := git(u.t, repo.Clone, "log", "-1", "--format=%an <%ae>|%(trailers:key=Kdrift-Action,valueonly)")
	if want := testAuthorName + " <" + testAuthorEmail + ">|" + action; got != want {
		u.t.Fatalf("HEAD author|Kdrift-Action = %q, want %q", got, want)
	}
	// kdrift pushes right after committing: the remote gets the commit.
	h, r := git(u.t, repo.Clone, "rev-parse", "HEAD"), ""
	u.poll("the push of "+subject, func() bool {
		r = git(u.t, repo.Remote, "rev-parse", "main")
		return r == h
	}, func() string {
		return "the remote's main is " + r + ", the clone's HEAD " + h + "; " + u.screenAndLog()
	})
	for _, dir := range []string{repo.Clone, repo.Remote} {
		if out := fsckSettled(dir); out != "" {
			u.t.Fatalf("git fsck in %s: %s", dir, out)
		}
	}
}

// fsckSettled runs `git fsck --strict` in dir and returns what it reports.
// The running kdrift fetches into the clone's remote-tracking refs, and
// go-git rewrites a ref file in place (truncate, then write) rather than
// renaming a new one over it, so an fsck that reads the ref in that
// instant says "bad ref for .git/logs/refs/remotes/…": only that report is
// read again, a few times, and only one that stays fails.
func fsckSettled(dir string) string {
	var out string
	for try := 0; try < 5; try++ {
		cmd := exec.Command("git", "fsck", "--strict", "--no-dangling", "--no-progress")
		cmd.Dir = dir
		b, err := cmd.CombinedOutput()
		out = strings.TrimSpace(string(b))
		if err == nil && out == "" {
			return ""
		}
		if !strings.Contains(out, "bad ref for ") {
			return fmt.Sprintf("%s (%v)", out, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	return out
}

// appsTitle is the top line of the apps view.
const appsTitle = "kdrift │ apps"

// title is the screen's top line, where kdrift shows the views' path,
// without the role the line ends with (who heals: "healing from this
// terminal", "following …").
func title(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	first = strings.TrimSpace(first)
	for _, role := range []string{" │ healing", " │ not healing", " │ following", " │ standby"} {
		if i := strings.Index(first, role); i >= 0 {
			first = first[:i]
		}
	}
	return first
}

// lineWith returns the first line of s containing sub, or "".
func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
