// Package cli is kdrift's command line: the subcommands (status, diff,
// audit, sync, freeze, unfreeze, revert, ignore, push, ui, controller, demo,
// version, completion) and the terminal UI they share flags with, as a
// cobra command tree. Each subcommand lives in its own cmd_*.go file and
// registers its constructor in commands; the formatting lives in ui/report
// and the work in engine/ packages.
//
// The same binary installed as kubectl-kdrift is a kubectl plugin: help,
// examples and usage errors then name it "kubectl kdrift".
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/internal/termsafe"
)

// Exit codes shared by every subcommand (diff follows kubectl diff).
const (
	exitOK    = 0
	exitDrift = 1
	exitError = 2
	// exitRefused: the remote refused the action's push on purpose (a
	// hook, a protected branch, a missing permission) and the action is
	// in force nowhere; a freeze the incident channel took exits 0.
	exitRefused = 3
)

// Names kdrift answers to: its own, and kubectl's plugin names (kubectl
// runs kubectl-kdrift for `kubectl kdrift …` and kubectl_complete-kdrift to
// complete it).
const (
	programName        = "kdrift"
	pluginName         = "kubectl kdrift"
	pluginBinary       = "kubectl-kdrift"
	pluginCompleteName = "kubectl_complete-kdrift"
)

// Command groups of `kdrift help`.
const (
	groupLook = "look"
	groupAct  = "act"
	groupRun  = "run"
)

// globalFlags are the flags every subcommand and the UI take.
type globalFlags struct {
	repo       string
	branch     string
	kubeconfig string
	context    string
	logFile    string
	// clusterPath is the Flux cluster folder to follow.
	clusterPath string
	// chartRepos are --chart-repo: repositories charts may be fetched
	// from beside those the cluster's Flux sources name.
	chartRepos []string
	// observer, when set, is told the engine's step timings (the
	// controller's metrics); not a flag.
	observer engine.Observer
	// timings is --timings (one-shot commands, registerTimings); timer
	// records the phases when it is set.
	timings bool
	timer   *timings
	// mayWrite, when set, is the engine's write gate (the Lease); not a
	// flag.
	mayWrite func(app string) bool
	// serves, when set, is which Apps the engine looks after (a sharded
	// controller's replica); not a flag.
	serves func(app string) bool
	// clients are the clients per kubeconfig context the command's
	// engine uses (openEngine), so that a read beside it shares their
	// connection; not a flag.
	clients *live.Clients
}

func (g *globalFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.repo, "repo", "", "Git repository: a path or URL (default: the repository enclosing the current folder)")
	fs.StringVar(&g.branch, "branch", "", "branch to read and commit to (default: the repository's current branch)")
	fs.StringVar(&g.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&g.context, "context", "", "only the Apps whose destination is this kubeconfig context (an App with none counts as the current context); never redirects an App")
	fs.StringVar(&g.clusterPath, "cluster-path", "", "Flux cluster folder to follow (clusters/production): only the Kustomizations and HelmReleases it reaches are apps (default: the folder the cluster's live flux-system Kustomization applies)")
	fs.StringArrayVar(&g.chartRepos, "chart-repo", nil, "a Helm repository (https://…) or OCI location (oci://…) kdrift may fetch charts from, beside those the cluster's live Flux sources name, or one a committed Flux source names when the cluster has no live one; repeatable (a committed file never allows one; given, status and diff compare here rather than read the leader's statuses)")
	fs.StringVar(&g.logFile, "log-file", "", "write logs to this file (the UI never logs to the screen; the controller logs to stderr without it)")
}

// cliEnv is what a subcommand writes to, and how kdrift was called.
type cliEnv struct {
	stdout io.Writer
	stderr io.Writer
	// name is how the person called kdrift: "kdrift", or "kubectl kdrift"
	// for the plugin. Empty means "kdrift".
	name string
	// noColor is --no-color.
	noColor bool
	// exactStdout is stdout without termsafe's escaping: a command whose
	// -o asks for json or yaml writes there.
	exactStdout io.Writer
}

