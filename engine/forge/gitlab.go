package forge

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	gitlab "gitlab.com/gitlab-org/api/client-go/v2"
)

// gitlabClient is a Client for gitlab.com and self-managed GitLab: merge
// requests are its pull requests, a project is named by its full path
// ("group/sub/name").
type gitlabClient struct {
	r     Remote
	token string
	gl    *gitlab.Client
}

func newGitLab(r Remote, token string) (Client, error) {
	gl, err := gitlab.NewClient(token,
		gitlab.WithBaseURL(r.Web+"/api/v4"),
		gitlab.WithHTTPClient(&http.Client{}),
		// A person waits on the answer: one retry of a 429 or 5xx, not
		// the library's default of five with growing pauses.
		gitlab.WithCustomRetryMax(1))
	if err != nil {
		return nil, scrub(fmt.Errorf("gitlab at %s: %w", r.Web, err), token)
	}
	return &gitlabClient{r: r, token: token, gl: gl}, nil
}

// newest finds the newest merge request from head into base in state
// ("opened", "all").
func (c *gitlabClient) newest(ctx context.Context, head, base, state string) (*gitlab.BasicMergeRequest, error) {
	mrs, _, err := c.gl.MergeRequests.ListProjectMergeRequests(c.r.Path, &gitlab.ListProjectMergeRequestsOptions{
		SourceBranch: gitlab.Ptr(head), TargetBranch: gitlab.Ptr(base), State: gitlab.Ptr(state),
		OrderBy: gitlab.Ptr("created_at"), Sort: gitlab.Ptr("desc"),
		ListOptions: gitlab.ListOptions{PerPage: 5},
	}, gitlab.WithContext(ctx))
	if err != nil {
		return nil, scrub(fmt.Errorf("gitlab %s: merge requests from %s: %w", c.r.Path, head, err), c.token)
	}
	for _, mr := range mrs {
		if mr.SourceBranch == head {
			return mr, nil
		}
	}
	return nil, nil
}

func (c *gitlabClient) Find(ctx context.Context, head, base string) (*PullRequest, error) {
	mr, err := c.newest(ctx, head, base, "all")
	if err != nil || mr == nil {
		return nil, err
	}
	out := c.convert(ctx, mr)
	return &out, nil
}

func (c *gitlabClient) Open(ctx context.Context) ([]PullRequest, error) {
	mrs, _, err := c.gl.MergeRequests.ListProjectMergeRequests(c.r.Path, &gitlab.ListProjectMergeRequestsOptions{
		State: gitlab.Ptr("opened"), OrderBy: gitlab.Ptr("created_at"), Sort: gitlab.Ptr("desc"),
		ListOptions: gitlab.ListOptions{PerPage: 100},
	}, gitlab.WithContext(ctx))
	if err != nil {
		return nil, scrub(fmt.Errorf("gitlab %s: open merge requests: %w", c.r.Path, err), c.token)
	}
	byNumber := map[int]*gitlab.BasicMergeRequest{}
	var out []PullRequest
	for _, mr := range mrs {
		byNumber[int(mr.IID)] = mr
		out = append(out, PullRequest{Number: int(mr.IID), Head: mr.SourceBranch})
	}
	out = kdriftOnly(out)
	for i := range out {
		out[i] = c.convert(ctx, byNumber[out[i].Number])
	}
	return out, nil
}

