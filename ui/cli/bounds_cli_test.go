package cli

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
	"kdrift.dev/kdrift/internal/hostile"
)

// maxPeakRSS is the most resident memory one command may reach on a
// hostile repository: the parent's goal is 256 MiB above its baseline
// (about 100 MB on a trivial repository).
const maxPeakRSS = 360 << 20

// runPeak runs the kdrift binary with args and returns its output and
// peak resident size in bytes.
func runPeak(t *testing.T, bin string, args ...string) (string, int64) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out, _ := cmd.CombinedOutput()
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatalf("%v: no resource usage", args)
	}
	return string(out), ru.Maxrss << 10 // kilobytes on Linux
}

// TestHugeGitObjectsRealBinary: the real binary's status and audit on a
// repository with a 256 MiB settings file, or a 256 MiB commit message
// with a freeze's trailers, stay within maxPeakRSS and say what was
// refused, with both sizes (before the bounds: 3.38 GB, 2.19 GB, 3.29 GB).
func TestHugeGitObjectsRealBinary(t *testing.T) {
	skipSlow(t)
	bin := kdriftBinary(t)
	kc := enginetest.Kubeconfig()
	const big = 256 << 20

	settings := gittest.Init(t)
	settings.Commit("base", hostile.BaseFiles)
	hostile.BigSettings(t, settings, big)
	out, peak := runPeak(t, bin, "status", "--repo", settings.Dir, "--kubeconfig", kc)
	t.Logf("status, %d-byte settings file: peak RSS %d MB", big, peak>>20)
	if peak > maxPeakRSS || !strings.Contains(out, fmt.Sprintf("is %d bytes, more than the 4194304", big+47)) {
		t.Errorf("status with a huge settings file: peak %d MB\n%s", peak>>20, out)
	}

	msg := gittest.Init(t)
	msg.Commit("base", hostile.BaseFiles)
	huge := hostile.BigMessage(t, msg, "web", big)
	out, peak = runPeak(t, bin, "status", "--repo", msg.Dir, "--kubeconfig", kc)
	t.Logf("status, %d-byte commit message: peak RSS %d MB", big, peak>>20)
	if peak > maxPeakRSS || !strings.Contains(out, "web") {
		t.Errorf("status with a huge commit message: peak %d MB\n%s", peak>>20, out)
	}
	out, peak = runPeak(t, bin, "audit", "--repo", msg.Dir)
	t.Logf("audit, %d-byte commit message: peak RSS %d MB", big, peak>>20)
	if peak > maxPeakRSS || !strings.Contains(out, "unread") || !strings.Contains(out, huge[:12]) || !strings.Contains(out, "more than the 1048576") {
		t.Errorf("audit with a huge commit message: peak %d MB\n%s", peak>>20, out)
	}
}

// TestStatusShowsHostileTextEscaped: a freeze's by with a colour and a
// file named with CSI and OSC sequences (bad YAML) reach status' SELF-HEAL
// and ERROR columns escaped.
func TestStatusShowsHostileTextEscaped(t *testing.T) {
	kc := enginetest.Kubeconfig()
	files := map[string]string{}
	for f, body := range hostile.BaseFiles {
		files[f] = body
	}
	files[".kdrift/web.yaml"] += "  freeze:\n    reason: \"INC-1\"\n    by: \"Evil \\e[32m<e@x>\"\n    at: 2026-12-01T10:00:00Z\n"
	files[".kdrift/plain.yaml"] = "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: plain\nspec:\n  path: deploy/plain\n"
	files["deploy/plain/x\x1b[41mRED\x1b]0;TITLE\a.yaml"] = "kind: [\n"
	dir := gitRepo(t, files)
	code, out, errOut := kdrift(t, t.Context(), "status", "--repo", dir, "--kubeconfig", kc)
	if r, bad := hostile.RawControl(out + errOut); bad {
		t.Errorf("status wrote %U raw (exit %d):\n%q\n%q", r, code, out, errOut)
	}
	for _, want := range []string{`by Evil \e[32m<e@x>`, `x\e[41mRED\e]0;TITLE\x07.yaml`} {
		if !strings.Contains(out, want) {
			t.Errorf("status does not show %s:\n%s\n%s", want, out, errOut)
		}
	}
}