// colorOff says whether colours are off: --no-color, or NO_COLOR set to
// anything (https://no-color.org).
func (e *cliEnv) colorOff() bool {
	return e.noColor || os.Getenv("NO_COLOR") != ""
}

// errorf prints "kdrift: ..." on stderr and returns exitError.
func (e *cliEnv) errorf(format string, a ...any) int {
	fmt.Fprintf(e.stderr, "kdrift: "+format+"\n", a...)
	return exitError
}

// commands holds the constructor of every subcommand, filled by the files
// that implement them, keyed by name.
var commands = map[string]func(env *cliEnv) *cobra.Command{}

// commandOrder is the order of `kdrift help` within each group: what a
// person on call reaches for first comes first.
var commandOrder = []string{
	"status", "diff", "audit", "owners",
	"sync", "freeze", "unfreeze", "revert", "ignore", "push",
	"ui", "controller", "demo",
	"version",
}

// exitStatus is what a command's RunE returns to end kdrift with a code
// after it has reported the reason itself.
type exitStatus int

// Error says which exit code the command chose.
func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// exit turns a command's exit code into the error RunE returns: nil for 0.
func exit(code int) error {
	if code == exitOK {
		return nil
	}
	return exitStatus(code)
}

// Main runs kdrift with args (without the program name) until it is done
// or SIGINT/SIGTERM arrives, and returns the exit code: 0 ok, 1 drift (diff),
// 2 error or bad usage. Called as kubectl-kdrift (os.Args[0]) it is the
// kubectl plugin, and as kubectl_complete-kdrift it answers kubectl's
// completion requests.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := &cliEnv{stdout: stdout, stderr: stderr, name: programName}
	var argv0 string
	if len(os.Args) > 0 {
		argv0 = os.Args[0]
	}
	env.name, args = invokedAs(argv0, args)
	return run(ctx, args, env)
}

// invokedAs returns the name kdrift was called by, from its program path,
// and the arguments to run: kubectl's completion helper gets cobra's
// completion request in front of them.
func invokedAs(argv0 string, args []string) (string, []string) {
	base := strings.TrimSuffix(filepath.Base(argv0), ".exe")
	switch base {
	case pluginBinary:
		return pluginName, args
	case pluginCompleteName:
		return pluginName, append([]string{cobra.ShellCompRequestCmd}, args...)
	}
	return programName, args
}

// run builds the command tree and runs args through it. Errors a command
// reported itself end with its exit code; anything else (an unknown
// command or flag, a wrong number of arguments) is bad usage: the error,
// how to get help, and exit 2.
func run(ctx context.Context, args []string, env *cliEnv) int {
	if env.name == "" {
		env.name = programName
	}
	// Text from Git or the cluster never reaches a terminal raw: what a
	// command writes for people goes through termsafe (PersistentPreRunE
	// takes stdout's escaping away for json and yaml).
	safeOut, safeErr := termsafe.NewWriter(env.stdout), termsafe.NewWriter(env.stderr)
	env.exactStdout, env.stdout, env.stderr = env.stdout, safeOut, safeErr
	defer func() { _ = safeOut.Flush(); _ = safeErr.Flush() }()
	root := newRootCmd(env)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var st exitStatus
	if errors.As(err, &st) {
		return int(st)
	}
	path := env.name
	if cmd != nil {
		path = cmd.CommandPath()
	}
	fmt.Fprintf(env.stderr, "kdrift: %v\nRun '%s --help' for usage.\n", err, path)
	return exitError
}

