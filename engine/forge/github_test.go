package forge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// exchange is one recorded request and the answer GitHub's REST API
// documents for it (shapes from its "Pulls" reference, trimmed to the
// fields kdrift reads).
type exchange struct {
	method, path string
	status       int
	body         string
}

// replay serves recorded exchanges in order of (method, path) and records
// what was asked.
type replay struct {
	mu     sync.Mutex
	t      *testing.T
	byKey  map[string][]exchange
	asked  []string
	bodies map[string]string
	token  string
}

func newReplay(t *testing.T, token string, xs ...exchange) *httptest.Server {
	r := &replay{t: t, byKey: map[string][]exchange{}, bodies: map[string]string{}, token: token}
	for _, x := range xs {
		k := x.method + " " + x.path
		r.byKey[k] = append(r.byKey[k], x)
	}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv
}

func (r *replay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// GitHub and Gitea take the token as a bearer, GitLab in its own
	// header.
	if got := req.Header.Get("Authorization"); got != "Bearer "+r.token && req.Header.Get("PRIVATE-TOKEN") != r.token {
		r.t.Errorf("%s %s: Authorization %q", req.Method, req.URL.Path, got)
	}
	k := req.Method + " " + req.URL.Path
	r.asked = append(r.asked, k+"?"+req.URL.RawQuery)
	b, _ := io.ReadAll(req.Body)
	r.bodies[k] = string(b)
	xs := r.byKey[k]
	if len(xs) == 0 {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"message":"Not Found","documentation_url":"https://docs.github.com/rest"}`))
		return
	}
	x := xs[0]
	if len(xs) > 1 {
		r.byKey[k] = xs[1:]
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(x.status)
	_, _ = w.Write([]byte(strings.ReplaceAll(x.body, "{{host}}", "http://"+req.Host)))
}

const ghPR = `{"number": 7, "state": "open", "html_url": "{{host}}/acme/shop/pull/7", "title": "t",
 "head": {"ref": "kdrift/revert-3f2c1ab", "sha": "abc"}, "base": {"ref": "main"},
 "merged": false, "merged_at": null,
 "requested_reviewers": [{"login": "alice", "type": "User"}],
 "requested_teams": [{"slug": "shop", "name": "Shop"}]}`

func TestGitHubOpensThenUpdates(t *testing.T) {
	const token = "ghp_secretsecret"
	srv := newReplay(t, token,
		// First run: no pull request yet, create, request reviewers.
		exchange{"GET", "/api/v3/repos/acme/shop/pulls", 200, `[]`},
		exchange{"POST", "/api/v3/repos/acme/shop/pulls", 201, ghPR},
		exchange{"POST", "/api/v3/repos/acme/shop/pulls/7/requested_reviewers", 201, ghPR},
		exchange{"GET", "/api/v3/repos/acme/shop/pulls/7/reviews", 200, `[]`},
		// Second run: found, edited.
		exchange{"GET", "/api/v3/repos/acme/shop/pulls", 200, `[` + ghPR + `]`},
		exchange{"PATCH", "/api/v3/repos/acme/shop/pulls/7", 200, ghPR},
		exchange{"POST", "/api/v3/repos/acme/shop/pulls/7/requested_reviewers", 201, ghPR},
		exchange{"GET", "/api/v3/repos/acme/shop/pulls/7/reviews", 200,
			`[{"id":1,"user":{"login":"alice"},"state":"CHANGES_REQUESTED"},{"id":2,"user":{"login":"alice"},"state":"APPROVED"}]`},
	)
	c, err := New(Remote{GitHub, srv.URL, "acme/shop"}, token)
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Head: "kdrift/revert-3f2c1ab", Base: "main", Title: "Revert x", Body: "preview", Reviewers: []string{"@alice", "@acme/shop", "ops@example.com"}}
	pr, err := c.Ensure(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !pr.Created || pr.Number != 7 || pr.State != "open" || pr.Review != "review required" {
		t.Errorf("first run: %+v", pr)
	}
	if strings.Join(pr.Reviewers, ",") != "@alice,team shop" {
		t.Errorf("reviewers %v", pr.Reviewers)
	}
	pr, err = c.Ensure(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Created || pr.Number != 7 || pr.Review != "approved" {
		t.Errorf("second run must update #7, approved by alice's latest review: %+v", pr)
	}
	r := srv.Config.Handler.(*replay)
	var rr struct {
		Reviewers     []string `json:"reviewers"`
		TeamReviewers []string `json:"team_reviewers"`
	}
	if err := json.Unmarshal([]byte(r.bodies["POST /api/v3/repos/acme/shop/pulls/7/requested_reviewers"]), &rr); err != nil {
		t.Fatal(err)
	}
	if strings.Join(rr.Reviewers, ",") != "alice" || strings.Join(rr.TeamReviewers, ",") != "shop" {
		t.Errorf("review request %+v (an e-mail owner has no GitHub name and is left out)", rr)
	}
}

func TestGitHubErrorHidesToken(t *testing.T) {
	const token = "ghp_leakme"
	srv := newReplay(t, token,
		exchange{"GET", "/api/v3/repos/acme/shop/pulls", 200, `[]`},
		exchange{"POST", "/api/v3/repos/acme/shop/pulls", 422, `{"message":"Validation Failed for ghp_leakme","errors":[{"resource":"PullRequest","code":"custom","message":"No commits between main and x"}]}`},
	)
	c, err := New(Remote{GitHub, srv.URL, "acme/shop"}, token)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Ensure(context.Background(), Request{Head: "x", Base: "main", Title: "t"})
	if err == nil || strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "422") {
		t.Fatalf("want a 422 error without the token, got %v", err)
	}
}
