package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// complete runs cobra's completion request (what the shell scripts of
// `kdrift completion` send) in-process and returns the offered values (the
// text before any tab) and the directive. It fails the test on a non-zero
// exit or an error from the completion function.
func complete(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	code, out, errOut := kdrift(t, context.Background(), append([]string{cobra.ShellCompRequestCmd}, args...)...)
	if code != exitOK {
		t.Fatalf("__complete %q: exit %d\n%s", args, code, errOut)
	}
	if strings.Contains(errOut, "Error") {
		t.Fatalf("__complete %q: error on stderr:\n%s", args, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	directive := lines[len(lines)-1]
	var values []string
	for _, l := range lines[:len(lines)-1] {
		v, _, _ := strings.Cut(l, "\t")
		values = append(values, v)
	}
	return values, directive
}

// noFiles is ShellCompDirectiveNoFileComp as the protocol writes it.
var noFiles = fmt.Sprintf(":%d", cobra.ShellCompDirectiveNoFileComp)

func appDoc(name, path, extra string) string {
	return fmt.Sprintf("apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: %s\nspec:\n  path: %s\n%s", name, path, extra)
}

// appsRepo is a repository declaring several Apps in three files, one of
// them with an ignore rule for a custom kind, plus a broken document, a
// hostile name and path (newlines would break the completion protocol) and
// a file that is not YAML.
func appsRepo(t *testing.T) string {
	t.Helper()
	return gitRepo(t, map[string]string{
		".kdrift/render.yaml": appDoc("render-prod", "deploy", "  destination: {context: prod}\n") + "---\n" +
			appDoc("render-dev", "deploy", "  ignoreDifferences:\n  - kind: Widget\n    jsonPointers: [/spec/size]\n") + "---\n" +
			"apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata: [not, a, map]\n",
		".kdrift/tts.yml": appDoc("tts-prod", "deploy", ""),
		".kdrift/hostile.yaml": appDoc(`"evil\ninjected"`, "deploy", "") + "---\n" +
			appDoc("hostile-desc", `"deploy\ninjected\tdesc"`, ""),
		".kdrift/README.md": "not an App\n",
		"deploy/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
	})
}

func TestCompleteAppNames(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	repo := appsRepo(t)
	all := "hostile-desc render-dev render-prod tts-prod"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"diff", "--repo", repo, ""}, all},
		{[]string{"sync", "--repo", repo, "render-"}, "render-dev render-prod"},
		{[]string{"sync", "--repo", repo, "render-prod", ""}, ""}, // takes one APP
		{[]string{"status", "--repo", repo, "render-prod", ""}, "hostile-desc render-dev tts-prod"},
		{[]string{"freeze", "--repo", repo, "tts-prod", "render-dev", "hostile-desc", ""}, "render-prod"},
		{[]string{"unfreeze", "--repo", repo, "t"}, "tts-prod"},
		{[]string{"ignore", "--repo", repo, ""}, all},
		{[]string{"audit", "--repo", repo, ""}, all},
		{[]string{"controller", "--repo", repo, ""}, all},
		{[]string{"diff", "--repo", repo, "nope"}, ""},
	} {
		got, directive := complete(t, tc.args...)
		if strings.Join(got, " ") != tc.want || directive != noFiles {
			t.Errorf("complete %q = %q %s, want %q %s", tc.args, got, directive, tc.want, noFiles)
		}
	}
	// The repository of the current folder, as every command reads it.
	t.Chdir(filepath.Join(repo, "deploy"))
	if got, _ := complete(t, "diff", ""); strings.Join(got, " ") != all {
		t.Errorf("complete in the repository's folder = %q, want %q", got, all)
	}
	// With its descriptions: the path and the destination context.
	_, out, _ := kdrift(t, context.Background(), cobra.ShellCompRequestCmd, "diff", "render-p")
	if !strings.Contains(out, "render-prod\tdeploy → prod\n") {
		t.Errorf("render-prod's description: %q", out)
	}
	_, out, _ = kdrift(t, context.Background(), cobra.ShellCompRequestCmd, "diff", "h")
	if !strings.HasPrefix(out, "hostile-desc\tdeploy injected desc\n:4\n") {
		t.Errorf("a hostile description is not flattened to one line: %q", out)
	}
}

