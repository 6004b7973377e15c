package cli

import (
	"bytes"
	"context"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/ui/report"
)

func init() {
	commands["revert"] = newRevertCmd
}

// revertFlags are `kdrift revert`'s flags.
type revertFlags struct {
	actionFlags
	proposeFlags
	reason   string
	mainline int
	preview  bool
}

func (f *revertFlags) register(fs *flag.FlagSet) {
	f.actionFlags.register(fs)
	f.proposeFlags.register(fs)
	fs.StringVar(&f.reason, "reason", "", "why (required; recorded in the commit)")
	fs.IntVarP(&f.mainline, "mainline", "m", 0, "for a merge commit: the parent (1-based) whose side to keep, as git revert -m")
	fs.BoolVar(&f.preview, "preview", false, "print what the revert would change, commit nothing")
}

func newRevertCmd(env *cliEnv) *cobra.Command {
	var f revertFlags
	cmd := &cobra.Command{
		Use:     "revert COMMIT --reason TEXT [-m N] [--preview]",
		GroupID: groupAct,
		Short:   "Commit the undoing of a commit (like git revert), with a reason",
		Long: `Commit the undoing of COMMIT on top of the branch, with the same tree git
revert would make, a subject 'Revert "…"' and the reason, and push it.
A revert that conflicts with later changes is refused, naming the files and
lines. --preview prints the revert's diff and, under it, what the cluster
would change (each object whose render changes: its fields, live value →
value after the revert; objects added, pruned or left) and commits nothing.`,
		Example: `  # look first
  kdrift revert 3f2c1ab --preview

  # then revert, with the reason recorded
  kdrift revert 3f2c1ab --reason "INC-2 the new voice model times out"`,
		Args:              argsExactly(1, "COMMIT"),
		ValidArgsFunction: completeCommits(&f.globalFlags),
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(runRevert(cmd.Context(), env, &f, args[0]))
		},
	}
	f.register(cmd.Flags())
	registerCompletions(cmd, &f.globalFlags)
	return cmd
}

func runRevert(ctx context.Context, env *cliEnv, f *revertFlags, commit string) int {
	f.actionFlags.propose = f.proposeFlags.propose && !f.preview
	repo, err := f.open(ctx)
	if err != nil {
		return env.errorf("%v", err)
	}
	req := actions.RevertRequest{Commit: commit, Mainline: f.mainline, Reason: f.reason}
	if f.preview {
		rd, err := repo.RevertPreview(ctx, req)
		if err != nil {
			return env.errorf("revert %s: %v", commit, err)
		}
		p := report.RevertPreview{Files: rd.Files, Cluster: previewCluster(ctx, &f.globalFlags, rd)}
		if f.output.structured() {
			err = f.output.write(env.stdout, p)
		} else {
			err = report.WriteRevertPreview(env.stdout, p)
		}
		if err != nil {
			return env.errorf("writing output failed: %v", err)
		}
		return exitOK
	}
	res, err := repo.Revert(ctx, req)
	if err != nil {
		return env.errorf("revert %s: %v", commit, err)
	}
	if f.proposeFlags.proposing(res) {
		// The branch is protected: the revert becomes a pull request,
		// with the preview of the branch as it is (the commit is moved
		// off it first).
		reverted := commit
		if h, err := repo.Git().ResolveRevision(plumbing.Revision(commit)); err == nil {
			reverted = h.String()[:7]
		}
		branch := actions.ProposalBranch("revert", reverted)
		preview := func() string {
			rd, err := repo.RevertPreview(ctx, req)
			if err != nil {
				return "preview unavailable: " + err.Error()
			}
			p := report.RevertPreview{Files: rd.Files, Cluster: previewCluster(ctx, &f.globalFlags, rd)}
			return writeTo(func(b *bytes.Buffer) error { return report.WriteRevertPreview(b, p) })
		}
		return proposeResult(ctx, env, &f.actionFlags, &f.proposeFlags, repo, "revert "+commit, res, branch, f.reason, "What the cluster would change", preview)
	}
	return printResult(env, &f.actionFlags, "revert "+commit, res)
}

// previewCluster is what applying the reverted tree would change in the
// cluster (a read-only engine: renders and dry-runs, no write); when no
// engine can start, the preview says why instead.
func previewCluster(ctx context.Context, g *globalFlags, rd actions.RevertDiff) engine.TreePreview {
	e, err := openEngine(ctx, g, true, oneShot)
	if err != nil {
		return engine.TreePreview{Apps: []engine.AppPreview{}, Unavailable: err.Error()}
	}
	p, err := e.PreviewTree(ctx, rd.Head, rd.Tree)
	if err != nil {
		return engine.TreePreview{Apps: []engine.AppPreview{}, Unavailable: err.Error()}
	}
	return p
}
