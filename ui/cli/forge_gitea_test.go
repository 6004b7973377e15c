package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/internal/forgetest"
)

// TestRevertOnProtectedMainOpensGiteaPullRequest runs `kdrift revert` on a
// clone of a repository on a real Gitea server whose main is protected:
// the refused push becomes a branch and one pull request with the preview
// and the code owners as reviewers; a second run updates the same one.
func TestRevertOnProtectedMainOpensGiteaPullRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a Gitea server")
	}
	g := forgetest.StartGitea(t)
	g.CreateUser(t, "alice")
	g.API(t, "POST", "/user/repos", map[string]any{"name": "shop", "default_branch": "main"}, nil)
	g.API(t, "PUT", "/repos/"+g.Admin+"/shop/collaborators/alice", map[string]any{"permission": "write"}, nil)

	src := gitRepo(t, map[string]string{
		"CODEOWNERS":      "* @" + g.Admin + "\n/deploy/ @alice\n",
		"deploy/dep.yaml": "replicas: 3\n",
	})
	if err := os.WriteFile(filepath.Join(src, "deploy/dep.yaml"), []byte("replicas: 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, src, "commit", "-qam", "scale to 9")
	bad := git(t, src, "rev-parse", "HEAD")
	git(t, src, "push", "-q", g.CloneURL(g.Admin, "shop"), "main")
	g.WaitPushed(t, g.Admin, "shop", "main")
	g.API(t, "POST", "/repos/"+g.Admin+"/shop/branch_protections", map[string]any{"rule_name": "main", "enable_push": false}, nil)

	clone := filepath.Join(t.TempDir(), "clone")
	git(t, filepath.Dir(clone), "clone", "-q", g.CloneURL(g.Admin, "shop"), clone)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(g.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"revert", bad[:9], "--repo", clone, "--reason", "INC-77 nine replicas starve the node", "--author", "On Call <oncall@example.com>", "--forge", "gitea", "--forge-token-file", tokenFile}

	type pull struct {
		Number int    `json:"number"`
		State  string `json:"state"`
		Body   string `json:"body"`
		Title  string `json:"title"`
		Head   struct {
			Ref string `json:"ref"`
			Sha string `json:"sha"`
		} `json:"head"`
		RequestedReviewers []struct {
			Login string `json:"login"`
		} `json:"requested_reviewers"`
	}
	var firstSha string
	for run := 1; run <= 2; run++ {
		if run == 2 {
			// The same revert, its reason refined: a new commit on the
			// same branch (the same reason within the same second would
			// make the very same commit, which moves nothing).
			args[5] += " (the HPA cannot keep up)"
		}
		code, out, errOut := kdriftAction(t, args...)
		if code != 0 {
			t.Fatalf("run %d: exit %d\n%s\n%s", run, code, out, errOut)
		}
		for _, s := range []string{out, errOut} {
			if strings.Contains(s, g.Token) || strings.Contains(s, g.Password) {
				t.Fatalf("run %d: a credential reached the output:\n%s", run, s)
			}
		}
		want := map[int]string{1: "pull request #1 opened", 2: "pull request #1 updated"}[run]
		for _, w := range []string{"proposed:", "kdrift/revert-" + bad[:7], want, "nothing is in force until the pull request is merged into main"} {
			if !strings.Contains(out, w) {
				t.Errorf("run %d: output lacks %q:\n%s\n%s", run, w, out, errOut)
			}
		}
		var pulls []pull
		g.API(t, "GET", "/repos/"+g.Admin+"/shop/pulls?state=all", nil, &pulls)
		if len(pulls) != 1 {
			t.Fatalf("run %d: want one pull request, got %d", run, len(pulls))
		}
		p := pulls[0]
		if p.State != "open" || p.Head.Ref != "kdrift/revert-"+bad[:7] || !strings.HasPrefix(p.Title, `Revert "scale to 9"`) {
			t.Errorf("run %d: pull request %+v", run, p)
		}
		for _, w := range []string{"INC-77 nine replicas", "**Incident:** INC-77", "On Call <oncall@example.com>", "What the cluster would change", "-replicas: 9", "+replicas: 3"} {
			if !strings.Contains(p.Body, w) {
				t.Errorf("run %d: body lacks %q:\n%s", run, w, p.Body)
			}
		}
		var reviewers []string
		for _, r := range p.RequestedReviewers {
			reviewers = append(reviewers, r.Login)
		}
		if strings.Join(reviewers, ",") != "alice" {
			// The admin owns the rest but opened the request: a forge
			// never asks its author for a review.
			t.Errorf("run %d: requested reviewers %v, want alice (owner of /deploy/)", run, reviewers)
		}
		if run == 1 {
			firstSha = p.Head.Sha
		} else if p.Head.Sha == firstSha {
			t.Errorf("run 2 did not move the proposal branch")
		}
	}
	// main is untouched on the server and in the clone.
	if got := git(t, clone, "rev-parse", "main"); got != bad {
		t.Errorf("clone's main moved to %s; it must stay at %s", got, bad)
	}
	if got := strings.Fields(git(t, clone, "ls-remote", g.CloneURL(g.Admin, "shop"), "refs/heads/main"))[0]; got != bad {
		t.Errorf("server's main is %s, want %s", got, bad)
	}
}

// TestIgnoreOnProtectedMainOpensGiteaPullRequest runs `kdrift ignore` on a
// clone of a repository on a real Gitea server whose main is protected:
// the ignore becomes the branch kdrift/ignore-APP-HASH and one pull
// request saying what it ignores, with the App file's diff and the code
// owners as reviewers; the same ignore again, typed with a short kind,
// updates the same request.
func TestIgnoreOnProtectedMainOpensGiteaPullRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a Gitea server")
	}
	g := forgetest.StartGitea(t)
	g.CreateUser(t, "bob")
	g.API(t, "POST", "/user/repos", map[string]any{"name": "render", "default_branch": "main"}, nil)
	g.API(t, "PUT", "/repos/"+g.Admin+"/render/collaborators/bob", map[string]any{"permission": "write"}, nil)
	src := gitRepo(t, map[string]string{
		"CODEOWNERS":         "* @" + g.Admin + "\n/.kdrift/ @bob\n",
		".kdrift/apps.yaml":  "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: render-prod\nspec:\n  path: deploy/prod\n",
		"deploy/prod/d.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: render\nspec:\n  replicas: 6\n",
	})
	git(t, src, "push", "-q", g.CloneURL(g.Admin, "render"), "main")
	g.WaitPushed(t, g.Admin, "render", "main")
	g.API(t, "POST", "/repos/"+g.Admin+"/render/branch_protections", map[string]any{"rule_name": "main", "enable_push": false}, nil)
	clone := filepath.Join(t.TempDir(), "clone")
	git(t, filepath.Dir(clone), "clone", "-q", g.CloneURL(g.Admin, "render"), clone)
	base := git(t, clone, "rev-parse", "main")
	t.Setenv("KDRIFT_FORGE_TOKEN", g.Token)

	args := []string{"ignore", "render-prod", "--group", "apps", "--kind", "Deployment", "--json-pointer", "/spec/replicas", "--reason", "INC-9 the HPA owns replicas", "--repo", clone, "--author", "On Call <oncall@example.com>", "--forge", "gitea"}
	branch := "kdrift/ignore-render-prod-" + ruleHash(app.IgnoreRule{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}})
	for run := 1; run <= 2; run++ {
		if run == 2 {
			// The same ignore typed as kubectl allows: the same branch.
			args = append([]string{"ignore", "render-prod", "--kind", "deploy"}, args[6:]...)
		}
		code, out, errOut := kdriftAction(t, args...)
		if code != 0 {
			t.Fatalf("run %d: exit %d\n%s\n%s", run, code, out, errOut)
		}
		if strings.Contains(out+errOut, g.Token) {
			t.Fatalf("run %d: the token reached the output", run)
		}
		want := map[int]string{1: "pull request #1 opened", 2: "pull request #1 updated"}[run]
		for _, w := range []string{branch, want, "nothing is in force until the pull request is merged into main"} {
			if !strings.Contains(out, w) {
				t.Errorf("run %d: output lacks %q:\n%s\n%s", run, w, out, errOut)
			}
		}
		var pulls []struct {
			State string `json:"state"`
			Body  string `json:"body"`
			Head  struct {
				Ref string `json:"ref"`
			} `json:"head"`
			RequestedReviewers []struct {
				Login string `json:"login"`
			} `json:"requested_reviewers"`
		}
		g.API(t, "GET", "/repos/"+g.Admin+"/render/pulls?state=all", nil, &pulls)
		if len(pulls) != 1 {
			t.Fatalf("run %d: want one pull request, got %d", run, len(pulls))
		}
		p := pulls[0]
		if p.State != "open" || p.Head.Ref != branch {
			t.Errorf("run %d: pull request %+v", run, p)
		}
		for _, w := range []string{"kdrift ignore render-prod", "INC-9 the HPA owns replicas", "**Incident:** INC-9", "On Call <oncall@example.com>", "### What the ignore changes", "Deployment.apps", "/spec/replicas", "+    - group: \"apps\""} {
			if !strings.Contains(p.Body, w) {
				t.Errorf("run %d: body lacks %q:\n%s", run, w, p.Body)
			}
		}
		if len(p.RequestedReviewers) != 1 || p.RequestedReviewers[0].Login != "bob" {
			t.Errorf("run %d: requested reviewers %+v, want bob (owner of /.kdrift/)", run, p.RequestedReviewers)
		}
	}
	if got := git(t, clone, "rev-parse", "main"); got != base {
		t.Errorf("clone's main moved to %s; it must stay at %s", got, base)
	}

	// status shows the open request on the App, from the forge.
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	code, out, errOut := kdriftAction(t, "status", "--repo", clone, "--forge", "gitea", "-o", "json")
	var doc struct {
		Apps []struct {
			Name         string `json:"name"`
			PullRequests []struct {
				Number int    `json:"number"`
				State  string `json:"state"`
				Review string `json:"review"`
				URL    string `json:"url"`
			} `json:"pullRequests"`
		} `json:"apps"`
		Note string `json:"pullRequestsNote"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Apps) != 1 {
		t.Fatalf("status -o json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if prs := doc.Apps[0].PullRequests; len(prs) != 1 || prs[0].Number != 1 || prs[0].State != "open" || prs[0].Review != "review required" || !strings.HasPrefix(prs[0].URL, g.URL+"/") || doc.Note != "" {
		t.Errorf("status -o json: pull requests %+v, note %q", prs, doc.Note)
	}
	_, out, _ = kdriftAction(t, "status", "--repo", clone, "--forge", "gitea")
	if !strings.Contains(out, "render-prod: pull request #1 (open, review required) "+g.URL+"/") {
		t.Errorf("status lacks the pull request:\n%s", out)
	}
	// Without a token, nothing is said about requests.
	t.Setenv("KDRIFT_FORGE_TOKEN", "")
	_, out, errOut = kdriftAction(t, "status", "--repo", clone, "--forge", "gitea")
	if strings.Contains(out+errOut, "pull request") {
		t.Errorf("status without a token guessed:\n%s\n%s", out, errOut)
	}
}