// newRootCmd is the whole command tree. With no subcommand, kdrift starts
// the terminal UI, so the root takes the UI's flags.
func newRootCmd(env *cliEnv) *cobra.Command {
	var g globalFlags
	var u uiFlags
	root := &cobra.Command{
		Use:   programName + " [flags]",
		Short: "Git holds the desired state, the cluster holds the facts; kdrift shows the drift",
		Long: `Git holds the desired state, the cluster holds the facts; kdrift shows the drift.

With no command, kdrift starts the terminal UI on the repository in the
current folder (or --repo) and the clusters its Apps name. Every action of
the UI also has a command, for scripts and CI.`,
		Example: `  # the terminal UI on the repository in the current folder
  kdrift

  # read only, on another repository and kubeconfig context
  kdrift --readonly --repo ~/src/gitops --context prod

  # what drifted, for a script
  kdrift status -o json`,
		Args:              cobra.NoArgs,
		SilenceErrors:     true,
		SilenceUsage:      true,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(runUI(cmd.Context(), env, &g, &u))
		},
		// Every command's -o is checked here, as bad usage.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if f := cmd.Flags().Lookup("output"); f != nil {
				if v := f.Value.String(); (v == outputJSON || v == outputYAML) && env.exactStdout != nil {
					env.stdout = env.exactStdout
				}
				if own, ok := f.Annotations[outputFormatsAnnotation]; ok {
					return checkFormat(f.Value.String(), own)
				}
				return (&outputFlag{format: f.Value.String()}).check()
			}
			return nil
		},
	}
	root.SetOut(env.stdout)
	root.SetErr(env.stderr)
	if env.name != programName {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: env.name}
	}
	g.register(root.Flags())
	u.register(root.Flags())
	registerCompletions(root, &g)
	root.PersistentFlags().BoolVar(&env.noColor, "no-color", false, "no colours on the screen (also when NO_COLOR is set)")

	root.AddGroup(
		&cobra.Group{ID: groupLook, Title: "Look at the drift:"},
		&cobra.Group{ID: groupAct, Title: "Act (each action is a Git commit):"},
		&cobra.Group{ID: groupRun, Title: "Run kdrift:"},
	)
	for _, name := range commandOrder {
		if newCmd, ok := commands[name]; ok {
			root.AddCommand(newCmd(env))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(commands)) {
		if !slices.Contains(commandOrder, name) {
			root.AddCommand(commands[name](env))
		}
	}
	// Made here rather than lazily by Execute, so the tree is complete for
	// the help golden tests and the plugin's names apply to them too.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range allCommands(root) {
		c.Example = pluginExamples(c.Example, env.name)
		c.Long = pluginExamples(c.Long, env.name)
	}
	return root
}

func init() {
	// `kdrift help` lists the commands in commandOrder, not sorted.
	cobra.EnableCommandSorting = false
}

// allCommands is root and every command under it.
func allCommands(root *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{root}
	for _, c := range root.Commands() {
		out = append(out, allCommands(c)...)
	}
	return out
}

// Where help texts name kdrift as a command: an example line starting
// with it, or a quoted or backquoted command in a description.
var (
	exampleCommand = regexp.MustCompile(`(?m)^(\s*)kdrift( |$)`)
	quotedCommand  = regexp.MustCompile("([`\"])kdrift( |[`\"])")
)

// pluginExamples rewrites the commands in a help text to the name kdrift
// was called by, so the plugin's examples read "kubectl kdrift freeze …".
func pluginExamples(text, name string) string {
	if name == programName || name == "" {
		return text
	}
	text = exampleCommand.ReplaceAllString(text, "${1}"+name+"${2}")
	return quotedCommand.ReplaceAllString(text, "${1}"+name+"${2}")
}

// argsAtMost accepts up to n arguments; what names them in the error.
func argsAtMost(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			return fmt.Errorf("%s takes at most %d %s; got %d arguments", cmd.Name(), n, what, len(args))
		}
		return nil
	}
}

// argsExactly accepts exactly n arguments; what names them in the error.
func argsExactly(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) == n:
			return nil
		case n == 0:
			return fmt.Errorf("%s takes no arguments; got %q", cmd.Name(), args)
		}
		return fmt.Errorf("%s takes %d %s; got %d arguments", cmd.Name(), n, what, len(args))
	}
}
