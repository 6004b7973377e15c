package actions

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lines makes a file of n numbered lines, with the given lines replaced.
func lines(n int, repl map[int]string) string {
	var sb strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := repl[i]; ok {
			sb.WriteString(s + "\n")
		} else {
			fmt.Fprintf(&sb, "line %d\n", i)
		}
	}
	return sb.String()
}

type revertCase struct {
	name string
	// setup makes commits in dir on top of the base and returns the
	// revision to revert.
	setup    func(t *testing.T, dir string) string
	mainline int
	conflict string // a file the conflict must name
}

func commitAll(t *testing.T, dir, msg string) {
	t.Helper()
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", msg)
}

var revertCases = []revertCase{
	{name: "added file", setup: func(t *testing.T, d string) string {
		writeFile(t, d, "deploy/prod/new.yaml", "kind: ConfigMap\n")
		commitAll(t, d, "add config")
		return "HEAD"
	}},
	{name: "modified file", setup: func(t *testing.T, d string) string {
		writeFile(t, d, "deploy/prod/big.yaml", lines(20, map[int]string{5: "replicas: 12"}))
		commitAll(t, d, "scale")
		return "HEAD"
	}},
	{name: "deleted file", setup: func(t *testing.T, d string) string {
		gitRun(t, d, "rm", "-q", "deploy/prod/big.yaml")
		commitAll(t, d, "drop big")
		return "HEAD"
	}},
	{name: "renamed file", setup: func(t *testing.T, d string) string {
		gitRun(t, d, "mv", "deploy/prod/big.yaml", "deploy/prod/renamed.yaml")
		commitAll(t, d, "rename")
		return "HEAD"
	}},
	{name: "renamed then edited after", setup: func(t *testing.T, d string) string {
		gitRun(t, d, "mv", "deploy/prod/big.yaml", "deploy/prod/renamed.yaml")
		commitAll(t, d, "rename")
		writeFile(t, d, "deploy/prod/renamed.yaml", lines(20, map[int]string{18: "edited later"}))
		commitAll(t, d, "edit renamed")
		return "HEAD~1"
	}},
	{name: "renamed on the branch after", setup: func(t *testing.T, d string) string {
		writeFile(t, d, "deploy/prod/big.yaml", lines(20, map[int]string{3: "changed three"}))
		commitAll(t, d, "change three")
		gitRun(t, d, "mv", "deploy/prod/big.yaml", "deploy/prod/moved.yaml")
		commitAll(t, d, "move big")
		return "HEAD~1"
	}},
	{name: "several files", setup: func(t *testing.T, d string) string {
		writeFile(t, d, "deploy/prod/big.yaml", lines(20, map[int]string{1: "first"}))
		writeFile(t, d, "deploy/api/deployment.yaml", "kind: Deployment\nmetadata:\n  name: api-v2\n")
		writeFile(t, d, "docs/new.md", "new doc\n")
		gitRun(t, d, "rm", "-q", "README.md")
		commitAll(t, d, "several")
		return "HEAD"
	}},
	{name: "edited after in other lines", setup: func(t *testing.T, d string) string {
		writeFile(t, d, "deploy/prod/big.yaml", lines(20, map[int]string{3: "changed three"}))
		commitAll(t, d, "change three")
		writeFile(t, d, "deploy/prod/big.yaml", lines(20, map[int]string{3: "changed three", 15: "changed fifteen"}))
		writeFile(t, d, "other.txt", "x\n")
		commitAll(t, d, "change fifteen")
		return "HEAD~1"
	}},
	{name: "executable bit", setup: func(t *testing.T, d string) string {
		if err := os.Chmod(filepath.Join(d, "deploy/prod/big.yaml"), 0o755); err != nil {
			t.Fatal(err)
		}
		commitAll(t, d, "chmod")
		return "HEAD"
	}},
	{name: "merge commit mainline 1", mainline: 1, setup: func(t *testing.T, d string) string {
		gitRun(t, d, "checkout", "-q", "-b", "feature")
		writeFile(t, d, "deploy/prod/feature.yaml", "kind: Secret\n")
		writeFile(t, d, "deploy/prod/big.yaml", lines(20, map[int]string{19: "feature line"}))
		commitAll(t, d, "feature")
		gitRun(t, d, "checkout", "-q", "main")
		writeFile(t, d, "deploy/prod/big.yaml", lines(20, map[int]string{2: "main line"}))
		commitAll(t, d, "main work")
		gitRun(t, d, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
		return "HEAD"
	}},
	{name: "merge commit mainline 2", mainline: 2, setup: func(t *testing.T, d string) string {
		gitRun(t, d, "checkout", "-q", "-b", "feature")
		writeFile(t, d, "deploy/prod/feature.yaml", "kind: Secret\n")
		commitAll(t, d, "feature")
		gitRun(t, d, "checkout", "-q", "main")
		writeFile(t, d, "deploy/prod/big.yaml", lines(20, map[int]string{2: "main line"}))
		commitAll(t, d, "main work")
		gitRun(t, d, "merge", "-q", "--no-ff", "-m", "merge feature", "feature")
		return "HEAD"
	}},
	{name: "conflict: same line edited after", conflict: "deploy/prod/big.yaml", setup: func(t *testing.T, d string) string {
		writeFile(t, d, "deploy/prod/big.yaml", lines(20, map[int]string{5: "replicas: 12"}))
		commitAll(t, d, "scale to 12")
		writeFile(t, d, "deploy/prod/big.yaml", lines(20, map[int]string{5: "replicas: 20"}))
		commitAll(t, d, "scale to 20")
		return "HEAD~1"
	}},
	{name: "conflict: deleted after modify", conflict: "deploy/prod/big.yaml", setup: func(t *testing.T, d string) string {
		writeFile(t, d, "deploy/prod/big.yaml", lines(20, map[int]string{5: "replicas: 12"}))
		commitAll(t, d, "scale to 12")
		gitRun(t, d, "rm", "-q", "deploy/prod/big.yaml")
		commitAll(t, d, "delete")
		return "HEAD~1"
	}},
}

// TestRevertMatchesGitRevert checks, case by case, that kdrift's revert
// commit has the tree `git revert --no-edit` makes in a twin repository,
// and that a conflicting revert is refused with nothing changed.
func TestRevertMatchesGitRevert(t *testing.T) {
	isolate(t)
	for _, c := range revertCases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "repo")
			gitRun(t, root, "init", "-q", "-b", "main", dir)
			writeFile(t, dir, ".kdrift/apps.yaml", fixtureApps)
			writeFile(t, dir, "deploy/prod/big.yaml", lines(20, nil))
			writeFile(t, dir, "deploy/api/deployment.yaml", "kind: Deployment\nmetadata:\n  name: api\n")
			writeFile(t, dir, "README.md", "demo\n")
			commitAll(t, dir, "base")
			rev := gitRun(t, dir, "rev-parse", c.setup(t, dir))
			twin := filepath.Join(root, "twin")
			gitRun(t, root, "clone", "-q", dir, twin)
			args := []string{"revert", "--no-edit"}
			if c.mainline > 0 {
				args = append(args, "-m", fmt.Sprint(c.mainline))
			}
			_, gitErr := gitTry(twin, append(args, rev)...)

			r := openRepo(t, dir, newClock())
			head := gitRun(t, dir, "rev-parse", "HEAD")
			req := RevertRequest{Commit: rev[:10], Mainline: c.mainline, Reason: "INC-9 roll back " + c.name}
			preview, previewErr := r.RevertPreview(context.Background(), req)
			res, err := r.Revert(context.Background(), req)
			if c.conflict != "" {
				if gitErr == nil {
					t.Fatal("git reverted cleanly; the case is wrong")
				}
				if err == nil || !IsConflict(err) || !strings.Contains(err.Error(), c.conflict) || !strings.Contains(err.Error(), "nothing was committed") {
					t.Fatalf("conflict not refused: %v", err)
				}
				if !IsConflict(previewErr) {
					t.Fatalf("preview of a conflict: %v", previewErr)
				}
				if got := gitRun(t, dir, "rev-parse", "HEAD"); got != head {
					t.Fatal("HEAD moved")
				}
				if st := gitRun(t, dir, "status", "--porcelain"); st != "" {
					t.Fatalf("working tree changed: %q", st)
				}
				return
			}
			if gitErr != nil {
				t.Fatalf("git revert failed: %v", gitErr)
			}
			if err != nil {
				t.Fatal(err)
			}
			if previewErr != nil || len(preview.Files) == 0 || preview.Head != head {
				t.Fatalf("preview: %v %v", preview, previewErr)
			}
			want := gitRun(t, twin, "rev-parse", "HEAD^{tree}")
			if preview.Tree != want {
				t.Fatalf("preview stored tree %s, git revert made %s", preview.Tree, want)
			}
			if got := gitRun(t, dir, "rev-parse", "HEAD^{tree}"); got != want {
				t.Fatalf("tree %s, git revert made %s\n%s", got, want, gitRun(t, dir, "diff", "--stat", want, "HEAD^{tree}"))
			}
			if res.Commit != gitRun(t, dir, "rev-parse", "HEAD") || gitRun(t, dir, "rev-parse", "HEAD~1") != head {
				t.Fatal("revert is not one commit on the branch head")
			}
			subject := gitRun(t, twin, "log", "-1", "--format=%s")
			if got := gitRun(t, dir, "log", "-1", "--format=%s"); got != subject {
				t.Fatalf("subject %q, git's %q", got, subject)
			}
			body := gitRun(t, dir, "log", "-1", "--format=%b")
			if !strings.HasPrefix(body, "This reverts commit "+rev+".\n\nINC-9 roll back") || !strings.Contains(body, "Kdrift-Action: revert\nKdrift-Revert-Of: "+rev) {
				t.Fatalf("body:\n%s", body)
			}
			if st := gitRun(t, dir, "status", "--porcelain"); st != "" {
				t.Fatalf("working tree not updated: %q", st)
			}
			fsckClean(t, dir)
		})
	}
}

