// Package gittest makes real Git repositories on disk for tests, with the
// git command.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Repo is a Git working copy made for one test.
type Repo struct {
	t   testing.TB
	Dir string
}

// Init makes a new repository with branch main in a fresh temporary folder.
func Init(t testing.TB) *Repo {
	t.Helper()
	r := &Repo{t: t, Dir: t.TempDir()}
	r.Git("init", "-q", "-b", "main")
	return r
}

// InitBare makes a bare repository with default branch main, to push to.
func InitBare(t testing.TB) *Repo {
	t.Helper()
	r := &Repo{t: t, Dir: t.TempDir()}
	r.Git("init", "-q", "--bare", "-b", "main")
	return r
}

// Git runs git in the repository with a fixed identity and returns its
// trimmed output; a failure fails the test.
func (r *Repo) Git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.Dir
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=Test Author", "GIT_AUTHOR_EMAIL=author@example.com",
		"GIT_COMMITTER_NAME=Test Author", "GIT_COMMITTER_EMAIL=author@example.com",
		"GIT_CONFIG_NOSYSTEM=1", "HOME="+r.Dir,
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Write writes files (path relative to the repository -> contents), making
// folders as needed. It does not commit.
func (r *Repo) Write(files map[string]string) {
	r.t.Helper()
	for name, content := range files {
		p := filepath.Join(r.Dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
}

// Commit writes files, commits everything with message msg and returns the
// new commit's hash.
func (r *Repo) Commit(msg string, files map[string]string) string {
	r.t.Helper()
	r.Write(files)
	r.Git("add", "-A")
	r.Git("commit", "-q", "--allow-empty", "-m", msg)
	return r.Git("rev-parse", "HEAD")
}

// URL is the repository's file:// URL.
func (r *Repo) URL() string { return "file://" + filepath.ToSlash(r.Dir) }
