package forge

import (
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"kdrift.dev/kdrift/internal/gitobj"
)

// maxAppFiles bounds how many files under an App's path are matched
// against CODEOWNERS (a repository is hostile input).
const maxAppFiles = 5000

// OwnersOf is every owner of any of the paths, in any section (optional
// ones too), sorted and once each: who owns them, as a view shows it.
func (c *Codeowners) OwnersOf(paths []string) []string {
	set := map[string]bool{}
	for _, p := range paths {
		for _, o := range c.Owners(p) {
			for _, who := range o.Owners {
				set[who] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for o := range set {
		out = append(out, o)
	}
	sort.Strings(out)
	return out
}

// AppFiles are the files that make an App at a commit: its App file and
// every file under its path (at most 5000), "/"-separated from the root.
func AppFiles(repo *git.Repository, commit plumbing.Hash, appFile, appPath string) ([]string, error) {
	c, err := headerCommit(repo, commit)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", commit, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("commit %s tree: %w", commit, err)
	}
	var out []string
	if appFile != "" {
		out = append(out, appFile)
	}
	dir := strings.Trim(path.Clean("/"+appPath), "/")
	sub := tree
	if dir != "" {
		if sub, err = tree.Tree(dir); err != nil {
			// A path that is a file, or absent at this commit.
			if _, ferr := tree.File(dir); ferr == nil {
				return append(out, dir), nil
			}
			return out, nil
		}
	}
	walker := object.NewTreeWalker(sub, true, nil)
	defer walker.Close()
	for len(out) < maxAppFiles {
		name, entry, err := walker.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s at %s: %w", appPath, commit.String()[:12], err)
		}
		if !entry.Mode.IsFile() {
			continue
		}
		if dir != "" {
			name = dir + "/" + name
		}
		out = append(out, name)
	}
	return out, nil
}

// AppOwners is who owns an App's files at a commit per the CODEOWNERS
// there; nil (and no error) when the commit has none.
func AppOwners(repo *git.Repository, commit plumbing.Hash, appFile, appPath string) ([]string, error) {
	co, err := CodeownersAt(repo, commit)
	if err != nil || co == nil {
		return nil, err
	}
	files, err := AppFiles(repo, commit, appFile, appPath)
	if err != nil {
		return nil, err
	}
	return co.OwnersOf(files), nil
}

// headerCommit reads commit h bounded (gitobj.Commit): one past the bound
// comes with its header only, which holds the tree and parents these
// readers need.
func headerCommit(repo *git.Repository, h plumbing.Hash) (*object.Commit, error) {
	c, err := gitobj.Commit(repo.Storer, h)
	if tl := (*gitobj.TooLargeError)(nil); errors.As(err, &tl) {
		return c, nil
	}
	return c, err
}
