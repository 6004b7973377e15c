package actions

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// FileConflict is one file a three-way merge could not settle: the lines
// of the branch's version where both sides changed the same text, or why the
// whole file conflicts.
type FileConflict struct {
	Path string `json:"path"`
	// Lines are 1-based inclusive ranges in the branch head's version.
	Lines [][2]int `json:"lines,omitempty"`
	// Why is set when the whole file conflicts (deleted on one side and
	// changed on the other, binary, added twice).
	Why string `json:"why,omitempty"`
}

// ConflictError says a change cannot be applied on the branch head without
// a person resolving conflicts; nothing was committed.
type ConflictError struct {
	What  string
	Files []FileConflict
}

// Error names the conflicting files and lines.
func (e *ConflictError) Error() string {
	var parts []string
	for _, f := range e.Files {
		switch {
		case f.Why != "":
			parts = append(parts, fmt.Sprintf("%s (%s)", f.Path, f.Why))
		default:
			var rs []string
			for _, l := range f.Lines {
				if l[0] == l[1] {
					rs = append(rs, fmt.Sprintf("%d", l[0]))
				} else {
					rs = append(rs, fmt.Sprintf("%d-%d", l[0], l[1]))
				}
			}
			parts = append(parts, fmt.Sprintf("%s lines %s", f.Path, strings.Join(rs, ",")))
		}
	}
	return fmt.Sprintf("%s conflicts with later changes on the branch: %s; nothing was committed", e.What, strings.Join(parts, "; "))
}

// mergeTrees applies the change from base to theirs onto ours, file by file
// and line by line (the way `git revert` and `git cherry-pick` do with
// base/ours/theirs), following renames on either side. It returns the
// merged tree or the conflicting files.
func mergeTrees(s storer.EncodedObjectStorer, base, ours, theirs flatTree) (flatTree, []FileConflict, error) {
	out := flatTree{}
	for p, e := range ours {
		out[p] = e
	}
	renames, err := findRenames(s, base, theirs)
	if err != nil {
		return nil, nil, err
	}
	var conflicts []FileConflict
	handled := map[string]bool{}
	// A file base->theirs renamed from `from` to `to`, which ours still has
	// at `from` and changed there: merge its content into `to`.
	for from, to := range renames {
		b, okB := base[from]
		o, okO := ours[from]
		t := theirs[to]
		if !okB || !okO || o == b {
			continue
		}
		if _, taken := ours[to]; taken {
			continue
		}
		handled[from], handled[to] = true, true
		merged, conf, err := mergeFile(s, to, b, o, t)
		if err != nil {
			return nil, nil, err
		}
		if conf != nil {
			conf.Path = from
			conflicts = append(conflicts, *conf)
			continue
		}
		delete(out, from)
		out[to] = merged
	}
	// A file the branch renamed from `from` to `to` since base, which
	// theirs changed at `from`: merge the change into `to`.
	oursRenames, err := findRenames(s, base, ours)
	if err != nil {
		return nil, nil, err
	}
	for from, to := range oursRenames {
		b := base[from]
		t, okT := theirs[from]
		if handled[from] || handled[to] || !okT || t == b {
			continue
		}
		if _, taken := theirs[to]; taken {
			continue
		}
		handled[from], handled[to] = true, true
		merged, conf, err := mergeFile(s, to, b, ours[to], t)
		if err != nil {
			return nil, nil, err
		}
		if conf != nil {
			conflicts = append(conflicts, *conf)
			continue
		}
		out[to] = merged
	}
	paths := map[string]bool{}
	for _, t := range []flatTree{base, ours, theirs} {
		for p := range t {
			paths[p] = true
		}
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		if !handled[p] {
			sorted = append(sorted, p)
		}
	}
	sort.Strings(sorted)
	for _, p := range sorted {
		b, okB := base[p]
		o, okO := ours[p]
		t, okT := theirs[p]
		switch {
		case okO == okT && o == t:
			// both sides agree
		case okB == okO && b == o:
			if okT {
				out[p] = t
			} else {
				delete(out, p)
			}
		case okB == okT && b == t:
			// only ours changed it
		case !okB:
			conflicts = append(conflicts, FileConflict{Path: p, Why: "added on both sides with different content"})
		case !okO:
			conflicts = append(conflicts, FileConflict{Path: p, Why: "deleted on the branch but changed by the commit"})
		case !okT:
			conflicts = append(conflicts, FileConflict{Path: p, Why: "changed on the branch but the change removes the file"})
		default:
			merged, conf, err := mergeFile(s, p, b, o, t)
			if err != nil {
				return nil, nil, err
			}
			if conf != nil {
				conflicts = append(conflicts, *conf)
				continue
			}
			out[p] = merged
		}
	}
	if len(conflicts) > 0 {
		sort.Slice(conflicts, func(i, j int) bool { return conflicts[i].Path < conflicts[j].Path })
		return nil, conflicts, nil
	}
	return out, nil, nil
}

