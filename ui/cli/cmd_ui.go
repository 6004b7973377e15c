package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	flag "github.com/spf13/pflag"
	"golang.org/x/term"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/ui"
)

func init() {
	commands["ui"] = command{summary: "the terminal UI (the default when no command is given)", run: runUI}
}

// uiFlags are the UI's own flags, beside the global ones.
type uiFlags struct {
	readonly bool
	config   string
	author   string
}

func (u *uiFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&u.readonly, "readonly", false, "disable every key that changes the cluster or Git (also `readonly: true` in the config file)")
	fs.StringVar(&u.config, "config", "", "config file (default: $XDG_CONFIG_HOME/kdrift/config.yaml or ~/.config/kdrift/config.yaml)")
	fs.StringVar(&u.author, "author", "", "record actions as \"Name <email>\" (default: $KDRIFT_AUTHOR, then git config)")
}

func runUI(ctx context.Context, env *cliEnv, args []string) int {
	var g globalFlags
	var u uiFlags
	fs := flag.NewFlagSet("kdrift", flag.ContinueOnError)
	g.register(fs)
	u.register(fs)
	if ok, code := parseFlags(fs, args, env); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return env.errorf("unexpected argument %q; run `kdrift help` for the commands", fs.Arg(0))
	}
	if !term.IsTerminal(int(os.Stdin.Fd())) || !term.IsTerminal(int(os.Stdout.Fd())) {
		return env.errorf("the UI needs a terminal; for scripts use `kdrift status`, `kdrift diff APP` or `kdrift controller`")
	}
	readonly, err := uiReadOnly(u.readonly, u.config)
	if err != nil {
		return env.errorf("%v", err)
	}
	e, err := openEngine(&g, readonly)
	if err != nil {
		return env.errorf("%v", err)
	}
	opts := actions.RepoOptions{Repo: g.repo, Branch: g.branch, Author: u.author}
	if err := runEngineUI(ctx, e, opts, ui.Options{Readonly: readonly, LogFile: g.logFile, ConfigPath: u.config}); err != nil {
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
