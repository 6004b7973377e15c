package forge

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v89/github"
)

// githubClient is a Client for github.com and GitHub Enterprise Server.
type githubClient struct {
	r           Remote
	token       string
	owner, name string
	gh          *github.Client
}

func newGitHub(r Remote, token string) (Client, error) {
	owner, name, _ := strings.Cut(r.Path, "/")
	opts := []github.ClientOptionsFunc{github.WithHTTPClient(&http.Client{}), github.WithAuthToken(token)}
	if r.Web != "https://github.com" {
		// GitHub Enterprise Server answers under /api/v3/.
		opts = append(opts, github.WithEnterpriseURLs(r.Web+"/api/v3/", r.Web+"/api/uploads/"))
	}
	gh, err := github.NewClient(opts...)
	if err != nil {
		return nil, scrub(fmt.Errorf("github at %s: %w", r.Web, err), token)
	}
	return &githubClient{r: r, token: token, owner: owner, name: name, gh: gh}, nil
}

// open finds the newest pull request from head into base (any state).
func (c *githubClient) open(ctx context.Context, head, base string) (*github.PullRequest, error) {
	prs, _, err := c.gh.PullRequests.List(ctx, c.owner, c.name, &github.PullRequestListOptions{
		State: "all", Head: c.owner + ":" + head, Base: base, Sort: "created", Direction: "desc",
		ListOptions: github.ListOptions{PerPage: 5},
	})
	if err != nil {
		return nil, scrub(fmt.Errorf("github %s: pull requests from %s: %w", c.r.Path, head, err), c.token)
	}
	for _, pr := range prs {
		if pr.GetHead().GetRef() == head {
			return pr, nil
		}
	}
	return nil, nil
}

func (c *githubClient) Find(ctx context.Context, head, base string) (*PullRequest, error) {
	pr, err := c.open(ctx, head, base)
	if err != nil || pr == nil {
		return nil, err
	}
	out := c.convert(ctx, pr)
	return &out, nil
}

func (c *githubClient) Open(ctx context.Context) ([]PullRequest, error) {
	prs, _, err := c.gh.PullRequests.List(ctx, c.owner, c.name, &github.PullRequestListOptions{State: "open", ListOptions: github.ListOptions{PerPage: 100}})
	if err != nil {
		return nil, scrub(fmt.Errorf("github %s: open pull requests: %w", c.r.Path, err), c.token)
	}
	byNumber := map[int]*github.PullRequest{}
	var out []PullRequest
	for _, pr := range prs {
		byNumber[pr.GetNumber()] = pr
		out = append(out, PullRequest{Number: pr.GetNumber(), Head: pr.GetHead().GetRef()})
	}
	out = kdriftOnly(out)
	for i := range out {
		out[i] = c.convert(ctx, byNumber[out[i].Number])
	}
	return out, nil
}

func (c *githubClient) Ensure(ctx context.Context, req Request) (PullRequest, error) {
	existing, err := c.open(ctx, req.Head, req.Base)
	if err != nil {
		return PullRequest{}, err
	}
	var pr *github.PullRequest
	created := false
	if existing != nil && existing.GetState() == "open" {
		pr, _, err = c.gh.PullRequests.Edit(ctx, c.owner, c.name, existing.GetNumber(), &github.PullRequest{Title: github.Ptr(req.Title), Body: github.Ptr(req.Body)})
		if err != nil {
			return PullRequest{}, scrub(fmt.Errorf("github %s: update pull request #%d: %w", c.r.Path, existing.GetNumber(), err), c.token)
		}
	} else {
		pr, _, err = c.gh.PullRequests.Create(ctx, c.owner, c.name, &github.NewPullRequest{Title: github.Ptr(req.Title), Body: github.Ptr(req.Body), Head: github.Ptr(req.Head), Base: github.Ptr(req.Base)})
		if err != nil {
			return PullRequest{}, scrub(fmt.Errorf("github %s: open pull request from %s into %s: %w", c.r.Path, req.Head, req.Base, err), c.token)
		}
		created = true
	}
	var revErr string
	users, teams := reviewerNames(req.Reviewers)
	if len(users)+len(teams) > 0 {
		got, _, err := c.gh.PullRequests.RequestReviewers(ctx, c.owner, c.name, pr.GetNumber(), github.ReviewersRequest{Reviewers: users, TeamReviewers: teams})
		if err != nil {
			revErr = scrub(err, c.token).Error()
		} else if got != nil {
			pr = got
		}
	}
	out := c.convert(ctx, pr)
	out.Created, out.ReviewerError = created, revErr
	return out, nil
}

// convert reads a GitHub pull request, with its review decision from the
// latest review of each reviewer (the REST API does not give GraphQL's
// reviewDecision).
func (c *githubClient) convert(ctx context.Context, pr *github.PullRequest) PullRequest {
	out := PullRequest{Number: pr.GetNumber(), Head: pr.GetHead().GetRef(), URL: pr.GetHTMLURL(), State: pr.GetState(), Apps: appsOf(pr.GetBody())}
	if pr.GetMerged() || pr.MergedAt != nil {
		out.State = "merged"
	}
	for _, u := range pr.RequestedReviewers {
		out.Reviewers = append(out.Reviewers, "@"+u.GetLogin())
	}
	for _, t := range pr.RequestedTeams {
		out.Reviewers = append(out.Reviewers, "team "+t.GetSlug())
	}
	reviews, _, err := c.gh.PullRequests.ListReviews(ctx, c.owner, c.name, pr.GetNumber(), &github.ListOptions{PerPage: 100})
	if err != nil {
		return out
	}
	latest := map[string]string{}
	for _, rv := range reviews {
		switch s := rv.GetState(); s {
		case "APPROVED", "CHANGES_REQUESTED":
			latest[rv.GetUser().GetLogin()] = s
		case "DISMISSED":
			delete(latest, rv.GetUser().GetLogin())
		}
	}
	out.Review = decide(latest, len(out.Reviewers) > 0)
	return out
}
