package actions

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testAuthor is the person the tests act as.
const testAuthor = "Lao Li <lao.li@example.com>"

// isolate gives the test an empty HOME so neither go-git nor git reads the
// machine's global git config.
func isolate(t *testing.T) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("KDRIFT_AUTHOR", "")
}

// gitRun runs git in dir as a set-up person and returns its trimmed output.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitTry(dir, args...)
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return out
}

func gitTry(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=Setup", "GIT_AUTHOR_EMAIL=setup@example.com",
		"GIT_COMMITTER_NAME=Setup", "GIT_COMMITTER_EMAIL=setup@example.com",
		"GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fixtureApps is an App file with comments and odd layout, two apps.
const fixtureApps = `# Apps of the render team; edited by people and by kdrift.
apiVersion: kdrift.dev/v1alpha1
kind: App
metadata:
  name: render-prod      # pages on-call
  labels:
    team: render
    env: prod
spec:
  path: deploy/prod
  destination: {context: prod, namespace: prod}
  syncPolicy:
    selfHeal: true   # keep
    prune: false
---
apiVersion: kdrift.dev/v1alpha1
kind: App
metadata:
  name: api-prod
  labels: {team: api, env: prod}
spec:
  path: deploy/api
  syncPolicy:
    selfHeal: true
`

const fixtureWeb = `apiVersion: kdrift.dev/v1alpha1
kind: App
metadata:
  name: web-staging
  labels: {team: web, env: staging}
spec:
  path: deploy/web
  syncPolicy: {selfHeal: true}
`

// newRemote makes a bare "remote" with one commit of App files and deploy
// folders on main, and returns its path.
func newRemote(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	remote := filepath.Join(root, "remote.git")
	gitRun(t, root, "init", "-q", "--bare", "-b", "main", remote)
	seed := filepath.Join(root, "seed")
	gitRun(t, root, "clone", "-q", remote, seed)
	writeFile(t, seed, ".kdrift/apps.yaml", fixtureApps)
	writeFile(t, seed, ".kdrift/web.yaml", fixtureWeb)
	writeFile(t, seed, "deploy/prod/deployment.yaml", "kind: Deployment\nmetadata:\n  name: render\nspec:\n  replicas: 6\n")
	writeFile(t, seed, "deploy/api/deployment.yaml", "kind: Deployment\nmetadata:\n  name: api\n")
	writeFile(t, seed, "README.md", "demo\n")
	gitRun(t, seed, "add", "-A")
	gitRun(t, seed, "commit", "-q", "-m", "initial layout")
	gitRun(t, seed, "push", "-q", "origin", "main")
	return remote
}

// cloneOf clones the remote into a new folder.
func cloneOf(t *testing.T, remote string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	gitRun(t, filepath.Dir(dir), "clone", "-q", remote, dir)
	return dir
}

// fixedClock is a settable clock for tests.
type fixedClock struct{ t time.Time }

func (c *fixedClock) Now() time.Time { return c.t }

func openRepo(t *testing.T, dir string, clock *fixedClock) *Repo {
	t.Helper()
	r, err := Open(context.Background(), RepoOptions{Repo: dir, Author: testAuthor, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func fsckClean(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if out, err := gitTry(d, "fsck", "--strict", "--no-dangling"); err != nil || out != "" {
			t.Fatalf("git fsck in %s: %v\n%s", d, err, out)
		}
	}
}

func newClock() *fixedClock {
	return &fixedClock{t: time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)}
}
