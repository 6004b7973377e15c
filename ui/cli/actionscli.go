package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/ownerpause"
	"kdrift.dev/kdrift/engine/publish"
	"kdrift.dev/kdrift/engine/render"
)

// actionFlags are the flags every committing command takes besides the
// global ones.
type actionFlags struct {
	globalFlags
	author string
	output outputFlag
	lease  leaseFlags
	// opened is the repository open returned, for the leader nudge.
	opened *actions.Repo
	// propose: the branch is protected; commits stay local for a
	// proposal branch (set by the command from its --propose).
	propose bool
	// resolved is how the engine found the apps, once act asked it.
	resolved *actions.AppResolution
}

// resolveTimeout bounds how long an action waits for the engine to say
// which apps exist beyond Git alone: a freeze never waits long on a
// cluster that does not answer (it then resolves from Git alone).
const resolveTimeout = 15 * time.Second

// act runs do on repo; when do names an app that Git alone does not
// resolve, act asks the engine how `status` finds the apps (the cluster
// folder of the live Flux bootstrap, the apps only live objects
// declare) and runs do once more on the repository opened with that:
// every action takes every app status lists, or says why it cannot.
func (a *actionFlags) act(ctx context.Context, repo *actions.Repo, do func(*actions.Repo) (actions.Result, error)) (actions.Result, error) {
	res, err := do(repo)
	var un *actions.UnresolvedError
	if !errors.As(err, &un) || a.resolved != nil {
		return res, err
	}
	rctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	e, eerr := openEngine(rctx, &a.globalFlags, true, oneShot)
	if eerr != nil {
		return res, err
	}
	fc, liveOnly, rerr := e.ResolveApps(rctx)
	if rerr != nil || (fc == nil && len(liveOnly) == 0) {
		return res, err
	}
	a.resolved = &actions.AppResolution{Flux: fc, Live: liveOnly}
	again, oerr := a.open(ctx)
	if oerr != nil {
		return res, err
	}
	return do(again)
}

func (a *actionFlags) register(fs *flag.FlagSet) {
	a.globalFlags.register(fs)
	fs.StringVar(&a.author, "author", "", "record the action as \"Name <email>\" (default: $KDRIFT_AUTHOR, then git config user.name/user.email)")
	a.output.register(fs)
	a.lease.registerNamespace(fs)
}

func (a *actionFlags) open(ctx context.Context) (*actions.Repo, error) {
	opts := actions.RepoOptions{Repo: a.repo, Branch: a.branch, Author: a.author, Propose: a.propose, ClusterPath: a.clusterPath, Resolved: a.resolved}
	if dir := render.DefaultCacheDir(); dir != "" {
		// Finding the apps a freeze names reads only what changed since
		// the last command, as a one-shot engine does.
		opts.DiscoverCacheDir = filepath.Join(filepath.Dir(dir), "discover")
	}
	r, err := actions.Open(ctx, opts)
	a.opened = r
	return r, err
}

// printResult reports a committing action: the summary on stdout (or the
// Result as JSON or YAML), and a push failure also on stderr. The exit
// code is 0 when the commit exists, except when the remote refused it and
// no incident channel took it, or the channel's readers do not take it:
// the action is then in force nowhere (exitRefused), and the remote's own
// lines are printed.
func printResult(env *cliEnv, a *actionFlags, what string, res actions.Result) int {
	owners := writeOwners(&a.globalFlags, res)
	if a.output.structured() {
		out := struct {
			actions.Result
			Owners []ownerpause.Outcome `json:"owners,omitempty"`
		}{res, owners}
		if err := a.output.write(env.stdout, out); err != nil {
			return env.errorf("writing output failed: %v", err)
		}
	} else {
		fmt.Fprintf(env.stdout, "%s: %s\n", what, res.Summary())
	}
	ownersFailed := false
	for _, o := range owners {
		if o.Done {
			if !a.output.structured() {
				fmt.Fprintf(env.stdout, "%s: %s\n", o.App, o.Message)
			}
			continue
		}
		ownersFailed = true
		fmt.Fprintf(env.stderr, "kdrift: error: %s: %s\n", o.App, o.Message)
		if o.Command != "" {
			fmt.Fprintf(env.stderr, "kdrift: by hand: %s\n", o.Command)
		}
	}
	if res.Refused != nil && res.Channel == "" {
		fmt.Fprintf(env.stderr, "kdrift: error: %s\n", res.Summary())
		for _, l := range res.Refused.Lines {
			fmt.Fprintf(env.stderr, "remote: %s\n", l)
		}
		fmt.Fprintln(env.stderr, "kdrift: a freeze goes to the incident channel (see Protected branches in README); other changes need a pull request")
		return exitRefused
	}
	if res.NotTaken != "" {
		fmt.Fprintf(env.stderr, "kdrift: error: %s\n", res.Summary())
		return exitRefused
	}
	if res.PushError != "" && res.Channel == "" {
		fmt.Fprintf(env.stderr, "kdrift: warning: %s\n", res.Summary())
	}
	note := "leader: " + nudgeLeader(a, res)
	if a.output.structured() {
		fmt.Fprintln(env.stderr, note)
	} else {
		fmt.Fprintln(env.stdout, note)
	}
	if ownersFailed {
		// The record is on the channel, but the engine that heals the
		// app reads the branch only: for it, nothing changed.
		return exitRefused
	}
	return exitOK
}

// writeOwners writes the freezes a record on the incident channel changed
// for apps another GitOps tool owns on their live declarations, in the
// current context's cluster (engine/ownerpause); nil when the record
// changed none.
func writeOwners(g *globalFlags, res actions.Result) []ownerpause.Outcome {
	if len(res.Owned) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), ownerWriteTimeout)
	defer cancel()
	return ownerpause.WriteWith(ctx, live.NewClients(g.kubeconfig, live.DefaultOptions()), g.context, res.Owned, res.Channel)
}

// ownerWriteTimeout bounds the writes of writeOwners.
const ownerWriteTimeout = 30 * time.Second

// nudgeLeader asks the repository's healer, best effort, to fetch the
// pushed commit now (engine/publish.Nudge), and says whether a leader was
// told. An action never needs a leader, a CRD or a cluster.
func nudgeLeader(a *actionFlags, res actions.Result) string {
	return tellLeader(&a.globalFlags, a.lease.Namespace(), a.opened, res)
}

// tellLeader is nudgeLeader for the repository r, the Lease in namespace.
func tellLeader(g *globalFlags, namespace string, r *actions.Repo, res actions.Result) string {
	if !res.Pushed || res.Upstream == "" {
		return "not told: the commit is not pushed; the healer applies only what the remote has"
	}
	if r == nil {
		return "not told: the repository is not open"
	}
	id, err := r.RepoIdentity()
	if err != nil {
		return fmt.Sprintf("not told: %v; a healer sees the commit at its next fetch", err)
	}
	cs, dyn, err := homeClients(g)
	if err != nil {
		return fmt.Sprintf("not told: no cluster (%v); the healer sees the commit at its next fetch", err)
	}
	n := publish.Nudge(context.Background(), cs, dyn, namespace, id, res.Commit, res.Apps)
	if !n.Told {
		return "not told: " + n.Why + "; a healer sees the commit at its next fetch"
	}
	short := res.Commit
	if len(short) > 12 {
		short = short[:12]
	}
	return fmt.Sprintf("told %s/%s to fetch %s now", n.Namespace, n.Leader, short)
}
