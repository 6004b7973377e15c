package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"
	"golang.org/x/term"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/ui"
)

func init() {
	commands["ui"] = newUICmd
}

// uiFlags are the UI's own flags, beside the global ones.
type uiFlags struct {
	readonly bool
	config   string
	author   string
}

func (u *uiFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&u.readonly, "readonly", false, "disable every key that changes the cluster or Git (also readonly: true in the config file)")
	fs.StringVar(&u.config, "config", "", "config file (default: $XDG_CONFIG_HOME/kdrift/config.yaml or ~/.config/kdrift/config.yaml)")
	fs.StringVar(&u.author, "author", "", "record actions as \"Name <email>\" (default: $KDRIFT_AUTHOR, then git config)")
}

func newUICmd(env *cliEnv) *cobra.Command {
	var g globalFlags
	var u uiFlags
	cmd := &cobra.Command{
		Use:     "ui",
		GroupID: groupRun,
		Short:   "The terminal UI (the default when no command is given)",
		Long: `Start the terminal UI: the apps and their drift, kept up to date in the
background, with the diff, ownership and history views and the actions (sync,
freeze, unfreeze, revert, ignore) on keys; ? shows them all. "kdrift ui" and
"kdrift" alone are the same. --readonly disables every key that changes the
cluster or Git.`,
		Example: `  # the UI on the repository in the current folder
  kdrift ui

  # read only, one context, a log file to look at afterwards
  kdrift ui --readonly --context prod --log-file /tmp/kdrift.log`,
		Args:              argsExactly(0, ""),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(runUI(cmd.Context(), env, &g, &u))
		},
	}
	g.register(cmd.Flags())
	u.register(cmd.Flags())
	registerCompletions(cmd, &g)
	return cmd
}

func runUI(ctx context.Context, env *cliEnv, g *globalFlags, u *uiFlags) int {
	if !term.IsTerminal(int(os.Stdin.Fd())) || !term.IsTerminal(int(os.Stdout.Fd())) {
		return env.errorf("the UI needs a terminal; for scripts use `kdrift status`, `kdrift diff APP` or `kdrift controller`")
	}
	readonly, err := uiReadOnly(u.readonly, u.config)
	if err != nil {
		return env.errorf("%v", err)
	}
	e, err := openEngine(g, readonly)
	if err != nil {
		return env.errorf("%v", err)
	}
	opts := actions.RepoOptions{Repo: g.repo, Branch: g.branch, Author: u.author}
	if err := runEngineUI(ctx, e, opts, ui.Options{Readonly: readonly, LogFile: g.logFile, ConfigPath: u.config, NoColor: env.colorOff()}); err != nil {
		return env.errorf("%v", err)
	}
	return exitOK
}

// runEngineUI runs the engine in the background and the UI in front until
// the UI quits or ctx ends; then it stops the engine and waits for it.
func runEngineUI(ctx context.Context, e *engine.Engine, actionOpts actions.RepoOptions, opts ui.Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	be := ui.NewEngineBackend(e, actionOpts)
	defer be.Close()
	engineDone := make(chan error, 1)
	go func() { engineDone <- e.Run(ctx) }()
	uiErr := ui.Run(ctx, be, opts)
	cancel()
	engErr := <-engineDone
	if engErr != nil && !errors.Is(engErr, context.Canceled) {
		if uiErr == nil {
			return fmt.Errorf("engine: %w", engErr)
		}
	}
	return uiErr
}
