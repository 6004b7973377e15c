package report

import (
	"fmt"
	"io"
	"strings"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/internal/termsafe"
)

// NoAppsDoc is why no app was found, in StatusDoc: the reasons and the
// next steps as lines, and the engine's typed account under them.
type NoAppsDoc struct {
	// Why are the reasons, one a line.
	Why []string `json:"why"`
	// Next are what to do next, one a line.
	Next []string `json:"next"`
	// Detail is the engine's account the lines are made from.
	Detail *engine.NoApps `json:"detail"`
}

// NoApps is n as lines for StatusDoc; nil when n is (an app was found).
func NoApps(n *engine.NoApps) *NoAppsDoc {
	if n == nil {
		return nil
	}
	return &NoAppsDoc{Why: noAppsWhy(n), Next: noAppsNext(n), Detail: n}
}

// WriteNoApps writes why no app was found and what to do next, each
// line made terminal-safe; nothing when d is nil.
func WriteNoApps(w io.Writer, d *NoAppsDoc) error {
	if d == nil {
		return nil
	}
	var b strings.Builder
	b.WriteString("\nno app found:\n")
	for _, l := range d.Why {
		b.WriteString("  - " + termsafe.Line(l) + "\n")
	}
	b.WriteString("what to do:\n")
	for _, l := range d.Next {
		b.WriteString("  " + termsafe.Line(l) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// noAppsWhy are the reasons no app was found.
func noAppsWhy(n *engine.NoApps) []string {
	var out []string
	if n.AppDir {
		out = append(out, fmt.Sprintf("no App file: .kdrift/ at %s holds no *.yaml App", n.Revision))
	} else {
		out = append(out, fmt.Sprintf("no App file: %s has no .kdrift/ folder at the repository root", n.Revision))
	}
	switch {
	case n.FluxDeclared > 0 && n.FluxFolder != "":
		out = append(out, fmt.Sprintf("Git declares %d Flux Kustomizations, none in the cluster folder %s", n.FluxDeclared, n.FluxFolder))
	case n.FluxDeclared > 0:
		out = append(out, fmt.Sprintf("Git declares %d Flux Kustomizations, but no cluster folder was chosen", n.FluxDeclared))
	default:
		out = append(out, "no Argo CD Application or Flux Kustomization declared in Git")
	}
	out = append(out, liveLines("Argo CD Application", n.Applications)...)
	out = append(out, liveLines("Flux Kustomization", n.Kustomizations)...)
	if n.Note != "" {
		out = append(out, n.Note)
	}
	return out
}

// liveLines say what the cluster runs of one kind: those that read
// other repositories, named, and those that read this one yet are no
// app.
func liveLines(kind string, l *engine.LiveElsewhere) []string {
	if l == nil || l.Total == 0 {
		return nil
	}
	where := "the current context"
	if l.Context != "" {
		where = "context " + l.Context
	}
	var out []string
	if l.Others > 0 {
		out = append(out, fmt.Sprintf("%s: %s of other repositories: %s", where, plural(l.Others, "live "+kind), refs(l.Named, l.Others)))
	}
	if l.Ours > 0 {
		out = append(out, fmt.Sprintf("%s: %s of this repository that no declaration in Git gives: %s", where, plural(l.Ours, "live "+kind), refs(l.OursNamed, l.Ours)))
	}
	return out
}

// refs names the first few live objects and counts the rest.
func refs(named []engine.LiveRef, total int) string {
	parts := make([]string, 0, len(named)+1)
	for _, r := range named {
		src := r.URL
		if src == "" {
			src = "no Git repository"
		}
		if r.Path != "" {
			src += " " + r.Path
		}
		parts = append(parts, r.Name+" ("+src+")")
	}
	if more := total - len(named); more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(parts, ", ")
}

// plural is "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// noAppsNext are what to do next: an App file, with the folder a live
// object of this repository reads when there is one; a cluster folder;
// the repository the live objects read.
func noAppsNext(n *engine.NoApps) []string {
	path := "deploy/overlays/prod"
	if k := n.Kustomizations; k != nil && len(k.OursNamed) > 0 && k.OursNamed[0].Path != "" {
		path = strings.TrimPrefix(k.OursNamed[0].Path, "./")
	}
	out := []string{
		"write an App file for each folder kustomize, Helm or plain YAML renders, e.g. .kdrift/my-app.yaml:",
		"    apiVersion: kdrift.dev/v1alpha1",
		"    kind: App",
		"    metadata:",
		"      name: my-app",
		"    spec:",
		"      path: " + path,
		"      destination:",
		"        namespace: my-app",
		"  then commit and push it (see README, The App)",
	}
	if n.FluxDeclared > 0 {
		line := "or name the Flux cluster folder with --cluster-path"
		if len(n.FluxCandidates) > 0 {
			line += " (one of: " + strings.Join(n.FluxCandidates, ", ") + ")"
		}
		out = append(out, line)
	}
	if (n.Applications != nil && n.Applications.Others > 0) || (n.Kustomizations != nil && n.Kustomizations.Others > 0) {
		out = append(out, "or run kdrift in a clone of the repository the live objects above read (--repo)")
	}
	return out
}
