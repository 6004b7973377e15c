// Command kdrift shows the drift between Git (the desired state) and a
// Kubernetes cluster (the facts), heals it, and records every action a person
// takes as a Git commit.
//
// With no subcommand it starts the terminal UI. Every action also has a CLI
// form for scripts and CI; see `kdrift help` and kdrift.dev/kdrift/ui/cli.
package main

import (
	"os"

	"kdrift.dev/kdrift/ui/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