func TestRevertNamesTouchedApps(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	dir := cloneOf(t, remote)
	writeFile(t, dir, "deploy/prod/deployment.yaml", "kind: Deployment\nmetadata:\n  name: render\nspec:\n  replicas: 1\n")
	commitAll(t, dir, "oops: scale render to 1")
	gitRun(t, dir, "push", "-q")
	r := openRepo(t, dir, newClock())
	bad := gitRun(t, dir, "rev-parse", "HEAD")
	res, err := r.Revert(context.Background(), RevertRequest{Commit: bad, Reason: "INC-77 render at 1 replica"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Pushed || strings.Join(res.Apps, ",") != "render-prod" {
		t.Fatalf("result %+v", res)
	}
	if tr := gitRun(t, remote, "log", "-1", "--format=%(trailers:key=Kdrift-App,valueonly)"); tr != "render-prod" {
		t.Fatalf("trailer %q", tr)
	}
	if _, err := r.Revert(context.Background(), RevertRequest{Commit: bad, Reason: "again"}); err == nil || !strings.Contains(err.Error(), "changes nothing") {
		t.Fatalf("second revert: %v", err)
	}
	if _, err := r.Revert(context.Background(), RevertRequest{Commit: bad, Reason: "x", Mainline: 1}); err == nil || !strings.Contains(err.Error(), "not a merge") {
		t.Fatalf("mainline on a plain commit: %v", err)
	}
}
