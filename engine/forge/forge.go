// Package forge opens and updates pull requests (merge requests) on the
// forge that hosts a repository's remote, for actions that change desired
// state when the branch they belong on is protected: GitHub (go-github),
// GitLab (its Go client; merge requests) and Gitea or Forgejo (the Gitea
// SDK) through their APIs; when no token is configured, it gives the web
// address at which the forge offers to open one. It also reads CODEOWNERS
// files.
//
// Tokens come from the environment or a file a flag names, never from the
// repository, and never reach any output: every error this package returns
// has the token masked.
package forge

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"kdrift.dev/kdrift/engine/redact"
	"kdrift.dev/kdrift/engine/source"
)

// Kind is a family of forges that share an API.
type Kind string

// The forges kdrift knows.
const (
	GitHub Kind = "github"
	GitLab Kind = "gitlab"
	Gitea  Kind = "gitea" // Gitea and Forgejo
)

// ParseKind reads a forge name as a setting or flag gives it.
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "github":
		return GitHub, nil
	case "gitlab":
		return GitLab, nil
	case "gitea", "forgejo":
		return Gitea, nil
	}
	return "", fmt.Errorf("forge %q is not one kdrift knows: use github, gitlab, gitea or forgejo", s)
}

// Remote is a repository on a forge.
type Remote struct {
	Kind Kind
	// Web is the forge's web root, e.g. https://github.com or
	// https://git.example.com/gitea (no trailing slash).
	Web string
	// Path is the repository's path on the forge: "owner/name", or
	// "group/sub/name" on GitLab.
	Path string
}

// URL is the repository's web address.
func (r Remote) URL() string { return r.Web + "/" + r.Path }

// ParseRemote finds the forge of a Git remote URL (https, ssh or scp-like,
// normalized as the repository identity is: credentials and ".git"
// dropped). kind and web, when set (a setting or flag), say which forge and
// where its web root is; otherwise github.com is GitHub, a host named
// gitlab.* or *.gitlab.* GitLab, and a host named gitea.*, forgejo.* or
// codeberg.org Gitea. A remote on a host kdrift cannot place asks for the
// setting.
func ParseRemote(remoteURL string, kind Kind, web string) (Remote, error) {
	norm := source.NormalizeURL(remoteURL)
	host, path, ok := strings.Cut(norm, "/")
	if !ok || host == "" || strings.HasPrefix(norm, "/") || strings.Count(path, "/") < 1 {
		return Remote{}, fmt.Errorf("remote %s is not a repository on a forge (want host/owner/name); pull requests need a remote on GitHub, GitLab, Gitea or Forgejo", redact.URL(remoteURL))
	}
	r := Remote{Kind: kind, Path: path}
	if web != "" {
		u, err := url.Parse(web)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			return Remote{}, fmt.Errorf("forge URL %q: want http(s)://host[/prefix] without credentials", redact.URL(web))
		}
		r.Web = strings.TrimRight(u.String(), "/")
		// A forge served under a prefix (https://host/gitea) has the
		// prefix in the remote's path too.
		if p := strings.Trim(u.Path, "/"); p != "" {
			r.Path = strings.TrimPrefix(r.Path, p+"/")
		}
	} else {
		scheme := "https"
		if strings.HasPrefix(strings.ToLower(remoteURL), "http://") {
			scheme = "http"
		}
		r.Web = scheme + "://" + host
	}
	if r.Kind == "" {
		h := strings.ToLower(host)
		if i := strings.LastIndex(h, ":"); i >= 0 {
			h = h[:i]
		}
		switch {
		case h == "github.com" || strings.HasPrefix(h, "github."):
			r.Kind = GitHub
		case h == "gitlab.com" || strings.HasPrefix(h, "gitlab.") || strings.Contains(h, ".gitlab."):
			r.Kind = GitLab
		case h == "codeberg.org" || strings.HasPrefix(h, "gitea.") || strings.HasPrefix(h, "forgejo."):
			r.Kind = Gitea
		default:
			return Remote{}, fmt.Errorf("cannot tell which forge hosts %s: pass --forge github|gitlab|gitea (and --forge-url for a forge not served at the host's root)", host)
		}
	}
	if r.Kind != GitLab && strings.Count(r.Path, "/") != 1 {
		return Remote{}, fmt.Errorf("remote path %q is not owner/name as %s repositories are", r.Path, r.Kind)
	}
	return r, nil
}

// NewRequestURL is the web address at which the forge offers to open a pull
// request of head into base: what a person without a token opens.
func (r Remote) NewRequestURL(base, head string) string {
	switch r.Kind {
	case GitLab:
		q := url.Values{}
		q.Set("merge_request[source_branch]", head)
		q.Set("merge_request[target_branch]", base)
		return r.URL() + "/-/merge_requests/new?" + q.Encode()
	case Gitea:
		return r.URL() + "/compare/" + pathEscapeBranch(base) + "..." + pathEscapeBranch(head)
	default:
		return r.URL() + "/compare/" + pathEscapeBranch(base) + "..." + pathEscapeBranch(head) + "?expand=1"
	}
}

