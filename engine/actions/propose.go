package actions

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"

	"kdrift.dev/kdrift/engine/redact"
	"kdrift.dev/kdrift/engine/source"
)

// ProposalPrefix starts the name of every branch kdrift proposes a change
// on: kdrift/revert-<short>, kdrift/ignore-<app>-<hash>.
const ProposalPrefix = "kdrift/"

// Proposal is an action's commit pushed to a branch of its own, for a pull
// request into the protected upstream branch.
type Proposal struct {
	// Branch is the proposal branch ("kdrift/revert-3f2c1ab").
	Branch string `json:"branch"`
	// Base is the upstream branch it merges into ("main").
	Base string `json:"base"`
	// Commit is the proposed commit.
	Commit string `json:"commit"`
	// Subject and Body are the commit message's, for the request.
	Subject string `json:"subject"`
	Body    string `json:"body"`
	// RemoteURL is the remote's address, credentials redacted.
	RemoteURL string `json:"remoteURL"`
	// Updated says the branch existed and was moved to the new commit.
	Updated bool `json:"updated"`
}

// proposalName is a proposal branch's form; its length, at most
// maxProposalName, is checked apart (a bounded repetition compiles into a
// program of a hundred states, which every kdrift process would build at
// start).
var proposalName = regexp.MustCompile(`^kdrift/[a-z0-9][a-z0-9._-]*$`)

// maxProposalName bounds a proposal branch's name.
const maxProposalName = len("kdrift/") + 101

// ProposalBranch names a proposal branch from its parts, lower-cased,
// with anything but letters, digits, '.', '_' and '-' made '-':
// ProposalBranch("revert", "3f2c1ab") is "kdrift/revert-3f2c1ab".
func ProposalBranch(parts ...string) string {
	s := strings.ToLower(strings.Join(parts, "-"))
	s = strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '-'
	}, s)
	s = strings.Trim(strings.ReplaceAll(s, "..", "-"), "-.")
	if len(s) > 100 {
		s = s[:100]
	}
	return ProposalPrefix + s
}

// Propose moves an action's commit off the branch onto the proposal
// branch and pushes that branch: res is the action's Result whose commit
// stayed local (the upstream refused it, or RepoOptions.Propose). The
// person's branch goes back to the commit's parent, so nothing unpushed is
// left on it; the same action proposed again replaces the branch's commit
// (a forced push guarded by a lease on what the remote had), so one action
// keeps one branch and one pull request.
func (r *Repo) Propose(ctx context.Context, res Result, branch string) (Proposal, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !proposalName.MatchString(branch) || len(branch) > maxProposalName {
		return Proposal{}, fmt.Errorf("proposal branch %q: want kdrift/ followed by at most 101 lower-case letters, digits, '.', '_' or '-'", branch)
	}
	remote, upRef, hasUp, err := r.upstream()
	if err != nil {
		return Proposal{}, err
	}
	if !hasUp {
		return Proposal{}, fmt.Errorf("branch %s tracks no remote branch; there is nothing to propose a change to", r.branch)
	}
	c, err := headerCommit(r.git.Storer, plumbing.NewHash(res.Commit))
	if err != nil || res.Commit == "" {
		return Proposal{}, fmt.Errorf("the action's commit %q is not in the repository: %v", res.Commit, err)
	}
	tip, err := r.head()
	if err != nil {
		return Proposal{}, err
	}
	if tip != c.Hash || c.NumParents() != 1 {
		return Proposal{}, fmt.Errorf("branch %s moved past the action's commit %s; nothing was proposed", r.branch, c.Hash.String()[:12])
	}
	ref := plumbing.NewBranchReferenceName(branch)
	// What the remote has on the proposal branch now: the lease.
	had, err := r.fetch(ctx, remote, ref)
	if err != nil {
		return Proposal{}, err
	}
	auth, err := authFor(r.remoteURL(remote), r.opts.Getenv)
	if err != nil {
		return Proposal{}, err
	}
	spec := config.RefSpec(fmt.Sprintf("+%s:%s", c.Hash, ref))
	opts := &git.PushOptions{RemoteName: remote, RefSpecs: []config.RefSpec{spec}, Auth: auth}
	if !had.IsZero() {
		opts.ForceWithLease = &git.ForceWithLease{RefName: ref, Hash: had}
	} else {
		opts.RefSpecs = []config.RefSpec{config.RefSpec(fmt.Sprintf("%s:%s", c.Hash, ref))}
	}
	err = source.WithTimeout(ctx, r.opts.GitTimeout, "push", func(ctx context.Context) error {
		return r.git.PushContext(ctx, opts)
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return Proposal{}, redact.Error(fmt.Errorf("push of proposal branch %s to %s (%s) failed: %w; the commit %s stays on %s", branch, remote, r.remoteURL(remote), err, c.Hash.String()[:12], r.branch))
	}
	tracking := plumbing.NewRemoteReferenceName(remote, branch)
	if err := r.git.Storer.SetReference(plumbing.NewHashReference(tracking, c.Hash)); err != nil {
		return Proposal{}, fmt.Errorf("pushed %s, but recording %s failed: %w", branch, tracking.Short(), err)
	}
	if err := r.git.Storer.SetReference(plumbing.NewHashReference(ref, c.Hash)); err != nil {
		return Proposal{}, fmt.Errorf("pushed %s, but recording it locally failed: %w", branch, err)
	}
	// The commit now lives on the proposal branch; the person's branch
	// goes back to what it was built on.
	if err := r.advance(tip, c.ParentHashes[0]); err != nil {
		return Proposal{}, fmt.Errorf("proposed on %s, but moving %s back off the commit failed: %w", branch, r.branch, err)
	}
	subject, body, _ := strings.Cut(c.Message, "\n")
	return Proposal{
		Branch: branch, Base: upRef.Short(), Commit: c.Hash.String(),
		Subject: subject, Body: strings.TrimSpace(body),
		RemoteURL: redact.URL(r.remoteURL(remote)), Updated: !had.IsZero(),
	}, nil
}

// RemoteURL is the address of the branch's upstream remote (credentials
// redacted); empty when the branch tracks none.
func (r *Repo) RemoteURL() string {
	remote, _, ok, err := r.upstream()
	if err != nil || !ok {
		return ""
	}
	return redact.URL(r.remoteURL(remote))
}
