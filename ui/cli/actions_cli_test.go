package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Setup", "GIT_AUTHOR_EMAIL=setup@example.com",
		"GIT_COMMITTER_NAME=Setup", "GIT_COMMITTER_EMAIL=setup@example.com", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// kdriftAction runs one action command in-process (no cluster involved).
func kdriftAction(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return kdrift(t, context.Background(), args...)
}

// TestActionCommandsEndToEnd drives freeze, unfreeze, ignore, revert,
// audit and push through run() against a real clone and bare remote.
func TestActionCommandsEndToEnd(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("KDRIFT_AUTHOR", "")
	root := t.TempDir()
	remote := filepath.Join(root, "remote.git")
	git(t, root, "init", "-q", "--bare", "-b", "main", remote)
	dir := filepath.Join(root, "clone")
	git(t, root, "clone", "-q", remote, dir)
	appFile := "# render apps\napiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: render-prod\n  labels: {env: prod}\nspec:\n  path: deploy/prod  # overlay\n  syncPolicy:\n    selfHeal: true\n"
	for p, c := range map[string]string{".kdrift/apps.yaml": appFile, "deploy/prod/d.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: render\nspec:\n  replicas: 6\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "initial")
	git(t, dir, "push", "-q", "-u", "origin", "main")
	repo := []string{"--repo", dir}

	// No identity: refused with how to set one.
	code, _, stderr := kdriftAction(t, append([]string{"freeze", "render-prod", "--reason", "x"}, repo...)...)
	if code != exitError || !strings.Contains(stderr, "git config user.name") {
		t.Fatalf("no identity: %d %s", code, stderr)
	}
	t.Setenv("KDRIFT_AUTHOR", "Lao Li <lao.li@example.com>")
	code, _, stderr = kdriftAction(t, append([]string{"freeze", "render-prod", "--reason", " "}, repo...)...)
	if code != exitError || !strings.Contains(stderr, "reason is required") {
		t.Fatalf("blank reason: %d %s", code, stderr)
	}

	code, stdout, stderr := kdriftAction(t, append([]string{"freeze", "render-prod", "--reason", "INC-1 hold render", "--for", "4h"}, repo...)...)
	if code != exitOK || !strings.Contains(stdout, "pushed to origin/main") {
		t.Fatalf("freeze: %d %s %s", code, stdout, stderr)
	}
	if s := git(t, remote, "log", "-1", "--format=%an|%s|%(trailers:key=Kdrift-Action,valueonly)"); s != "Lao Li|freeze(render-prod): INC-1 hold render|freeze" {
		t.Fatalf("log %q", s)
	}
	code, stdout, stderr = kdriftAction(t, append([]string{"freeze", "render-prod", "--extend", "2h", "--reason", "longer", "-o", "json"}, repo...)...)
	var res struct {
		Commit string `json:"commit"`
		Pushed bool   `json:"pushed"`
	}
	if code != exitOK || json.Unmarshal([]byte(stdout), &res) != nil || !res.Pushed || len(res.Commit) != 40 {
		t.Fatalf("extend: %d %s %s", code, stdout, stderr)
	}
	code, _, stderr = kdriftAction(t, append([]string{"unfreeze", "render-prod", "--reason", "INC-1 over"}, repo...)...)
	if code != exitOK {
		t.Fatalf("unfreeze: %s", stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, ".kdrift/apps.yaml")); string(got) != appFile {
		t.Fatalf("round trip:\n%s", got)
	}
	code, _, stderr = kdriftAction(t, append([]string{"ignore", "render-prod", "--group", "apps", "--kind", "Deployment", "--json-pointer", "/spec/replicas", "--reason", "HPA owns it"}, repo...)...)
	if code != exitOK {
		t.Fatalf("ignore: %s", stderr)
	}
	code, _, stderr = kdriftAction(t, append([]string{"ignore", "render-prod", "--kind", "Deployment", "--json-pointer", "spec", "--reason", "x"}, repo...)...)
	if code != exitError || !strings.Contains(stderr, "must start with") {
		t.Fatalf("bad pointer: %d %s", code, stderr)
	}

	// Revert a person's bad commit: preview, then commit.
	if err := os.WriteFile(filepath.Join(dir, "deploy/prod/d.yaml"), []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: render\nspec:\n  replicas: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "commit", "-q", "-am", "scale down")
	git(t, dir, "push", "-q")
	bad := git(t, dir, "rev-parse", "HEAD")
	code, stdout, _ = kdriftAction(t, append([]string{"revert", bad, "--preview"}, repo...)...)
	if code != exitOK || !strings.Contains(stdout, "-  replicas: 1\n+  replicas: 6\n") {
		t.Fatalf("preview: %d %s", code, stdout)
	}
	code, _, stderr = kdriftAction(t, append([]string{"revert", bad, "--reason", "INC-2 render at 1 replica"}, repo...)...)
	if code != exitOK {
		t.Fatalf("revert: %s", stderr)
	}
	if s := git(t, remote, "log", "-1", "--format=%s"); s != `Revert "scale down"` {
		t.Fatalf("revert subject %q", s)
	}

	// Remote down: the freeze stays local (exit 0, warning), push fails
	// (exit 2), then succeeds.
	git(t, dir, "remote", "set-url", "origin", filepath.Join(root, "gone.git"))
	code, stdout, stderr = kdriftAction(t, append([]string{"freeze", "render-prod", "--reason", "INC-3 offline"}, repo...)...)
	if code != exitOK || !strings.Contains(stdout, "committed locally as") || !strings.Contains(stderr, "kdrift push") {
		t.Fatalf("offline freeze: %d %s %s", code, stdout, stderr)
	}
	if code, _, _ = kdriftAction(t, append([]string{"push"}, repo...)...); code != exitError {
		t.Fatalf("push while down exited %d", code)
	}
	git(t, dir, "remote", "set-url", "origin", remote)
	if code, _, stderr = kdriftAction(t, append([]string{"push"}, repo...)...); code != exitOK {
		t.Fatalf("push: %s", stderr)
	}

	code, stdout, stderr = kdriftAction(t, append([]string{"audit", "render-prod", "-o", "json"}, repo...)...)
	var entries []struct {
		Action      string            `json:"action"`
		Reason      string            `json:"reason"`
		FreezeState map[string]string `json:"freezeState"`
	}
	if code != exitOK || json.Unmarshal([]byte(stdout), &entries) != nil {
		t.Fatalf("audit: %d %s %s", code, stdout, stderr)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Action+":"+e.FreezeState["render-prod"])
	}
	if strings.Join(got, " ") != "freeze:active revert: ignore: unfreeze: extend:lifted freeze:lifted" {
		t.Fatalf("audit actions %v", got)
	}
	code, stdout, _ = kdriftAction(t, append([]string{"audit"}, repo...)...)
	if code != exitOK || !strings.Contains(stdout, "TIME") || !strings.Contains(stdout, "render-prod (active)") {
		t.Fatalf("audit table: %s", stdout)
	}
	if out := git(t, remote, "fsck", "--strict", "--no-dangling"); out != "" {
		t.Fatalf("fsck: %s", out)
	}
}
