package actions

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPushErrorHidesToken: a remote URL with a token, whose server fails
// (go-git quotes the URL it requested in its error), never shows the
// token in a push result, an error or a summary.
func TestPushErrorHidesToken(t *testing.T) {
	isolate(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "broken", http.StatusInternalServerError)
	}))
	defer srv.Close()
	const token = "s3cr3t-t0ken-value"
	remote := newRemote(t)
	dir := cloneOf(t, remote)
	r := openRepo(t, dir, newClock())
	gitRun(t, dir, "remote", "set-url", "origin", strings.Replace(srv.URL, "http://", "http://kdrift:"+token+"@", 1)+"/org/repo.git")
	res := freezeOne(t, r, "render-prod", "INC-9 token")
	pr, err := r.Push(context.Background())
	for _, s := range []string{res.PushError, res.Summary(), pr.PushError, pr.Summary(), errString(err)} {
		if strings.Contains(s, token) {
			t.Fatalf("output shows the token: %q", s)
		}
	}
	if pr.Pushed || !strings.Contains(pr.PushError, "kdrift:xxxxx@") {
		t.Fatalf("push result %+v, want a failure naming the redacted URL", pr)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
