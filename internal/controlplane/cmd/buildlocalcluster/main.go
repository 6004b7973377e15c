// Command buildlocalcluster builds the local control plane of
// testdata/localcluster into kdrift's cache (or finds it there) and prints
// the binary's path. `make localcluster` runs it; tests and `kdrift demo`
// use the same cache. A build shows its progress on stderr; --next says
// what the caller does once the binary is there.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"kdrift.dev/kdrift/internal/controlplane"
)

func main() {
	next := flag.String("next", "use it", "what happens once the binary is built, for the progress display")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	log, progress := controlplane.BuildOutput(os.Stderr, *next)
	bin, err := controlplane.Binary(ctx, controlplane.BuildOptions{
		SourceDir: filepath.FromSlash(controlplane.ModuleDir),
		Log:       log,
		Progress:  progress,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "buildlocalcluster: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "local control plane ready in %s\n", time.Since(start).Round(100*time.Millisecond))
	fmt.Println(bin)
}
