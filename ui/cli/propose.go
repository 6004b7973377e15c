package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/forge"
	"kdrift.dev/kdrift/engine/redact"
)

// proposeFlags are the flags of the actions that change desired state
// (revert, ignore): how to propose the change when the branch is
// protected.
type proposeFlags struct {
	forgeFlags
	propose bool
}

func (p *proposeFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&p.propose, "propose", false, "the branch is protected: push the change to a branch of its own and open a pull request, without trying the branch first (a refused push does this too)")
	p.forgeFlags.register(fs)
}

// forgeFlags say which forge hosts the remote and where its API token is.
type forgeFlags struct {
	forge     string
	forgeURL  string
	tokenFile string
}

func (p *forgeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.forge, "forge", "", "the forge hosting the remote: github, gitlab, gitea or forgejo (default: from the remote's host)")
	fs.StringVar(&p.forgeURL, "forge-url", "", "the forge's web root, for one not served at the remote host's root (https://host/prefix)")
	fs.StringVar(&p.tokenFile, "forge-token-file", "", "read the forge API token from this file (default: $KDRIFT_FORGE_TOKEN, then $GITHUB_TOKEN/$GH_TOKEN, $GITLAB_TOKEN, $GITEA_TOKEN/$FORGEJO_TOKEN)")
}

// asked says pull requests were asked for: a forge flag was given, or
// kdrift's own token variable is set (a GITHUB_TOKEN set for other tools
// is not a request).
func (p *forgeFlags) asked() bool {
	return p.forge != "" || p.forgeURL != "" || p.tokenFile != "" || os.Getenv("KDRIFT_FORGE_TOKEN") != ""
}

// remote places a remote URL on its forge, as the flags say.
func (p *forgeFlags) remote(remoteURL string) (forge.Remote, error) {
	var kind forge.Kind
	if p.forge != "" {
		var err error
		if kind, err = forge.ParseKind(p.forge); err != nil {
			return forge.Remote{}, err
		}
	}
	return forge.ParseRemote(remoteURL, kind, p.forgeURL)
}

// requests is the cache of kdrift's open requests on the forge of
// remoteURL; nil (and no error) when no token is configured: then kdrift
// says nothing about requests rather than guess. A remote that is not on
// a forge (a local or self-hosted Git server) is an error only when pull
// requests were asked for (asked); otherwise there is nothing to show.
func (p *forgeFlags) requests(remoteURL string) (*forge.Requests, error) {
	if remoteURL == "" {
		return nil, nil
	}
	remote, err := p.remote(remoteURL)
	if err != nil {
		if !p.asked() {
			return nil, nil
		}
		return nil, err
	}
	token, err := forge.Token(remote.Kind, p.tokenFile, os.Getenv)
	if err != nil || token == "" {
		return nil, err
	}
	client, err := forge.New(remote, token)
	if err != nil {
		return nil, err
	}
	return forge.NewRequests(client), nil
}

// proposing reports whether an action's commit becomes a proposal: it
// stayed local because the remote refused it on purpose, or because
// --propose said the branch is protected.
func (p *proposeFlags) proposing(res actions.Result) bool {
	return res.Commit != "" && !res.Pushed && (res.Refused != nil || p.propose)
}

// proposal is what `--propose` (or a refused push) did, as printed.
type proposal struct {
	actions.Proposal
	// PullRequest is the opened or updated request; nil without a token.
	PullRequest *forge.PullRequest `json:"pullRequest,omitempty"`
	// OpenURL is where the forge offers to open the request by hand.
	OpenURL string `json:"openURL"`
	// InForce is always false: nothing is in force until the request is
	// merged.
	InForce bool `json:"inForce"`
	// Reviewers are the code owners of the changed files.
	Reviewers []string `json:"reviewers,omitempty"`
}

// incidentRef finds an incident reference (INC-123, or a ticket key such
// as OPS-42) in a reason.
var incidentRef = regexp.MustCompile(`\b(INC-[0-9]+|[A-Z][A-Z0-9]{1,9}-[0-9]+)\b`)

// maxRequestBody bounds the body of a pull request (GitHub refuses more
// than 65536 characters).
const maxRequestBody = 60000

