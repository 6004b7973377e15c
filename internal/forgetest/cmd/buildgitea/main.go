// Command buildgitea builds (or finds cached) the Gitea server the forge
// tests run, and prints its path; `make gitea` runs it.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"kdrift.dev/kdrift/internal/controlplane"
	"kdrift.dev/kdrift/internal/forgetest"
)

func main() {
	root, err := controlplane.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "buildgitea:", err)
		os.Exit(1)
	}
	opts := forgetest.GiteaBuildOptions(root)
	opts.Log = os.Stderr
	start := time.Now()
	bin, err := controlplane.Binary(context.Background(), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "buildgitea:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "gitea ready in %s\n", time.Since(start).Round(time.Second))
	fmt.Println(bin)
}
