package cli

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"kdrift.dev/kdrift/engine/render/sandbox"
)

func init() {
	commands["version"] = newVersionCmd
}

// Modules whose versions `kdrift version` reports besides kdrift's own.
const (
	clientGoModule  = "k8s.io/client-go"
	kustomizeModule = "sigs.k8s.io/kustomize/api"
)

// versionInfo is what `kdrift version` prints.
type versionInfo struct {
	// Version is the module version of a tagged build (go install
	// kdrift.dev/kdrift@v1.2.3), "(devel)" for a build from a checkout, or
	// "unknown" without build information.
	Version string `json:"version"`
	// Commit and Modified describe a build from a checkout: the commit and
	// whether the working tree had uncommitted changes.
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	CommitAt  string `json:"commitTime,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
	ClientGo  string `json:"clientGo"`
	Kustomize string `json:"kustomize"`
	// Sandbox says what confines the render worker on this machine (see
	// sandbox.Report); nil until runVersion asked a worker.
	Sandbox *sandbox.Report `json:"sandbox,omitempty"`
}

// buildVersion reads versionInfo from build information; bi is nil when
// the binary has none (debug.ReadBuildInfo failed). The Go version and
// platform then come from the running program.
func buildVersion(bi *debug.BuildInfo) versionInfo {
	v := versionInfo{Version: "unknown", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		ClientGo: "unknown", Kustomize: "unknown"}
	if bi == nil {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		v.GoVersion = bi.GoVersion
	}
	goos, goarch := runtime.GOOS, runtime.GOARCH
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		case "vcs.time":
			v.CommitAt = s.Value
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	v.Platform = goos + "/" + goarch
	for _, d := range bi.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		switch d.Path {
		case clientGoModule:
			v.ClientGo = m.Version
		case kustomizeModule:
			v.Kustomize = m.Version
		}
	}
	return v
}

// writeText writes v for people, one "name: value" per line.
func (v versionInfo) writeText(w io.Writer) error {
	version := v.Version
	if v.Commit != "" {
		version += ", commit " + v.Commit
		if v.Modified {
			version += " (modified)"
		}
	}
	_, err := fmt.Fprintf(w, "kdrift:     %s\ngo:         %s %s\nclient-go:  %s\nkustomize:  %s\n",
		version, v.GoVersion, v.Platform, v.ClientGo, v.Kustomize)
	if err == nil && v.Sandbox != nil {
		_, err = fmt.Fprintf(w, "sandbox:\n  exec:     %s\n  network:  %s\n  fs:       %s\n", v.Sandbox.Exec, v.Sandbox.Network, v.Sandbox.FS)
	}
	return err
}

func newVersionCmd(env *cliEnv) *cobra.Command {
	var o outputFlag
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print kdrift's version, its Go version and its client-go and kustomize versions",
		Long: `Print the version of this kdrift binary: the module version of a tagged
build (go install kdrift.dev/kdrift@VERSION), or for a build from a checkout
the commit and whether the tree had uncommitted changes; the Go version it
was built with, and the versions of client-go and kustomize it carries.`,
		Example: `  kdrift version
  kdrift version -o json`,
		Args:              argsExactly(0, ""),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			bi, ok := debug.ReadBuildInfo()
			if !ok {
				bi = nil
			}
			return exit(runVersion(env, &o, bi))
		},
	}
	o.register(cmd.Flags())
	registerCompletions(cmd, nil)
	return cmd
}

func runVersion(env *cliEnv, o *outputFlag, bi *debug.BuildInfo) int {
	v := buildVersion(bi)
	rep, err := sandbox.Shared().Report(context.Background())
	if err != nil {
		rep = sandbox.Report{Exec: "no render worker: " + err.Error(), Network: "no render worker", FS: "no render worker"}
	}
	v.Sandbox = &rep
	if o.structured() {
		err = o.write(env.stdout, v)
	} else {
		err = v.writeText(env.stdout)
	}
	if err != nil {
		return env.errorf("write version: %v", err)
	}
	return exitOK
}
