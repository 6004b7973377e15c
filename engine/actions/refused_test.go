package actions

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// protectMain installs a pre-receive hook in the bare remote that refuses
// every update of refs/heads/main, as a forge's branch protection does,
// saying so in the words GitLab uses.
func protectMain(t *testing.T, remote string) {
	t.Helper()
	hook := `#!/bin/sh
while read old new ref; do
  if [ "$ref" = "refs/heads/main" ]; then
    echo "GitLab: You are not allowed to push code to protected branches on this project." >&2
    exit 1
  fi
done
exit 0
`
	p := filepath.Join(remote, "hooks", "pre-receive")
	if err := os.WriteFile(p, []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestRefusedPushIsTyped(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	protectMain(t, remote)
	dir := cloneOf(t, remote)
	before := gitRun(t, remote, "rev-parse", "main")
	r := openRepo(t, dir, newClock())
	res := freezeOne(t, r, "render-prod", "INC-77 keep manual scale")
	if res.Pushed || res.Refused == nil {
		t.Fatalf("want a refused push, got %+v", res)
	}
	if res.Retries != 0 {
		t.Fatalf("a refusal is not a race; retried %d times", res.Retries)
	}
	if res.Refused.Branch != "main" || !strings.HasPrefix(res.Refused.Remote, "origin (") {
		t.Fatalf("refusal %+v", res.Refused)
	}
	joined := strings.Join(res.Refused.Lines, "\n")
	for _, want := range []string{"You are not allowed to push code to protected branches", "pre-receive hook declined"} {
		if !strings.Contains(joined, want) {
			t.Errorf("lines %q lack %q", res.Refused.Lines, want)
		}
	}
	if !strings.Contains(res.Summary(), "in force nowhere") {
		t.Errorf("summary %q", res.Summary())
	}
	if got := gitRun(t, remote, "rev-parse", "main"); got != before {
		t.Fatalf("remote main moved: %s -> %s", before, got)
	}
	// kdrift push says the same, and sets the same field.
	pres, err := r.Push(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if pres.Refused == nil || pres.Pushed {
		t.Fatalf("push result %+v", pres)
	}
}

func TestRefusalFromForgeMessages(t *testing.T) {
	cases := []struct {
		name     string
		err      error
		progress string
		want     string // a line that must be kept; "" means not a refusal
	}{
		{"github protected", errors.New("command error on refs/heads/main: protected branch hook declined"),
			"error: GH006: Protected branch update failed for refs/heads/main.\nerror: Changes must be made through a pull request.\n", "GH006: Protected branch update failed"},
		{"gitlab", errors.New("command error on refs/heads/main: pre-receive hook declined"),
			"GitLab: You are not allowed to push code to protected branches on this project.\n", "You are not allowed to push code to protected branches"},
		{"gitea", errors.New("command error on refs/heads/main: pre-receive hook declined"),
			"Gitea: Not allowed to push to protected branch main\n", "Not allowed to push to protected branch main"},
		{"plain hook", errors.New("command error on refs/heads/main: pre-receive hook declined"), "", "pre-receive hook declined"},
		{"http 403", fmt.Errorf("push: %w", transport.ErrAuthorizationFailed), "", "authorization failed (HTTP 403)"},
		{"ssh permission", errors.New("ERROR: Permission to acme/fleet.git denied to oncall."), "", "Permission to acme/fleet.git denied to oncall."},
		{"lost race", errors.New("command error on refs/heads/main: failed to update ref"), "", ""},
		{"non fast forward", errors.New("non-fast-forward update: refs/heads/main"), "", ""},
		{"unreachable", errors.New("dial tcp 10.0.0.1:443: connect: connection refused"), "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := refusal(c.err, "origin (https://git.example.com/acme/fleet.git)", "main", c.progress)
			if c.want == "" {
				if got != nil {
					t.Fatalf("not a refusal, got %+v", got)
				}
				return
			}
			if got == nil {
				t.Fatal("a refusal was not recognised")
			}
			if !strings.Contains(strings.Join(got.Lines, "\n"), c.want) {
				t.Fatalf("lines %q lack %q", got.Lines, c.want)
			}
			var as *PushRefusedError
			if !errors.As(fmt.Errorf("wrapped: %w", got), &as) {
				t.Fatal("errors.As does not find the refusal")
			}
		})
	}
}

func TestRefusalRedactsAndBounds(t *testing.T) {
	progress := "see https://oncall:s3cret-token@git.example.com/acme/fleet for why\n" +
		"Counting objects: 100% (3/3)\rCounting objects: 100% (3/3), done.\n"
	for i := 0; i < 50; i++ {
		progress += fmt.Sprintf("protected branch %d\x1b[31m %s\n", i, strings.Repeat("x", 400))
	}
	got := refusal(errors.New("command error on refs/heads/main: pre-receive hook declined"), "origin", "main", progress)
	if got == nil {
		t.Fatal("not recognised")
	}
	all := got.Error()
	if strings.Contains(all, "s3cret-token") || strings.Contains(all, "\x1b") {
		t.Fatalf("credential or control byte leaked: %q", all)
	}
	if strings.Contains(all, "Counting objects") {
		t.Fatalf("progress counters kept: %q", all)
	}
	if len(got.Lines) != maxRefusedLines {
		t.Fatalf("%d lines", len(got.Lines))
	}
	for _, l := range got.Lines {
		if len(l) > maxRefusedLineLen+len("…") {
			t.Fatalf("line of %d bytes", len(l))
		}
	}
}
