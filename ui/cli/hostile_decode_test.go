package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/hostile"
)

// maxDecodeGrowth is how far a hostile commit may move the parent's peak
// resident memory above a trivial repository's (the controller's Pod
// limit is 512Mi and a trivial repository takes about 100 MB).
const maxDecodeGrowth = 256 << 20

// peak is what one run of the kdrift binary cost, sampled from /proc
// every few milliseconds until it exits. (The kernel's ru_maxrss of a
// child is no measure here: a child started by os/exec shares the test
// process's memory until it calls exec, and exec records that peak.)
type peak struct {
	// parent is the peak resident size of the kdrift process (VmHWM).
	parent int64
	// tree is the peak of the kdrift process and its render workers
	// together, what a Pod's memory limit counts: logged, not checked
	// here (each worker has its own 256 MiB limit; how many run at once
	// is the pool's).
	tree int64
}

// runMeasured runs the kdrift binary with args and returns its output
// and peaks.
func runMeasured(t *testing.T, bin string, args ...string) (string, peak) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var p peak
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		pid := cmd.Process.Pid
		for {
			p.parent = max(p.parent, procField(pid, "VmHWM:"))
			tree := procField(pid, "VmRSS:")
			for _, c := range children(pid) {
				tree += procField(c, "VmRSS:")
			}
			p.tree = max(p.tree, tree)
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	<-sampled
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("kdrift %v: %v", args, err)
	}
	return out.String(), p
}

// procField is a size field of /proc/PID/status, in bytes; 0 once the
// process is gone.
func procField(pid int, field string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// children are the processes pid started (its render workers).
func children(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		for f := range strings.FieldsSeq(string(data)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// appError is the error status -o json gives app, or "" when it lists
// the app without one; ok is false when it does not list it.
func appError(out, app string) (string, bool) {
	var doc struct {
		Apps []struct {
			Name  string `json:"name"`
			Error string `json:"error"`
		} `json:"apps"`
	}
	if i := strings.Index(out, "{"); i >= 0 {
		out = out[i:]
	}
	if json.NewDecoder(strings.NewReader(out)).Decode(&doc) != nil {
		return "", false
	}
	for _, a := range doc.Apps {
		if a.Name == app {
			return a.Error, true
		}
	}
	return "", false
}

// TestHostileDecodingBounded runs the real binary on each commit of
// hostile.DecodeCases: the parent's peak stays within maxDecodeGrowth of
// the base repository's, the App the commit attacks is Error naming the
// bound, and web goes on (where the commit leaves it alone). The log is
// the table of peaks per case.
func TestHostileDecodingBounded(t *testing.T) {
	skipSlow(t)
	bin := kdriftBinary(t)
	ns := "hostile-decode"
	if _, err := enginetest.Clientset(t).CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g := func(repo string, args []string) []string {
		return append(append([]string(nil), args...), "--repo", repo, "--kubeconfig", enginetest.Kubeconfig())
	}
	base := hostile.DecodeBase(ns)
	baseRepo := gitRepo(t, base)
	_, baseline := runMeasured(t, bin, g(baseRepo, []string{"status", "-o", "json"})...)
	t.Logf("%-30s %8s %8s", "case", "parent", "+workers")
	t.Logf("%-30s %6.0fMB %6.0fMB", "base", mb(baseline.parent), mb(baseline.tree))
	for _, c := range hostile.DecodeCases(ns) {
		files := maps.Clone(base)
		maps.Copy(files, c.Files)
		out, p := runMeasured(t, bin, g(gitRepo(t, files), c.Args)...)
		t.Logf("%-30s %6.0fMB %6.0fMB", c.Name, mb(p.parent), mb(p.tree))
		if p.parent > baseline.parent+maxDecodeGrowth {
			t.Errorf("%s: the parent's peak is %.0f MB, more than %.0f MB above the base repository's %.0f MB", c.Name, mb(p.parent), mb(maxDecodeGrowth), mb(baseline.parent))
		}
		if c.App == "" {
			if e, ok := appError(out, "web"); !ok || e != "" {
				t.Errorf("%s: web = %q (listed %v), want it without an error\n%s", c.Name, e, ok, clip(out))
			}
			continue
		}
		if c.Args[0] != "status" {
			if !strings.Contains(out, c.Want) {
				t.Errorf("%s: kdrift %v does not say %q\n%s", c.Name, c.Args, c.Want, clip(out))
			}
			continue
		}
		if e, _ := appError(out, c.App); !strings.Contains(e, c.Want) {
			t.Errorf("%s: %s's error = %q, want it to contain %q\n%s", c.Name, c.App, e, c.Want, clip(out))
		}
		if c.App != "web" {
			if e, ok := appError(out, "web"); !ok || e != "" {
				t.Errorf("%s: web = %q (listed %v), want it to go on without an error", c.Name, e, ok)
			}
		}
	}
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

// clip keeps the start of a long output for a failure message.
func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}