// pathEscapeBranch escapes a branch name for a URL path, keeping its "/".
func pathEscapeBranch(b string) string {
	parts := strings.Split(b, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// Request is a pull request to open or update.
type Request struct {
	// Head is the pushed branch; Base the protected one it merges into.
	Head, Base string
	Title      string
	Body       string
	// Reviewers are the code owners to request, as CODEOWNERS names
	// them ("@user", "@org/team", or an e-mail address, which is skipped).
	Reviewers []string
}

// PullRequest is an open (or closed) pull request as the forge reports it.
type PullRequest struct {
	Number int `json:"number"`
	// Head is the branch it merges from.
	Head string `json:"head,omitempty"`
	// Apps are the Apps its change touches, as kdrift's body names them.
	Apps []string `json:"apps,omitempty"`
	URL  string   `json:"url"`
	// State is open, closed or merged.
	State string `json:"state"`
	// Review is the review decision: approved, changes requested,
	// review required, or empty when the forge does not say.
	Review string `json:"review,omitempty"`
	// Reviewers are the users and teams whose review was requested.
	Reviewers []string `json:"reviewers,omitempty"`
	// Created says this call opened it (false: it updated one).
	Created bool `json:"created"`
	// ReviewerError says why requesting reviewers failed, when it did;
	// the pull request itself stands.
	ReviewerError string `json:"reviewerError,omitempty"`
}

// Client opens and reads pull requests on one repository.
type Client interface {
	// Ensure opens a pull request of req.Head into req.Base, or updates
	// the title, body and reviewers of the open one from that branch.
	Ensure(ctx context.Context, req Request) (PullRequest, error)
	// Find returns the newest pull request from head into base, open or
	// not; nil when there is none.
	Find(ctx context.Context, head, base string) (*PullRequest, error)
	// Open lists the open pull requests from kdrift's branches
	// (ProposalPrefix), newest first, at most 30.
	Open(ctx context.Context) ([]PullRequest, error)
}

// ErrNoAPI says kdrift has no API client for the forge: the caller gives
// the person NewRequestURL instead.
var ErrNoAPI = errors.New("kdrift opens pull requests through the API of GitHub, GitLab, Gitea and Forgejo only")

// New returns the API client for the remote's forge with token, or
// ErrNoAPI.
func New(r Remote, token string) (Client, error) {
	if token == "" {
		return nil, errors.New("no forge token")
	}
	switch r.Kind {
	case GitHub:
		return newGitHub(r, token)
	case Gitea:
		return newGitea(r, token)
	case GitLab:
		return newGitLab(r, token)
	}
	return nil, fmt.Errorf("%w (not %s): open the request at the URL printed", ErrNoAPI, r.Kind)
}

// TokenEnv are the environment variables a forge's token is read from, in
// order: KDRIFT_FORGE_TOKEN first for any forge, then the forge's own.
func TokenEnv(k Kind) []string {
	switch k {
	case GitHub:
		return []string{"KDRIFT_FORGE_TOKEN", "KDRIFT_GITHUB_TOKEN", "GITHUB_TOKEN", "GH_TOKEN"}
	case GitLab:
		return []string{"KDRIFT_FORGE_TOKEN", "KDRIFT_GITLAB_TOKEN", "GITLAB_TOKEN"}
	case Gitea:
		return []string{"KDRIFT_FORGE_TOKEN", "KDRIFT_GITEA_TOKEN", "GITEA_TOKEN", "FORGEJO_TOKEN"}
	}
	return []string{"KDRIFT_FORGE_TOKEN"}
}

// maxTokenFile bounds a token file: a token is a line.
const maxTokenFile = 4096

// Token finds the forge token: the file named (a flag; its first line),
// else the first of TokenEnv that is set. Empty means none, which is not an
// error: the caller prints NewRequestURL.
func Token(k Kind, file string, getenv func(string) string) (string, error) {
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return "", fmt.Errorf("forge token file: %w", err)
		}
		defer f.Close()
		buf := make([]byte, maxTokenFile+1)
		n, _ := f.Read(buf)
		if n > maxTokenFile {
			return "", fmt.Errorf("forge token file %s is over %d bytes; it should hold the token alone", file, maxTokenFile)
		}
		tok := strings.TrimSpace(strings.SplitN(string(buf[:n]), "\n", 2)[0])
		if tok == "" {
			return "", fmt.Errorf("forge token file %s is empty", file)
		}
		return tok, nil
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	for _, v := range TokenEnv(k) {
		if t := strings.TrimSpace(getenv(v)); t != "" {
			return t, nil
		}
	}
	return "", nil
}

// scrub masks the token in an error from a forge client, and any URL
// credentials, so that no output shows it.
func scrub(err error, token string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if token != "" {
		msg = strings.ReplaceAll(msg, token, redact.Mask)
	}
	return errors.New(redact.Text(msg))
}

// reviewerNames splits CODEOWNERS owners into users and teams ("org/team"
// becomes team "team" of org); e-mail owners have no forge name and are
// left out.
func reviewerNames(owners []string) (users, teams []string) {
	seen := map[string]bool{}
	for _, o := range owners {
		if !strings.HasPrefix(o, "@") || seen[o] {
			continue
		}
		seen[o] = true
		name := o[1:]
		if _, team, ok := strings.Cut(name, "/"); ok {
			teams = append(teams, team)
		} else {
			users = append(users, name)
		}
	}
	return users, teams
}