func isRegular(m filemode.FileMode) bool {
	return m == filemode.Regular || m == filemode.Executable || m == filemode.Deprecated
}

// mergeFile merges one file's content and mode.
func mergeFile(s storer.EncodedObjectStorer, p string, b, o, t entry) (entry, *FileConflict, error) {
	mode := o.Mode
	switch {
	case o.Mode == b.Mode:
		mode = t.Mode
	case t.Mode != b.Mode && t.Mode != o.Mode:
		return entry{}, &FileConflict{Path: p, Why: "file mode changed differently on both sides"}, nil
	}
	if b.Hash == o.Hash {
		return entry{Hash: t.Hash, Mode: mode}, nil, nil
	}
	if b.Hash == t.Hash || o.Hash == t.Hash {
		return entry{Hash: o.Hash, Mode: mode}, nil, nil
	}
	if !isRegular(b.Mode) || !isRegular(o.Mode) || !isRegular(t.Mode) {
		return entry{}, &FileConflict{Path: p, Why: "not a regular file on every side"}, nil
	}
	var texts [3][]byte
	for i, h := range []entry{b, o, t} {
		data, err := readBlob(s, h.Hash)
		if err != nil {
			return entry{}, nil, err
		}
		if bytes.IndexByte(data, 0) >= 0 {
			return entry{}, &FileConflict{Path: p, Why: "binary file changed on both sides"}, nil
		}
		texts[i] = data
	}
	merged, conf := merge3(texts[0], texts[1], texts[2])
	if len(conf) > 0 {
		fc := &FileConflict{Path: p}
		for _, c := range conf {
			fc.Lines = append(fc.Lines, [2]int{c.OursStart, c.OursEnd})
		}
		return entry{}, fc, nil
	}
	h, err := writeBlob(s, merged)
	if err != nil {
		return entry{}, nil, err
	}
	return entry{Hash: h, Mode: mode}, nil, nil
}

// findRenames pairs files that left base with files that appeared in
// theirs: same content first, then the most similar text at 50% or more
// of lines in common (git's default rename threshold).
func findRenames(s storer.EncodedObjectStorer, base, theirs flatTree) (map[string]string, error) {
	var gone, added []string
	for p := range base {
		if _, ok := theirs[p]; !ok {
			gone = append(gone, p)
		}
	}
	for p := range theirs {
		if _, ok := base[p]; !ok {
			added = append(added, p)
		}
	}
	sort.Strings(gone)
	sort.Strings(added)
	out := map[string]string{}
	used := map[string]bool{}
	for _, g := range gone {
		for _, a := range added {
			if !used[a] && base[g].Hash == theirs[a].Hash {
				out[g], used[a] = a, true
				break
			}
		}
	}
	if len(gone)*len(added) > 10000 {
		return out, nil
	}
	for _, g := range gone {
		if _, done := out[g]; done || !isRegular(base[g].Mode) {
			continue
		}
		gd, err := readBlob(s, base[g].Hash)
		if err != nil {
			return nil, err
		}
		best, bestScore := "", 0.0
		for _, a := range added {
			if used[a] || !isRegular(theirs[a].Mode) {
				continue
			}
			ad, err := readBlob(s, theirs[a].Hash)
			if err != nil {
				return nil, err
			}
			if sc := similarity(gd, ad); sc >= 0.5 && sc > bestScore {
				best, bestScore = a, sc
			}
		}
		if best != "" {
			out[g], used[best] = best, true
		}
	}
	return out, nil
}

// similarity is the share of lines two texts have in common.
func similarity(a, b []byte) float64 {
	al, bl := splitLines(a), splitLines(b)
	if len(al) == 0 && len(bl) == 0 {
		return 1
	}
	common := 0
	for _, h := range diffLines(al, bl) {
		common -= h.A1 - h.A0
	}
	common += len(al)
	return float64(common) / float64(max(len(al), len(bl)))
}
