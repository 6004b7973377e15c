package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/internal/controlplane"
	"kdrift.dev/kdrift/internal/demo"
	"kdrift.dev/kdrift/internal/enginetest"
)

// readmeLine is one command of a ```sh readme-test block.
type readmeLine struct {
	n    int // line number in README.md
	text string
	exit int // from a trailing `# exit N`; 0 without one
}

var exitComment = regexp.MustCompile(`#\s*exit\s+(\d+)\s*$`)

// readmeTestLines returns the lines of every ```sh readme-test block of
// README.md, skipping blank and comment-only lines.
func readmeTestLines(t *testing.T, path string) []readmeLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []readmeLine
	in := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		trimmed := strings.TrimSpace(l)
		switch {
		case !in && strings.HasPrefix(trimmed, "```"):
			f := strings.Fields(strings.TrimPrefix(trimmed, "```"))
			in = len(f) >= 2 && f[0] == "sh" && f[1] == "readme-test"
		case in && strings.HasPrefix(trimmed, "```"):
			in = false
		case in && trimmed != "" && !strings.HasPrefix(trimmed, "#"):
			rl := readmeLine{n: n, text: trimmed}
			if m := exitComment.FindStringSubmatch(trimmed); m != nil {
				rl.exit, _ = strconv.Atoi(m[1])
			}
			out = append(out, rl)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReadmeCommands runs every line of README.md's ```sh readme-test
// blocks with bash, in order, against a freshly staged demo (DEMO_REPO),
// with the built kdrift first on PATH: each must exit as its `# exit N`
// says (0 without one), and what each kdrift subcommand prints must be
// plausible for it.
func TestReadmeCommands(t *testing.T) {
	skipSlow(t)
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	lines := readmeTestLines(t, filepath.Join(root, "README.md"))
	if len(lines) == 0 {
		t.Fatal("README.md has no ```sh readme-test block: the README says its CLI examples are tested")
	}
	bin := kdriftBinary(t)
	repo := stageTestDemo(t)
	// Prod's SOPS-encrypted Secret went in decrypted, with the demo's key.
	sec, err := enginetest.Clientset(t).CoreV1().Secrets(demo.Namespace("prod")).Get(context.Background(), "tts-vendor-credentials", metav1.GetOptions{})
	if err != nil || string(sec.Data["region"]) != "eu-west" {
		t.Fatalf("the demo's encrypted Secret is not applied decrypted: %v", err)
	}
	env := append(isolatedEnv(t, bin), "DEMO_REPO="+repo.Clone)
	work := t.TempDir()

	for _, l := range lines {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-c", l.text)
		cmd.Env = env
		cmd.Dir = work
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		began := time.Now()
		err := cmd.Run()
		cancel()
		t.Logf("README.md:%d: %s (%.1fs)", l.n, l.text, time.Since(began).Seconds())
		code := 0
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			code = exit.ExitCode()
		case err != nil:
			t.Fatalf("README.md:%d: %s: %v", l.n, l.text, err)
		}
		if code != l.exit {
			t.Errorf("README.md:%d: %s\nexit %d, want %d\nstdout:\n%s\nstderr:\n%s", l.n, l.text, code, l.exit, stdout.String(), stderr.String())
			continue
		}
		if problem := plausible(t, repo, l.text, stdout.String()); problem != "" {
			t.Errorf("README.md:%d: %s\n%s\nstdout:\n%s\nstderr:\n%s", l.n, l.text, problem, stdout.String(), stderr.String())
		}
	}
}

// plausible checks what a README line printed or did, by its kdrift
// subcommand; it returns the problem, or "" when the output fits. A kdrift
// subcommand without a check here fails, so that a new README line gets one.
func plausible(t *testing.T, repo *demo.Repo, line, stdout string) string {
	t.Helper()
	args := strings.Fields(line)
	if len(args) < 2 || args[0] != "kdrift" {
		return "" // another tool (git): its exit code is the check
	}
	missing := func(want ...string) string {
		for _, w := range want {
			if !strings.Contains(stdout, w) {
				return "output does not mention " + strconv.Quote(w)
			}
		}
		return ""
	}
	switch args[1] {
	case "status":
		if !strings.Contains(line, "-o json") {
			return missing(demo.Apps...)
		}
		var res struct {
			Apps []struct {
				Name     string `json:"name"`
				SelfHeal string `json:"selfHeal"`
			} `json:"apps"`
		}
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			return "status -o json does not parse: " + err.Error()
		}
		got := map[string]string{}
		for _, a := range res.Apps {
			got[a.Name] = a.SelfHeal
		}
		if len(got) != len(demo.Apps) || got[demo.AppStaging] != "frozen" {
			return "status -o json: apps and self-heal " + strconv.Quote(stdout)
		}
		return ""
	case "diff":
		return missing("render-worker", "replicas", "kubectl")
	case "freeze", "unfreeze":
		reason := quoted(line, "--reason")
		if reason == "" {
			return "no --reason \"...\" on the line"
		}
		body := git(t, repo.Clone, "log", "-1", "--format=%B")
		for _, w := range []string{reason, "Kdrift-Action: " + args[1], "Kdrift-App: " + args[2]} {
			if !strings.Contains(body, w) {
				return "HEAD's message does not contain " + strconv.Quote(w) + ":\n" + body
			}
		}
		if res := flagValue(line, "--resource"); res != "" && !namesResource(body, res) {
			return "HEAD's message does not name the frozen resource " + strconv.Quote(res) + ":\n" + body
		}
		if h, r := git(t, repo.Clone, "rev-parse", "HEAD"), git(t, repo.Remote, "rev-parse", "main"); h != r {
			return "the " + args[1] + " commit was not pushed"
		}
		return ""
	case "audit":
		return missing("freeze", "unfreeze", demo.FreezeReason)
	case "owners":
		// Staging's hand-scaled render worker is a contested row; prod's
		// autoscaler holds its replicas.
		return missing("Deployment", "spec.replicas", "kubectl", demo.HPA)
	}
	return "no plausibility check for `kdrift " + args[1] + "` in readme_test.go: add one"
}

// flagValue returns the unquoted word after flag on a shell line.
func flagValue(line, flag string) string {
	f := strings.Fields(line)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == flag {
			return f[i+1]
		}
	}
	return ""
}

// quoted returns the double-quoted value after flag on a shell line.
func quoted(line, flag string) string {
	_, rest, ok := strings.Cut(line, flag+` "`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// namesResource reports whether a commit message's Kdrift-Resource trailer
// is ref as typed (Kind.group/name) once resolved: the same kind and name,
// with the namespace the App renders it in.
func namesResource(body, ref string) bool {
	kind, name, ok := strings.Cut(ref, "/")
	if !ok {
		return false
	}
	for _, l := range strings.Split(body, "\n") {
		v, ok := strings.CutPrefix(l, "Kdrift-Resource: ")
		if !ok {
			continue
		}
		if v == ref || (strings.HasPrefix(v, kind+"/") && strings.HasSuffix(v, "/"+name)) {
			return true
		}
	}
	return false
}
