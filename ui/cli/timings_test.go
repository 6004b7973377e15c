package cli

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"kdrift.dev/kdrift/internal/enginetest"
)

// TestTimingsCLI: --timings prints every phase of a one-shot diff on
// stderr, after an unchanged stdout; a second diff right after the first
// skips the upstream fetch and says so.
func TestTimingsCLI(t *testing.T) {
	ctx := context.Background()
	repo := cliRepo(t, "timings")
	bare := t.TempDir() + "/upstream.git"
	for _, args := range [][]string{{"clone", "-q", "--bare", repo, bare}, {"-C", repo, "remote", "add", "origin", bare}, {"-C", repo, "fetch", "-q", "origin"}, {"-C", repo, "branch", "-q", "-u", "origin/main"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	args := []string{"diff", "timings", "--live", "--timings", "--repo", repo, "--kubeconfig", enginetest.Kubeconfig()}
	code, out, errOut := kdrift(t, ctx, args...)
	if code != exitDrift || !strings.Contains(out, "Deployment/timings/render  Missing") || strings.Contains(out, "timings, in ms") {
		t.Fatalf("diff --timings: code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, phase := range []string{"start-up", "open", "fetch", "git", "discover", "cluster", "render", "compare", "output", "total"} {
		if !regexp.MustCompile(`(?m)^  ` + phase + ` +[0-9]`).MatchString(errOut) {
			t.Errorf("--timings lacks the phase %s:\n%s", phase, errOut)
		}
	}
	t.Logf("first diff:\n%s", errOut)
	code, _, errOut = kdrift(t, ctx, args...)
	if code != exitDrift || !regexp.MustCompile(`(?m)^  fetch +- +- +- +skipped: .*upstream\.git was fetched [0-9.]+m?s ago$`).MatchString(errOut) {
		t.Fatalf("a diff right after another should skip the fetch and say so: code %d\n%s", code, errOut)
	}
	t.Logf("second diff:\n%s", errOut)
	if testing.Short() {
		return // the slow tier builds the binary
	}
	// The real binary: start-up counts from its own start.
	cmd := exec.Command(kdriftBinary(t), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitDrift {
		t.Fatalf("kdrift %v: %v\n%s", args, err, stderr.String())
	}
	for _, phase := range []string{"start-up", "open", "git", "discover", "cluster", "render", "compare", "output", "total"} {
		if !regexp.MustCompile(`(?m)^  ` + phase + ` +[0-9]`).MatchString(stderr.String()) {
			t.Errorf("the binary's --timings lacks the phase %s:\n%s", phase, stderr.String())
		}
	}
	t.Logf("the binary:\n%s", stderr.String())
}
