package forge

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
)

// TestAppOwnersAtRevision commits a CODEOWNERS file and an App with git,
// and reads who owns the App's files at that commit (last match wins).
func TestAppOwnersAtRevision(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		".github/CODEOWNERS":     "* @root\n/deploy/ @ops\n/deploy/shop/*.yaml @shop-team\n",
		".kdrift/shop.yaml":      "kind: App\n",
		"deploy/shop/d.yaml":     "a: 1\n",
		"deploy/shop/sub/c.json": "{}\n",
		"deploy/other/x.yaml":    "b: 2\n",
	}
	for p, c := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-qm", "x"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := repo.Head()
	owners, err := AppOwners(repo, head.Hash(), ".kdrift/shop.yaml", "deploy/shop")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(owners, ","); got != "@ops,@root,@shop-team" {
		t.Errorf("owners = %s, want @ops (deploy/shop/sub), @root (the App file), @shop-team", got)
	}
	files2, _ := AppFiles(repo, head.Hash(), "", "deploy/shop/../shop")
	if strings.Join(files2, ",") != "deploy/shop/d.yaml,deploy/shop/sub/c.json" {
		t.Errorf("AppFiles = %v", files2)
	}
	if o, err := AppOwners(repo, head.Hash(), "", "does/not/exist"); err != nil || len(o) != 0 {
		t.Errorf("absent path: %v %v", o, err)
	}
}
