package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/gitobj"
)

// History lists, newest first, up to limit commits (0: all) of the branch
// that changed the app's path, its App file or one of the inputs (more
// folders its render reads: an overlay's bases), with kdrift's action,
// apps and reason read back from the trailers of the commits kdrift made.
func History(ctx context.Context, repo *Repo, appName string, limit int, inputs ...string) ([]status.Commit, error) {
	repo.mu.Lock()
	defer repo.mu.Unlock()
	if err := repo.refreshCache(ctx); err != nil {
		return nil, err
	}
	head, err := repo.head()
	if err != nil {
		return nil, err
	}
	snap, err := repo.snapshotAt(head)
	if err != nil {
		return nil, err
	}
	a, err := loadApp(snap, appName)
	if err != nil {
		return nil, err
	}
	var watch []string
	if a.Spec.Path != "" {
		watch = append(watch, path.Clean(a.Spec.Path))
	}
	for _, in := range inputs {
		if in = path.Clean(in); in != "." && !slices.Contains(watch, in) {
			watch = append(watch, in)
		}
	}
	var out []status.Commit
	// Each commit is bounded from its header (gitobj.Walk): one past the
	// bound is listed with its tree's changes and, for a subject, why its
	// message was not read.
	err = gitobj.Walk(repo.git.Storer, head, func(c *object.Commit, tooLarge error) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		m := parseMessage(c.Message)
		touched := slices.Contains(m.trailerValues(TrailerApp), appName)
		if !touched {
			if touched, err = touches(repo.git.Storer, c, watch, a.File, appName); err != nil {
				return err
			}
		}
		if !touched {
			return nil
		}
		sc := status.Commit{
			Hash: c.Hash.String(), Author: c.Author.Name, Email: c.Author.Email, Time: c.Author.When,
			Subject: m.Subject, Body: m.Body,
		}
		if tooLarge != nil {
			sc.Subject = "(not read: " + tooLarge.Error() + ")"
		}
		if action := m.trailer(TrailerAction); action != "" {
			sc.Action, sc.Apps, sc.Reason = action, m.trailerValues(TrailerApp), m.reason()
		}
		out = append(out, sc)
		if limit > 0 && len(out) >= limit {
			return storer.ErrStop
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("App %s: history read failed: %w", appName, err)
	}
	return out, nil
}

// touches says whether c changed any of the paths (files or folders), or
// the App document named appName in appFile, compared with its first parent
// (or, for a root commit, added them).
func touches(s storer.EncodedObjectStorer, c *object.Commit, paths []string, appFile, appName string) (bool, error) {
	tree, err := c.Tree()
	if err != nil {
		return false, err
	}
	var parent *object.Tree
	if c.NumParents() > 0 {
		// Only the parent's tree is needed: its header is enough.
		pc, err := gitobj.Commit(s, c.ParentHashes[0])
		if tl := (*gitobj.TooLargeError)(nil); err != nil && !errors.As(err, &tl) {
			return false, err
		}
		if parent, err = pc.Tree(); err != nil {
			return false, err
		}
	}
	for _, p := range paths {
		now, err := entryHash(tree, p)
		if err != nil {
			return false, err
		}
		var before plumbing.Hash
		if parent != nil {
			if before, err = entryHash(parent, p); err != nil {
				return false, err
			}
		}
		if now != before {
			return true, nil
		}
	}
	now, err := entryHash(tree, appFile)
	if err != nil {
		return false, err
	}
	var before plumbing.Hash
	if parent != nil {
		if before, err = entryHash(parent, appFile); err != nil {
			return false, err
		}
	}
	if now == before {
		return false, nil
	}
	// The file changed: did this App's document change? Other Apps may
	// share the file. A version that does not parse counts as a change.
	a, err := appDocJSON(s, now, appFile, appName)
	if err != nil {
		return true, nil
	}
	b, err := appDocJSON(s, before, appFile, appName)
	if err != nil {
		return true, nil
	}
	return !bytes.Equal(a, b), nil
}

// appDocJSON is the App named name in the blob of file, as JSON (nil when
// absent); an error means that App does not parse.
func appDocJSON(s storer.EncodedObjectStorer, blob plumbing.Hash, file, name string) ([]byte, error) {
	if blob.IsZero() {
		return nil, nil
	}
	data, err := readBlob(s, blob)
	if err != nil {
		return nil, err
	}
	apps, err := parseApps(file, data)
	for _, a := range apps {
		if a.Metadata.Name == name {
			return json.Marshal(a)
		}
	}
	return nil, err
}

// entryHash is the hash of the file or folder at p in t; zero when absent.
func entryHash(t *object.Tree, p string) (plumbing.Hash, error) {
	if p == "." || p == "" {
		return t.Hash, nil
	}
	e, err := t.FindEntry(p)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return e.Hash, nil
}
