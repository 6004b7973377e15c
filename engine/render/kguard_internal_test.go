package render

import (
	"encoding/json"
	"io/fs"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"kdrift.dev/kdrift/engine/render/sandbox"
)

// FuzzGuardCoversKustomizeGit compares the guard with kustomize itself:
// for a generated resources entry, with a same-named folder beside it,
// kustomize builds with an empty PATH, so that when it decides the entry is
// a Git repository it stops at looking git up (nothing can run). Whenever
// it got that far, the guard must have called the entry remote.
func FuzzGuardCoversKustomizeGit(f *testing.F) {
	f.Setenv("PATH", f.TempDir())
	for _, seed := range []string{
		"u@h/o/r?x&ref=--upload-pack%3Dtouch%20%2Ftmp%2Fpwned%3B",
		"user@host/path", "u@h/o/r?timeout=1&ref=%2D%2Dupload-pack", "git@h:o/r", "git::u@h/o/r?ref=x",
		"h.example/o/r.git", "ssh://h/o/r", "file:///tmp//?ref=x", "https://h/o/r//d?ref=v1",
		"base", "../base", "a/b.yaml", "u@h", "h/o/_git/r", "gh:o/r", "o/r.git?ref=x", "x?ref=y",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, entry string) {
		if strings.ContainsAny(entry, "\x00\n\r") || len(entry) > 200 {
			return
		}
		quoted, _ := json.Marshal(entry)
		fsys := filesys.MakeFsInMemory()
		files := map[string]string{"/k/kustomization.yaml": "resources:\n- " + string(quoted) + "\n"}
		if p := strings.Trim(entry, "/"); fs.ValidPath(p) && !strings.Contains(entry, "..") {
			files["/k/"+p+"/kustomization.yaml"] = "resources: []\n"
		}
		for name, body := range files {
			if err := fsys.WriteFile(name, []byte(body)); err != nil {
				return // a name the in-memory file system cannot hold
			}
		}
		_, err := krusty.MakeKustomizer(sandbox.KustomizeOptions()).Run(fsys, "/k")
		if err != nil && strings.Contains(err.Error(), "no 'git' program on path") && !remote(entry) {
			t.Fatalf("kustomize reads %q as a Git repository, and the guard let it through", entry)
		}
	})
}