// TestCompleteOutsideRepository: no repository, a missing folder or a
// remote URL offer nothing, without an error and without contacting
// anything.
func TestCompleteOutsideRepository(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	for _, args := range [][]string{
		{"diff", "--repo", dir, ""},
		{"diff", "--repo", filepath.Join(dir, "missing"), ""},
		{"diff", "--repo", "https://git.invalid/org/gitops.git", ""},
		{"revert", "--repo", dir, ""},
		{"freeze", "--repo", dir, "--branch", ""},
	} {
		if got, directive := complete(t, args...); len(got) != 0 || directive != noFiles {
			t.Errorf("complete %q outside a repository = %q %s, want nothing", args, got, directive)
		}
	}
	t.Chdir(dir)
	if got, _ := complete(t, "status", ""); len(got) != 0 {
		t.Errorf("complete in a folder outside any repository = %q", got)
	}
}

func TestCompleteFlags(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	repo := appsRepo(t)
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: c1
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u1
  user: {token: t}
contexts:
- name: dev
  context: {cluster: c1, user: u1}
- name: prod
  context: {cluster: c1, user: u1, namespace: render}
- name: prod-eu
  context: {cluster: c1, user: u1}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kubeconfig)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "--context", ""}, "dev prod prod-eu"},
		{[]string{"diff", "--kubeconfig", kubeconfig, "--context", "prod"}, "prod prod-eu"},
		{[]string{"diff", "--kubeconfig", filepath.Join(t.TempDir(), "none"), "--context", ""}, ""},
		{[]string{"freeze", "x", "--for", ""}, strings.Join(completionDurations, " ")},
		{[]string{"freeze", "x", "--extend", "1"}, "1h 12h"},
		{[]string{"status", "-o", ""}, "text json yaml"},
		{[]string{"ignore", "x", "--repo", repo, "--kind", "W"}, "Widget"},
		{[]string{"ignore", "x", "--kind", "Deploy"}, "Deployment"},
		{[]string{"diff", "--repo", repo, "--branch", ""}, "main"},
	} {
		got, directive := complete(t, tc.args...)
		if strings.Join(got, " ") != tc.want || directive != noFiles {
			t.Errorf("complete %q = %q %s, want %q", tc.args, got, directive, tc.want)
		}
	}
	_, out, _ := kdrift(t, context.Background(), cobra.ShellCompRequestCmd, "status", "--context", "pr")
	if !strings.Contains(out, "prod\tcluster c1, namespace render\n") {
		t.Errorf("context descriptions: %q", out)
	}
}