func (c *gitlabClient) Ensure(ctx context.Context, req Request) (PullRequest, error) {
	existing, err := c.newest(ctx, req.Head, req.Base, "opened")
	if err != nil {
		return PullRequest{}, err
	}
	var mr *gitlab.MergeRequest
	created := false
	if existing != nil {
		mr, _, err = c.gl.MergeRequests.UpdateMergeRequest(c.r.Path, existing.IID, &gitlab.UpdateMergeRequestOptions{
			Title: gitlab.Ptr(req.Title), Description: gitlab.Ptr(req.Body),
		}, gitlab.WithContext(ctx))
		if err != nil {
			return PullRequest{}, scrub(fmt.Errorf("gitlab %s: update merge request !%d: %w", c.r.Path, existing.IID, err), c.token)
		}
	} else {
		mr, _, err = c.gl.MergeRequests.CreateMergeRequest(c.r.Path, &gitlab.CreateMergeRequestOptions{
			Title: gitlab.Ptr(req.Title), Description: gitlab.Ptr(req.Body),
			SourceBranch: gitlab.Ptr(req.Head), TargetBranch: gitlab.Ptr(req.Base),
			RemoveSourceBranch: gitlab.Ptr(true),
		}, gitlab.WithContext(ctx))
		if err != nil {
			return PullRequest{}, scrub(fmt.Errorf("gitlab %s: open merge request from %s into %s: %w", c.r.Path, req.Head, req.Base, err), c.token)
		}
		created = true
	}
	// Reviewers are set apart from the creation, so that an owner GitLab
	// does not know leaves the merge request standing and is reported.
	// Group owners have no reviewer field in GitLab's API: GitLab itself
	// asks them through the project's Code Owners approval rule.
	var revErr string
	users, _ := reviewerNames(req.Reviewers)
	if len(users) > 0 {
		ids, missing, err := c.userIDs(ctx, users)
		switch {
		case err != nil:
			revErr = err.Error()
		case len(ids) > 0:
			got, _, err := c.gl.MergeRequests.UpdateMergeRequest(c.r.Path, mr.IID, &gitlab.UpdateMergeRequestOptions{ReviewerIDs: &ids}, gitlab.WithContext(ctx))
			if err != nil {
				revErr = scrub(err, c.token).Error()
			} else {
				mr = got
			}
		}
		if len(missing) > 0 && revErr == "" {
			revErr = fmt.Sprintf("no GitLab user named %v: CODEOWNERS names an owner the forge does not know", missing)
		}
	}
	out := c.convert(ctx, &mr.BasicMergeRequest)
	out.Created, out.ReviewerError = created, revErr
	return out, nil
}

// maxReviewerLookups bounds the user look-ups one request makes: the
// owners come from CODEOWNERS, which anyone who can commit writes.
const maxReviewerLookups = 20

// userIDs finds the GitLab ids of users by username; missing are the
// names no user has.
func (c *gitlabClient) userIDs(ctx context.Context, names []string) (ids []int64, missing []string, err error) {
	if len(names) > maxReviewerLookups {
		names = names[:maxReviewerLookups]
	}
	for _, n := range names {
		us, _, err := c.gl.Users.ListUsers(&gitlab.ListUsersOptions{Username: gitlab.Ptr(n)}, gitlab.WithContext(ctx))
		if err != nil {
			return nil, nil, scrub(fmt.Errorf("gitlab: look up user %s: %w", n, err), c.token)
		}
		i := slices.IndexFunc(us, func(u *gitlab.User) bool { return u.Username == n })
		if i < 0 {
			missing = append(missing, n)
			continue
		}
		ids = append(ids, us[i].ID)
	}
	return ids, missing, nil
}

// convert reads a GitLab merge request, with its review decision from
// its approval state (approved, or approvals still required) and the
// reviewers' "requested changes" merge status.
func (c *gitlabClient) convert(ctx context.Context, mr *gitlab.BasicMergeRequest) PullRequest {
	out := PullRequest{Number: int(mr.IID), Head: mr.SourceBranch, URL: mr.WebURL, State: gitlabState(mr.State), Apps: appsOf(mr.Description)}
	for _, u := range mr.Reviewers {
		if u != nil {
			out.Reviewers = append(out.Reviewers, "@"+u.Username)
		}
	}
	if mr.DetailedMergeStatus == "requested_changes" {
		out.Review = "changes requested"
		return out
	}
	ap, _, err := c.gl.MergeRequestApprovals.GetConfiguration(c.r.Path, mr.IID, gitlab.WithContext(ctx))
	switch {
	case err != nil:
		// Editions without approvals answer 403 or 404: no decision is
		// known, which does not fail the request it describes.
	case ap.Approved && len(ap.ApprovedBy) > 0:
		out.Review = "approved"
	case ap.ApprovalsLeft > 0 || len(out.Reviewers) > 0:
		out.Review = "review required"
	}
	return out
}

// gitlabState maps GitLab's merge request states onto open, closed and
// merged.
func gitlabState(s string) string {
	switch s {
	case "opened":
		return "open"
	case "merged":
		return "merged"
	default: // closed, locked
		return "closed"
	}
}
