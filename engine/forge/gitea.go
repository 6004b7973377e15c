package forge

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"code.gitea.io/sdk/gitea"
)

// giteaClient is a Client for Gitea and Forgejo.
type giteaClient struct {
	r            Remote
	token        string
	owner, name  string
	newClientCtx func(ctx context.Context) (*gitea.Client, error)
}

func newGitea(r Remote, token string) (Client, error) {
	owner, name, _ := strings.Cut(r.Path, "/")
	c := &giteaClient{r: r, token: token, owner: owner, name: name}
	c.newClientCtx = func(ctx context.Context) (*gitea.Client, error) {
		// One client per call: the SDK keeps its context on the client.
		gc, err := gitea.NewClient(r.Web, gitea.SetToken(token), gitea.SetContext(ctx), gitea.SetHTTPClient(&http.Client{}))
		if err != nil {
			return nil, scrub(fmt.Errorf("gitea at %s: %w", r.Web, err), token)
		}
		return gc, nil
	}
	return c, nil
}

func (c *giteaClient) Find(ctx context.Context, head, base string) (*PullRequest, error) {
	gc, err := c.newClientCtx(ctx)
	if err != nil {
		return nil, err
	}
	pr, resp, err := gc.GetPullRequestByBaseHead(c.owner, c.name, base, head)
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, scrub(fmt.Errorf("gitea %s: pull request from %s: %w", c.r.Path, head, err), c.token)
	}
	out := c.convert(gc, pr)
	return &out, nil
}

func (c *giteaClient) Open(ctx context.Context) ([]PullRequest, error) {
	gc, err := c.newClientCtx(ctx)
	if err != nil {
		return nil, err
	}
	prs, _, err := gc.ListRepoPullRequests(c.owner, c.name, gitea.ListPullRequestsOptions{State: gitea.StateOpen, ListOptions: gitea.ListOptions{PageSize: 50}})
	if err != nil {
		return nil, scrub(fmt.Errorf("gitea %s: open pull requests: %w", c.r.Path, err), c.token)
	}
	var out []PullRequest
	for _, pr := range prs {
		if pr.Head != nil && strings.HasPrefix(pr.Head.Ref, ProposalPrefix) {
			out = append(out, PullRequest{Number: int(pr.Index), Head: pr.Head.Ref})
		}
	}
	out = kdriftOnly(out)
	byNumber := map[int64]*gitea.PullRequest{}
	for _, pr := range prs {
		byNumber[pr.Index] = pr
	}
	for i := range out {
		out[i] = c.convert(gc, byNumber[int64(out[i].Number)])
	}
	return out, nil
}

func (c *giteaClient) Ensure(ctx context.Context, req Request) (PullRequest, error) {
	gc, err := c.newClientCtx(ctx)
	if err != nil {
		return PullRequest{}, err
	}
	users, teams := reviewerNames(req.Reviewers)
	existing, resp, err := gc.GetPullRequestByBaseHead(c.owner, c.name, req.Base, req.Head)
	if err != nil && (resp == nil || resp.StatusCode != http.StatusNotFound) {
		return PullRequest{}, scrub(fmt.Errorf("gitea %s: pull request from %s: %w", c.r.Path, req.Head, err), c.token)
	}
	var pr *gitea.PullRequest
	created := false
	if existing != nil && existing.State == gitea.StateOpen {
		title, body := req.Title, req.Body
		pr, _, err = gc.EditPullRequest(c.owner, c.name, existing.Index, gitea.EditPullRequestOption{Title: title, Body: &body})
		if err != nil {
			return PullRequest{}, scrub(fmt.Errorf("gitea %s: update pull request #%d: %w", c.r.Path, existing.Index, err), c.token)
		}
	} else {
		pr, err = c.create(ctx, gc, gitea.CreatePullRequestOption{Head: req.Head, Base: req.Base, Title: req.Title, Body: req.Body})
		if err != nil {
			return PullRequest{}, scrub(fmt.Errorf("gitea %s: open pull request from %s into %s: %w", c.r.Path, req.Head, req.Base, err), c.token)
		}
		created = true
	}
	var revErr string
	if len(users)+len(teams) > 0 {
		// Requested apart from the creation, so that an owner the forge
		// refuses (not a collaborator, unknown team) leaves the pull
		// request standing and is reported.
		if _, err := gc.CreateReviewRequests(c.owner, c.name, pr.Index, gitea.PullReviewRequestOptions{Reviewers: users, TeamReviewers: teams}); err != nil {
			revErr = scrub(err, c.token).Error()
		} else if again, _, err := gc.GetPullRequest(c.owner, c.name, pr.Index); err == nil {
			pr = again
		}
	}
	out := c.convert(gc, pr)
	out.Created, out.ReviewerError = created, revErr
	return out, nil
}

// pushSettle is how long create waits for Gitea to record a branch
// that was just pushed.
const pushSettle = 10 * time.Second

// create opens a pull request. Gitea records a push in a background
// queue: until it has, the head branch (or, on a first push, the whole
// repository) is unknown to its API and the request answers 404.
// The branch was pushed a moment ago, so those answers are retried for a
// few seconds before they are reported.
func (c *giteaClient) create(ctx context.Context, gc *gitea.Client, opt gitea.CreatePullRequestOption) (*gitea.PullRequest, error) {
	deadline := time.Now().Add(pushSettle)
	wait := 200 * time.Millisecond
	for {
		pr, resp, err := gc.CreatePullRequest(c.owner, c.name, opt)
		if err == nil || resp == nil || resp.StatusCode != http.StatusNotFound || time.Now().Add(wait).After(deadline) {
			return pr, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// convert reads a Gitea pull request, with its review decision from the
// latest review of each reviewer.
func (c *giteaClient) convert(gc *gitea.Client, pr *gitea.PullRequest) PullRequest {
	out := PullRequest{Number: int(pr.Index), URL: pr.HTMLURL, State: string(pr.State), Apps: appsOf(pr.Body)}
	if pr.Head != nil {
		out.Head = pr.Head.Ref
	}
	if pr.HasMerged {
		out.State = "merged"
	}
	for _, u := range pr.RequestedReviewers {
		out.Reviewers = append(out.Reviewers, "@"+u.UserName)
	}
	for _, t := range pr.RequestedReviewersTeams {
		out.Reviewers = append(out.Reviewers, "team "+t.Name)
	}
	reviews, _, err := gc.ListPullReviews(c.owner, c.name, pr.Index, gitea.ListPullReviewsOptions{})
	if err != nil {
		return out
	}
	latest := map[string]gitea.ReviewStateType{}
	for _, rv := range reviews {
		if rv.Reviewer == nil || rv.Stale || rv.Dismissed {
			continue
		}
		switch rv.State {
		case gitea.ReviewStateApproved, gitea.ReviewStateRequestChanges:
			latest[rv.Reviewer.UserName] = rv.State
		}
	}
	out.Review = decide(latest, len(out.Reviewers) > 0)
	return out
}

// decide is the review decision from each reviewer's latest verdict.
func decide[S comparable](latest map[string]S, requested bool) string {
	approved := false
	for _, s := range latest {
		switch fmt.Sprint(s) {
		case "REQUEST_CHANGES", "CHANGES_REQUESTED":
			return "changes requested"
		case "APPROVED":
			approved = true
		}
	}
	if approved {
		return "approved"
	}
	if requested {
		return "review required"
	}
	return ""
}