// TestCompleteRevertCommits: revert offers the branch's commits, newest
// first, with their subjects.
func TestCompleteRevertCommits(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	repo := appsRepo(t)
	if err := os.WriteFile(filepath.Join(repo, "deploy", "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "commit", "-qam", "rename the ConfigMap")
	head := git(t, repo, "rev-parse", "HEAD")
	first := git(t, repo, "rev-parse", "HEAD~1")
	got, _ := complete(t, "revert", "--repo", repo, "")
	if strings.Join(got, " ") != head[:12]+" "+first[:12] {
		t.Fatalf("revert offers %q, want %s and %s", got, head[:12], first[:12])
	}
	_, out, _ := kdrift(t, context.Background(), cobra.ShellCompRequestCmd, "revert", "--repo", repo, head[:4])
	if !strings.HasPrefix(out, head[:12]+"\trename the ConfigMap (Setup, ") {
		t.Errorf("revert's description: %q", out)
	}
	if got, _ := complete(t, "revert", "--repo", repo, head[:12], ""); len(got) != 0 {
		t.Errorf("revert takes one COMMIT, yet offers %q after it", got)
	}
}

// TestCompleteAppsCache: what completion decoded is cached under the hash
// of the .kdrift tree: read again while the App files are unchanged, a new
// list once a commit changes them, and a damaged cache is decoded anew.
func TestCompleteAppsCache(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	repo := appsRepo(t)
	if got, _ := complete(t, "diff", "--repo", repo, ""); strings.Join(got, " ") != "hostile-desc render-dev render-prod tts-prod" {
		t.Fatalf("first completion: %q", got)
	}
	files, _ := filepath.Glob(filepath.Join(cache, "kdrift", "completion", "apps-*.json"))
	if len(files) != 1 {
		t.Fatalf("cache files %q, want one", files)
	}
	// The cache is what the next completion reads: a name only it holds
	// is offered.
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files[0], []byte(strings.Replace(string(data), "tts-prod", "tts-cached", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := complete(t, "diff", "--repo", repo, "tts"); strings.Join(got, " ") != "tts-cached" {
		t.Fatalf("second completion did not read the cache: %q", got)
	}
	// A commit that changes the App files changes the key.
	if err := os.WriteFile(filepath.Join(repo, ".kdrift", "tts.yml"), []byte(appDoc("tts-staging", "deploy", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "commit", "-qam", "rename tts")
	if got, _ := complete(t, "diff", "--repo", repo, "tts"); strings.Join(got, " ") != "tts-staging" {
		t.Fatalf("after the commit: %q", got)
	}
	// A damaged cache file is passed over.
	files, _ = filepath.Glob(filepath.Join(cache, "kdrift", "completion", "apps-*.json"))
	for _, f := range files {
		if err := os.WriteFile(f, []byte("{not json"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := complete(t, "diff", "--repo", repo, "tts"); strings.Join(got, " ") != "tts-staging" {
		t.Fatalf("with a damaged cache: %q", got)
	}
}

// TestCompletionScripts: kdrift completion prints a script for each shell
// that calls kdrift back.
func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string]string{"bash": "__start_kdrift", "zsh": "#compdef kdrift", "fish": "complete -c kdrift", "powershell": "Register-ArgumentCompleter"} {
		code, out, errOut := kdrift(t, context.Background(), "completion", shell)
		if code != exitOK || !strings.Contains(out, want) || !strings.Contains(out, "__complete") {
			t.Errorf("completion %s: exit %d, lacks %q\n%s", shell, code, want, errOut)
		}
	}
}

// benchmarkCompleteApps completes `kdrift diff app-0<tab>` on a repository
// of 1,000 Apps in 100 files, through cobra's completion request as the
// shell sends it, and reports the CPU time per completion beside the wall
// time (on a busy machine the wall time mostly measures the wait for a
// core). The target is under 100 ms.
func benchmarkCompleteApps(b *testing.B, cache string) {
	files := map[string]string{"deploy/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"}
	for f := 0; f < 100; f++ {
		var docs []string
		for a := 0; a < 10; a++ {
			docs = append(docs, appDoc(fmt.Sprintf("app-%03d-%d", f, a), "deploy",
				"  destination: {context: prod, namespace: ns}\n  syncPolicy: {selfHeal: true}\n  ignoreDifferences:\n  - kind: Deployment\n    jsonPointers: [/spec/replicas]\n"))
		}
		files[fmt.Sprintf(".kdrift/team-%03d.yaml", f)] = strings.Join(docs, "---\n")
	}
	b.Setenv("XDG_CACHE_HOME", cache)
	repo := gitRepo(b, files)
	args := []string{cobra.ShellCompRequestCmd, "diff", "--repo", repo, "app-0"}
	env := &cliEnv{stdout: io.Discard, stderr: io.Discard}
	var out syncBuffer
	if code := run(context.Background(), args, &cliEnv{stdout: &out, stderr: io.Discard}); code != exitOK || strings.Count(out.String(), "\n") != 1001 {
		b.Fatalf("exit %d, %d lines", code, strings.Count(out.String(), "\n"))
	}
	var before, after syscall.Rusage
	b.ResetTimer()
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &before); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		run(context.Background(), args, env)
	}
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &after); err != nil {
		b.Fatal(err)
	}
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	b.ReportMetric(float64(cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// BenchmarkCompleteApps1000 is a tab press on App files completion has
// seen before (the cache holds them): the usual case.
func BenchmarkCompleteApps1000(b *testing.B) {
	benchmarkCompleteApps(b, b.TempDir())
}

// BenchmarkCompleteApps1000Uncached is the first tab press after a commit
// changed the App files: every App decoded (no cache can be written).
func BenchmarkCompleteApps1000Uncached(b *testing.B) {
	benchmarkCompleteApps(b, "/dev/null/no-cache")
}
