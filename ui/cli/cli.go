// Package cli is kdrift's command line: the subcommands (diff, sync,
// status, controller, freeze, unfreeze, revert, ignore, audit, push, demo)
// and the terminal UI they share flags with. Each subcommand lives in its own
// cmd_*.go file and registers itself in commands; the formatting and the
// work live in engine/ packages.
package cli

import (
	"context"
	"errors"
	"fmt"
	flag "github.com/spf13/pflag"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"kdrift.dev/kdrift/engine/engine"
)

// Exit codes shared by every subcommand (diff follows kubectl diff).
const (
	exitOK    = 0
	exitDrift = 1
	exitError = 2
)

// globalFlags are the flags every subcommand and the UI take.
type globalFlags struct {
	repo       string
	branch     string
	kubeconfig string
	context    string
	logFile    string
	// observer, when set, is told the engine's step timings (the
	// controller's metrics); not a flag.
	observer engine.Observer
}

func (g *globalFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.repo, "repo", "", "Git repository: a path or URL (default: the repository enclosing the current folder)")
	fs.StringVar(&g.branch, "branch", "", "branch to read and commit to (default: the repository's current branch)")
	fs.StringVar(&g.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&g.context, "context", "", "kubeconfig context (default: each App's destination, then the current context)")
	fs.StringVar(&g.logFile, "log-file", "", "write logs to this file (nothing is ever logged to the screen)")
}

// command is one subcommand: its one-line summary and what runs it.
type command struct {
	summary string
	run     func(ctx context.Context, env *cliEnv, args []string) int
}

// cliEnv is what a subcommand writes to.
type cliEnv struct {
	stdout io.Writer
	stderr io.Writer
}

// errorf prints "kdrift: ..." on stderr and returns exitError.
func (e *cliEnv) errorf(format string, a ...any) int {
	fmt.Fprintf(e.stderr, "kdrift: "+format+"\n", a...)
	return exitError
}

// commands is filled by the files that implement each subcommand.
var commands = map[string]command{}

// Main runs kdrift with args (without the program name) until it is done
// or SIGINT/SIGTERM arrives, and returns the exit code: 0 ok, 1 drift (diff),
// 2 error.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, args, &cliEnv{stdout: stdout, stderr: stderr})
}

func run(ctx context.Context, args []string, env *cliEnv) int {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name := args[0]
		if name == "help" {
			usage(env.stdout)
			return exitOK
		}
		cmd, ok := commands[name]
		if !ok {
			return env.errorf("unknown command %q; run `kdrift help` for the list", name)
		}
		return cmd.run(ctx, env, args[1:])
	}
	if ui, ok := commands["ui"]; ok {
		return ui.run(ctx, env, args)
	}
	usage(env.stderr)
	return exitError
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "kdrift: Git holds the desired state, the cluster holds the facts; kdrift shows the drift.")
	fmt.Fprintln(w, "\nUsage:\n  kdrift [flags]            start the terminal UI\n  kdrift COMMAND [flags]    run one command\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		if n != "ui" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun `kdrift COMMAND -h` for a command's flags.")
}

// parseFlags parses a subcommand's flags, printing errors on env.stderr. It
// returns false (and the exit code to use) when the command should stop.
func parseFlags(fs *flag.FlagSet, args []string, env *cliEnv) (bool, int) {
	fs.SetOutput(env.stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return false, exitOK
		}
		return false, exitError
	}
	return true, exitOK
}
