package cli

import (
	"context"
	"fmt"

	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/ui/report"
)

func init() {
	commands["controller"] = command{summary: "run the engine headless until SIGTERM, writing every event as one JSON line to stdout", run: runController}
}

func runController(ctx context.Context, env *cliEnv, args []string) int {
	var g globalFlags
	var dec decryptionFlags
	fs := flag.NewFlagSet("kdrift controller [APP...]", flag.ContinueOnError)
	g.register(fs)
	dec.register(fs)
	if ok, code := parseFlags(fs, args, env); !ok {
		return code
	}
	e, err := openEngine(&g, false, fs.Args()...)
	if err != nil {
		return env.errorf("%v", err)
	}
	if err := dec.loadDecryptionKeys(ctx, e, func(err error) { fmt.Fprintf(env.stderr, "kdrift: %v\n", err) }); err != nil {
		return env.errorf("%v", err)
	}
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
