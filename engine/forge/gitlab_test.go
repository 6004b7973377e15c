package forge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// glMR is a merge request as GitLab's "Merge requests" API documents it,
// trimmed to the fields kdrift reads.
func glMR(state, detailed string, reviewers string) string {
	return `{"id": 101, "iid": 7, "project_id": 3, "title": "Revert x", "description": "preview\n\n<!-- kdrift-apps: shop -->",
 "state": "` + state + `", "source_branch": "kdrift/revert-3f2c1ab", "target_branch": "main",
 "web_url": "{{host}}/grp/sub/shop/-/merge_requests/7", "detailed_merge_status": "` + detailed + `",
 "reviewers": [` + reviewers + `], "draft": false}`
}

const glAlice = `{"id": 5, "username": "alice", "name": "Alice", "state": "active"}`

func TestGitLabOpensThenUpdates(t *testing.T) {
	const token = "glpat-secretsecret"
	const mrs = "/api/v4/projects/grp/sub/shop/merge_requests"
	srv := newReplay(t, token,
		// First run: none open; create; look the owners up; set reviewers.
		exchange{"GET", mrs, 200, `[]`},
		exchange{"POST", mrs, 201, glMR("opened", "not_approved", "")},
		exchange{"GET", "/api/v4/users", 200, `[` + glAlice + `]`},
		exchange{"GET", "/api/v4/users", 200, `[]`},
		exchange{"PUT", mrs + "/7", 200, glMR("opened", "not_approved", glAlice)},
		exchange{"GET", mrs + "/7/approvals", 200, `{"iid": 7, "approved": false, "approvals_required": 1, "approvals_left": 1, "approved_by": []}`},
		// Second run: found open, updated, approved by alice.
		exchange{"GET", mrs, 200, `[` + glMR("opened", "mergeable", glAlice) + `]`},
		exchange{"PUT", mrs + "/7", 200, glMR("opened", "mergeable", glAlice)},
		exchange{"GET", "/api/v4/users", 200, `[` + glAlice + `]`},
		exchange{"GET", "/api/v4/users", 200, `[]`},
		exchange{"PUT", mrs + "/7", 200, glMR("opened", "mergeable", glAlice)},
		exchange{"GET", mrs + "/7/approvals", 200, `{"iid": 7, "approved": true, "approvals_required": 1, "approvals_left": 0, "approved_by": [{"user": ` + glAlice + `}]}`},
	)
	c, err := New(Remote{GitLab, srv.URL, "grp/sub/shop"}, token)
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Head: "kdrift/revert-3f2c1ab", Base: "main", Title: "Revert x", Body: "preview", Reviewers: []string{"@alice", "@bob", "@grp/sre", "ops@example.com"}}
	pr, err := c.Ensure(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !pr.Created || pr.Number != 7 || pr.State != "open" || pr.Review != "review required" || !strings.HasSuffix(pr.URL, "/grp/sub/shop/-/merge_requests/7") {
		t.Errorf("first run: %+v", pr)
	}
	if strings.Join(pr.Reviewers, ",") != "@alice" || !strings.Contains(pr.ReviewerError, "bob") {
		t.Errorf("reviewers %v, error %q: want alice requested and bob reported as unknown", pr.Reviewers, pr.ReviewerError)
	}
	r := srv.Config.Handler.(*replay)
	var created struct {
		Source string `json:"source_branch"`
		Target string `json:"target_branch"`
		Remove bool   `json:"remove_source_branch"`
		Title  string `json:"title"`
		Desc   string `json:"description"`
	}
	if err := json.Unmarshal([]byte(r.bodies["POST "+mrs]), &created); err != nil {
		t.Fatal(err)
	}
	if created.Source != req.Head || created.Target != "main" || !created.Remove || created.Title != "Revert x" || created.Desc != "preview" {
		t.Errorf("create body %+v", created)
	}
	pr, err = c.Ensure(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Created || pr.Number != 7 || pr.Review != "approved" {
		t.Errorf("second run must update !7, approved by alice: %+v", pr)
	}
	var revs struct {
		IDs []int64 `json:"reviewer_ids"`
	}
	if err := json.Unmarshal([]byte(r.bodies["PUT "+mrs+"/7"]), &revs); err != nil {
		t.Fatal(err)
	}
	if len(revs.IDs) != 1 || revs.IDs[0] != 5 {
		t.Errorf("reviewer ids %v, want [5] (alice; a group and an e-mail have no reviewer id)", revs.IDs)
	}
	for _, q := range r.asked {
		if strings.HasPrefix(q, "GET /api/v4/users?") && !strings.Contains(q, "username=alice") && !strings.Contains(q, "username=bob") {
			t.Errorf("user look-up %s", q)
		}
	}
}

func TestGitLabFindAndOpen(t *testing.T) {
	const token = "glpat-x"
	const mrs = "/api/v4/projects/grp/shop/merge_requests"
	other := strings.Replace(glMR("opened", "mergeable", ""), "kdrift/revert-3f2c1ab", "feature/x", 1)
	other = strings.Replace(other, `"iid": 7`, `"iid": 8`, 1)
	srv := newReplay(t, token,
		exchange{"GET", mrs, 200, `[` + glMR("merged", "not_open", "") + `]`},
		exchange{"GET", mrs + "/7/approvals", 404, `{"message": "404 Not found"}`},
		exchange{"GET", mrs, 200, `[` + other + `,` + glMR("opened", "requested_changes", glAlice) + `]`},
	)
	c, err := New(Remote{GitLab, srv.URL, "grp/shop"}, token)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := c.Find(context.Background(), "kdrift/revert-3f2c1ab", "main")
	if err != nil || pr == nil {
		t.Fatalf("find: %v %v", pr, err)
	}
	if pr.State != "merged" || pr.Review != "" {
		t.Errorf("merged request without approvals (an edition without them answers 404): %+v", pr)
	}
	open, err := c.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 1 || open[0].Number != 7 || open[0].Review != "changes requested" || strings.Join(open[0].Apps, ",") != "shop" {
		t.Errorf("open kdrift requests %+v: want !7 only, changes requested", open)
	}
	r := srv.Config.Handler.(*replay)
	if q := r.asked[0]; !strings.Contains(q, "source_branch=kdrift%2Frevert-3f2c1ab") || !strings.Contains(q, "state=all") || !strings.Contains(q, "target_branch=main") {
		t.Errorf("find asked %s", q)
	}
}

func TestGitLabErrorHidesToken(t *testing.T) {
	const token = "glpat-leakme"
	srv := newReplay(t, token,
		exchange{"GET", "/api/v4/projects/grp/shop/merge_requests", 200, `[]`},
		exchange{"POST", "/api/v4/projects/grp/shop/merge_requests", 409, `{"message": ["Another open merge request already exists for this source branch: !3 glpat-leakme"]}`},
	)
	c, err := New(Remote{GitLab, srv.URL, "grp/shop"}, token)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Ensure(context.Background(), Request{Head: "x", Base: "main", Title: "t"})
	if err == nil || strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "409") {
		t.Fatalf("want a 409 error without the token, got %v", err)
	}
}