// proposeResult turns an action's local commit into a proposal: push the
// proposal branch, then open or update the pull request (with a token) or
// print where to open it. preview, called after the branch is back at the
// base, is what the change does, for the body under the heading
// previewTitle. The exit code is 0: the change
// is proposed, and the output says that nothing is in force until merged.
func proposeResult(ctx context.Context, env *cliEnv, a *actionFlags, p *proposeFlags, repo *actions.Repo, what string, res actions.Result, branch, reason, previewTitle string, preview func() string) int {
	prop, err := repo.Propose(ctx, res, branch)
	if err != nil {
		return env.errorf("%s: %v", what, err)
	}
	out := proposal{Proposal: prop}
	remote, err := p.remote(prop.RemoteURL)
	if err != nil {
		return env.errorf("%s: pushed %s, but %v", what, prop.Branch, err)
	}
	out.OpenURL = remote.NewRequestURL(prop.Base, prop.Branch)
	if owners, err := forge.CodeownersAt(repo.Git(), plumbing.NewHash(prop.Commit)); err != nil {
		fmt.Fprintf(env.stderr, "kdrift: warning: CODEOWNERS: %v\n", err)
	} else if owners != nil {
		files, err := forge.ChangedFiles(repo.Git(), plumbing.NewHash(prop.Commit))
		if err != nil {
			return env.errorf("%s: %v", what, err)
		}
		out.Reviewers = owners.RequiredOwners(files)
	}
	token, err := forge.Token(remote.Kind, p.tokenFile, os.Getenv)
	if err != nil {
		return env.errorf("%v", err)
	}
	var reqErr error
	if token != "" {
		var client forge.Client
		client, reqErr = forge.New(remote, token)
		if reqErr == nil {
			id, _ := repo.Identity()
			body := requestBody(what, reason, id, prop, previewTitle, preview()) + "\n" + forge.AppsMarker(res.Apps) + "\n"
			var pr forge.PullRequest
			pr, reqErr = client.Ensure(ctx, forge.Request{Head: prop.Branch, Base: prop.Base, Title: prop.Subject, Body: body, Reviewers: out.Reviewers})
			if reqErr == nil {
				out.PullRequest = &pr
			}
		}
	}
	if a.output.structured() {
		if err := a.output.write(env.stdout, out); err != nil {
			return env.errorf("writing output failed: %v", err)
		}
	} else {
		verb := "pushed"
		if prop.Updated {
			verb = "updated"
		}
		fmt.Fprintf(env.stdout, "%s: proposed: %s branch %s (commit %s) for a pull request into %s\n", what, verb, prop.Branch, prop.Commit[:12], prop.Base)
		if pr := out.PullRequest; pr != nil {
			state := "opened"
			if !pr.Created {
				state = "updated"
			}
			fmt.Fprintf(env.stdout, "pull request #%d %s: %s (%s", pr.Number, state, pr.URL, pr.State)
			if pr.Review != "" {
				fmt.Fprintf(env.stdout, ", %s", pr.Review)
			}
			fmt.Fprintln(env.stdout, ")")
			if len(pr.Reviewers) > 0 {
				fmt.Fprintf(env.stdout, "reviewers requested: %s\n", strings.Join(pr.Reviewers, ", "))
			}
			if pr.ReviewerError != "" {
				fmt.Fprintf(env.stderr, "kdrift: warning: requesting reviewers %s failed: %s\n", strings.Join(out.Reviewers, ", "), pr.ReviewerError)
			}
		} else {
			fmt.Fprintf(env.stdout, "open the pull request at: %s\n", out.OpenURL)
			if len(out.Reviewers) > 0 {
				fmt.Fprintf(env.stdout, "code owners to ask for review: %s\n", strings.Join(out.Reviewers, ", "))
			}
		}
		fmt.Fprintf(env.stdout, "nothing is in force until the pull request is merged into %s\n", prop.Base)
	}
	switch {
	case reqErr != nil:
		fmt.Fprintf(env.stderr, "kdrift: warning: the pull request was not opened: %s; open it at %s\n", redact.Text(reqErr.Error()), out.OpenURL)
	case token == "":
		fmt.Fprintf(env.stderr, "kdrift: no forge token (%s, or --forge-token-file): the pull request was not opened for you\n", strings.Join(forge.TokenEnv(remote.Kind), ", "))
	}
	return exitOK
}

// requestBody is the pull request's description: the action, the reason,
// who, the incident reference and what the change does (the cluster
// preview of a revert, the rule and diff of an ignore).
func requestBody(what, reason string, id actions.Identity, prop actions.Proposal, previewTitle, preview string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Action:** `kdrift %s`\n\n", what)
	fmt.Fprintf(&b, "**Reason:** %s\n\n", strings.TrimSpace(reason))
	if id.Name != "" {
		fmt.Fprintf(&b, "**By:** %s <%s>\n\n", id.Name, id.Email)
	}
	if m := incidentRef.FindString(reason); m != "" {
		fmt.Fprintf(&b, "**Incident:** %s\n\n", m)
	}
	fmt.Fprintf(&b, "Proposed by kdrift on `%s` because `%s` is protected. Nothing is in force until this is merged; after the merge the usual path applies.\n\n", prop.Branch, prop.Base)
	if preview != "" {
		fmt.Fprintf(&b, "### %s\n\n```\n", previewTitle)
		if len(preview) > maxRequestBody-b.Len()-100 {
			preview = preview[:maxRequestBody-b.Len()-100] + "\n… (cut; run the preview locally for the rest)"
		}
		b.WriteString(strings.ReplaceAll(preview, "```", "'''"))
		b.WriteString("\n```\n")
	}
	return b.String()
}

// writeTo renders a preview writer into a string, or says why it failed.
func writeTo(write func(*bytes.Buffer) error) string {
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return "preview unavailable: " + err.Error()
	}
	return buf.String()
}
