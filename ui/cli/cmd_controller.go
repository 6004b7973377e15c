package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	flag "github.com/spf13/pflag"

	ctrl "kdrift.dev/kdrift/controller"
	"kdrift.dev/kdrift/ui/report"
)

func init() {
	commands["controller"] = command{summary: "run the engine headless until SIGTERM, writing every event as one JSON line to stdout", run: runController}
}

func runController(ctx context.Context, env *cliEnv, args []string) int {
	var g globalFlags
	var of ctrl.Flags
	fs := flag.NewFlagSet("kdrift controller [APP...]", flag.ContinueOnError)
	g.register(fs)
	of.Register(fs)
	if ok, code := parseFlags(fs, args, env); !ok {
		return code
	}
	log, closeLog, err := controllerLog(&g, &of, env)
	if err != nil {
		return env.errorf("%v", err)
	}
	defer closeLog()
	ctrl.RouteLibraryLogs(log)
	ops := ctrl.New(ctrl.Options{MetricsAddr: of.MetricsAddr, Kubeconfig: g.kubeconfig, Context: g.context, Leader: true, Log: log})
	g.observer = ops.Observer()
	e, err := openEngine(&g, false, fs.Args()...)
	if err != nil {
		return env.errorf("%v", err)
	}
	if err := ops.Start(ctx, e); err != nil {
		return env.errorf("%v", err)
	}
	defer ops.Stop()
	log.Info("controller started", "repo", ctrl.Redact(e.Repo().Location()), "branch", e.Repo().Branch(), "apps", fs.Args())
	defer log.Info("controller stopped")
	events, stop := e.SubscribeAll()
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	failed := false
	for {
		select {
		case ev := <-events:
			line, err := report.EventLine(ev)
			if err != nil {
				fmt.Fprintf(env.stderr, "kdrift: %v\n", err)
				failed = true
				continue
			}
			if _, err := fmt.Fprintf(env.stdout, "%s\n", line); err != nil {
				stop()
				go func() {
					for range events {
					}
				}()
				<-done
				return env.errorf("write event: %v", err)
			}
		case err := <-done:
			// Run has returned: no more events; write what is queued.
			stop()
			for ev := range events {
				line, lerr := report.EventLine(ev)
				if lerr != nil {
					fmt.Fprintf(env.stderr, "kdrift: %v\n", lerr)
					failed = true
					continue
				}
				fmt.Fprintf(env.stdout, "%s\n", line)
			}
			if err != nil {
				return env.errorf("%v", err)
			}
			if failed {
				return exitError
			}
			return exitOK
		}
	}
}

// controllerLog opens the controller's log: --log-file when given, else
// stderr, at --log-level in --log-format.
func controllerLog(g *globalFlags, of *ctrl.Flags, env *cliEnv) (*slog.Logger, func(), error) {
	var w io.Writer = env.stderr
	closeLog := func() {}
	if g.logFile != "" {
		f, err := os.OpenFile(g.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("log file %s cannot be opened: %w", g.logFile, err)
		}
		w = f
		closeLog = func() {
			if err := f.Close(); err != nil {
				fmt.Fprintf(env.stderr, "kdrift: log file %s: %v\n", g.logFile, err)
			}
		}
	}
	log, err := ctrl.NewLogger(w, of.LogLevel, of.LogFormat)
	if err != nil {
		closeLog()
		return nil, nil, err
	}
	return log, closeLog, nil
}
