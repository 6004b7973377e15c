package actions

import (
	"strings"
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

func TestAuthFor(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	a, err := authFor("https://git.example.com/team/deploy.git", env(map[string]string{"GIT_TOKEN": "t1", "KDRIFT_GIT_TOKEN": "t2"}))
	if ba, ok := a.(*githttp.BasicAuth); err != nil || !ok || ba.Password != "t2" || ba.Username != "git" {
		t.Fatalf("https with token: %#v %v", a, err)
	}
	a, err = authFor("https://git.example.com/team/deploy.git", env(map[string]string{"GIT_TOKEN": "t1", "KDRIFT_GIT_USERNAME": "oauth2"}))
	if ba, ok := a.(*githttp.BasicAuth); err != nil || !ok || ba.Password != "t1" || ba.Username != "oauth2" {
		t.Fatalf("https with GIT_TOKEN: %#v %v", a, err)
	}
	if a, err := authFor("https://git.example.com/x.git", env(nil)); a != nil || err != nil {
		t.Fatalf("https without token: %#v %v", a, err)
	}
	for _, local := range []string{"/srv/git/deploy.git", "file:///srv/git/deploy.git"} {
		if a, err := authFor(local, env(nil)); a != nil || err != nil {
			t.Fatalf("%s: %#v %v", local, a, err)
		}
	}
	if _, err := authFor("git@git.example.com:team/deploy.git", env(map[string]string{"KDRIFT_SSH_KEY": "/nonexistent/key"})); err == nil || !strings.Contains(err.Error(), "KDRIFT_SSH_KEY") {
		t.Fatalf("missing ssh key: %v", err)
	}
}
