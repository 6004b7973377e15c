package ui

import (
	"strconv"
	"strings"

	"kdrift.dev/kdrift/engine/forge"
	"kdrift.dev/kdrift/engine/status"
)

// Forge is what the app view shows from the repository's forge and its
// CODEOWNERS. Either function may be nil: then the view says nothing of
// it. Neither may block on the network: Requests answers from a cache and
// asks the forge in the background.
type Forge struct {
	// Requests are kdrift's open pull requests, as last known; known is
	// false until the forge first answered.
	Requests func() (prs []forge.PullRequest, err error, known bool)
	// CodeOwners are who owns the App's files (its App file and every
	// file under its path) at the revision, per CODEOWNERS there; nil
	// when the revision has no CODEOWNERS.
	CodeOwners func(a status.AppStatus) ([]string, error)
}

// forgeLines are the app view's lines about the forge: the App's open
// requests (or a one-line note when the forge failed) and its code
// owners.
func forgeLines(c *common, a status.AppStatus, w int) []string {
	s := c.styles
	var out []string
	if f := c.forge.Requests; f != nil {
		prs, err, known := f()
		switch {
		case err != nil:
			out = append(out, s.Muted.Render(cut("pull requests: "+oneLine(err.Error()), w)))
		case known:
			for _, p := range forge.ByApp(prs)[a.Name] {
				line := "⇄ pull request #" + strconv.Itoa(p.Number) + " (" + p.State
				if p.Review != "" {
					line += ", " + p.Review
				}
				out = append(out, s.Info.Render(cut(line+") "+p.URL, w)))
			}
		}
	}
	if f := c.forge.CodeOwners; f != nil && a.Revision != "" {
		owners, err := f(a)
		switch {
		case err != nil:
			out = append(out, s.Muted.Render(cut("code owners: "+oneLine(err.Error()), w)))
		case len(owners) > 0:
			out = append(out, s.Muted.Render(cut("code owners: "+strings.Join(owners, ", "), w)))
		}
	}
	return out
}

func oneLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
