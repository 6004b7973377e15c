package ui

import (
	"errors"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/forge"
	"kdrift.dev/kdrift/engine/status"
)

func TestAppViewForgeLines(t *testing.T) {
	c := &common{styles: NewStyles(DefaultTheme(), true, true)}
	a := status.AppStatus{Name: "shop", Revision: "0123456789abcdef0123456789abcdef01234567"}
	if got := forgeLines(c, a, 200); len(got) != 0 {
		t.Fatalf("no forge configured, yet: %q", got)
	}
	c.forge.Requests = func() ([]forge.PullRequest, error, bool) {
		return []forge.PullRequest{
			{Number: 7, State: "open", Review: "changes requested", URL: "https://git.example.com/o/r/pulls/7", Apps: []string{"shop"}},
			{Number: 8, State: "open", URL: "https://git.example.com/o/r/pulls/8", Apps: []string{"web"}},
		}, nil, true
	}
	c.forge.CodeOwners = func(status.AppStatus) ([]string, error) { return []string{"@alice", "@org/sre"}, nil }
	got := strings.Join(forgeLines(c, a, 200), "\n")
	for _, w := range []string{"pull request #7 (open, changes requested) https://git.example.com/o/r/pulls/7", "code owners: @alice, @org/sre"} {
		if !strings.Contains(got, w) {
			t.Errorf("lines lack %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "#8") {
		t.Errorf("another App's request shown:\n%s", got)
	}
	c.forge.Requests = func() ([]forge.PullRequest, error, bool) {
		return nil, errors.New("the forge did not answer within 5s\nmore"), true
	}
	got = strings.Join(forgeLines(c, a, 200), "\n")
	if !strings.Contains(got, "pull requests: the forge did not answer within 5s") || strings.Contains(got, "more") {
		t.Errorf("error not a one-line note:\n%s", got)
	}
}
