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
	if res.Refused == nil {
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
	if got := gitRun(t, remote, "rev-parse", "main"); got != before {
		t.Fatalf("remote main moved: %s -> %s", before, got)
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

func TestRefusedFreezeGoesToTheChannel(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	protectMain(t, remote)
	dir := cloneOf(t, remote)
	before := gitRun(t, dir, "rev-parse", "HEAD")
	r := openRepo(t, dir, newClock())
	res := freezeOne(t, r, "render-prod", "INC-77 keep manual scale")
	if res.Channel != "kdrift/freezes" || !res.Pushed || res.Refused == nil {
		t.Fatalf("result %+v", res)
	}
	if !strings.Contains(res.Summary(), "incident channel") {
		t.Fatalf("summary %q", res.Summary())
	}
	// git is the audit: the channel's log holds the record with its trailers.
	log := gitRun(t, remote, "log", "-1", "--format=%s%n%b", "kdrift/freezes")
	if !strings.Contains(log, "freeze(render-prod): INC-77 keep manual scale") || !strings.Contains(log, "Kdrift-Action: freeze") {
		t.Fatalf("channel log:\n%s", log)
	}
	if !strings.Contains(gitRun(t, remote, "show", "kdrift/freezes:.kdrift/apps.yaml"), "INC-77") {
		t.Fatal("the channel does not hold the freeze")
	}
	if strings.Contains(gitRun(t, remote, "show", "main:.kdrift/apps.yaml"), "INC-77") {
		t.Fatal("main holds the freeze")
	}
	if got := gitRun(t, dir, "rev-parse", "HEAD"); got != before {
		t.Fatalf("the local branch kept the refused commit: %s", got)
	}
	if gitRun(t, dir, "status", "--porcelain") != "" {
		t.Fatal("the working tree is dirty")
	}
	// The unfreeze goes the same way and lifts the channel's freeze.
	ures, err := r.Unfreeze(t.Context(), UnfreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: "INC-77 over"})
	if err != nil {
		t.Fatal(err)
	}
	if ures.Channel == "" {
		t.Fatalf("unfreeze result %+v", ures)
	}
	if strings.Contains(gitRun(t, remote, "show", "kdrift/freezes:.kdrift/apps.yaml"), "INC-77 keep") {
		t.Fatal("the channel still holds the freeze")
	}
	if n := gitRun(t, remote, "rev-list", "--count", "main..kdrift/freezes"); n != "2" {
		t.Fatalf("%s channel commits", n)
	}
	fsckClean(t, remote, dir)
}

func TestSettingsNameTheChannelAndAlways(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	seed := cloneOf(t, remote)
	writeFile(t, seed, ".kdrift/settings.yaml", "apiVersion: kdrift.dev/v1alpha1\nkind: Settings\nspec:\n  freezes:\n    channel: oncall/holds\n    always: true\n")
	gitRun(t, seed, "add", "-A")
	gitRun(t, seed, "commit", "-q", "-m", "settings")
	gitRun(t, seed, "push", "-q", "origin", "main")
	dir := cloneOf(t, remote)
	mainBefore := gitRun(t, remote, "rev-parse", "main")
	res := freezeOne(t, openRepo(t, dir, newClock()), "render-prod", "INC-9 hold")
	if res.Channel != "oncall/holds" || res.Refused != nil {
		t.Fatalf("result %+v", res)
	}
	if gitRun(t, remote, "rev-parse", "main") != mainBefore {
		t.Fatal("always: main was written")
	}
	gitRun(t, remote, "rev-parse", "--verify", "oncall/holds")
}

func TestRefusedWithNoChannelIsInForceNowhere(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	// A hook that refuses every branch: the channel too.
	hook := "#!/bin/sh\necho 'Gitea: Not allowed to push to protected branch' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(remote, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := cloneOf(t, remote)
	res := freezeOne(t, openRepo(t, dir, newClock()), "render-prod", "INC-78 hold")
	if res.Channel != "" || res.Refused == nil || res.ChannelError == "" {
		t.Fatalf("result %+v", res)
	}
	if !strings.Contains(res.Summary(), "in force nowhere") {
		t.Fatalf("summary %q", res.Summary())
	}
}

// TestChannelUnfreezeOfMainsFreezeIsRefused: a freeze committed on main
// (before main was protected) cannot be lifted by a record on the
// incident channel, which readers ignore for it: the channel takes no
// record, and the result says the unfreeze is in force nowhere and to go
// through a pull request (the CLI exits 3).
func TestChannelUnfreezeOfMainsFreezeIsRefused(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	dir := cloneOf(t, remote)
	r := openRepo(t, dir, newClock())
	if res := freezeOne(t, r, "render-prod", "INC-5 hold"); !res.Pushed || res.Channel != "" {
		t.Fatalf("the freeze did not land on main: %+v", res)
	}
	protectMain(t, remote)
	res, err := r.Unfreeze(t.Context(), UnfreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: "INC-5 over"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Refused == nil || res.Channel != "" || !strings.Contains(res.ChannelError, "a record on the incident channel lifts only the channel's own freezes") || !strings.Contains(res.Summary(), "in force nowhere") {
		t.Fatalf("unfreeze of main's freeze: %+v", res)
	}
	if _, cerr := gitTry(remote, "rev-parse", "--verify", "kdrift/freezes"); cerr == nil {
		t.Fatal("a channel record was pushed")
	}
}
