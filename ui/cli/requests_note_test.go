package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kdrift.dev/kdrift/internal/gittest"
)

// TestPullRequestNoteOnlyWhenAsked: a repository whose remote is a local
// path (no forge) gets no "pull requests not shown" note on every
// command; a forge flag asks for pull requests, and then the note says
// why there are none.
func TestPullRequestNoteOnlyWhenAsked(t *testing.T) {
	t.Setenv("KDRIFT_FORGE_TOKEN", "")
	bare := gittest.InitBare(t)
	w := gittest.Init(t)
	w.Commit("first", map[string]string{"README.md": "hi\n"})
	w.Git("remote", "add", "origin", bare.Dir)
	w.Git("push", "-q", "-u", "origin", "main")
	g := &globalFlags{repo: w.Dir}
	if prs, note := openRequests(context.Background(), g, &forgeFlags{}); note != "" || prs != nil {
		t.Fatalf("not asked for, got note %q", note)
	}
	if _, note := uiForge(g, &forgeFlags{}); note != "" {
		t.Fatalf("the UI notes %q", note)
	}
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, note := openRequests(context.Background(), g, &forgeFlags{tokenFile: tok}); !strings.Contains(note, "pull requests not shown: remote") || !strings.Contains(note, "is not a repository on a forge") {
		t.Fatalf("asked for with --forge-token-file, got note %q", note)
	}
}
