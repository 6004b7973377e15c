package forge

import (
	"bufio"
	"bytes"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// CodeownersPaths are where a CODEOWNERS file is looked for, in the order
// the forges look: the first that exists at the revision is the file.
var CodeownersPaths = []string{".github/CODEOWNERS", ".gitlab/CODEOWNERS", ".gitea/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"}

// Bounds on a CODEOWNERS file, which anyone who can commit writes:
// GitHub ignores files over 3 MB; a rule's pattern or a path longer than
// these is refused rather than matched.
const (
	MaxCodeownersSize = 3 << 20
	maxPatternLen     = 1024
	maxPathLen        = 4096
	maxOwnersPerRule  = 200
)

// Codeowners is a parsed CODEOWNERS file in GitHub or GitLab syntax.
type Codeowners struct {
	// File is the path it was read from.
	File string
	// Rules are the entries in file order.
	Rules []OwnerRule
	// Sections are GitLab's sections in file order; the first is the
	// unnamed one that holds rules above any header.
	Sections []Section
	// Problems are lines that were skipped, with why (the forges skip
	// them too); a caller shows them.
	Problems []string
}

// Section is a GitLab CODEOWNERS section: `[Name]`, optional `^[Name]`,
// with a number of approvals `[Name][2]` and default owners after it.
type Section struct {
	Name      string
	Optional  bool
	Approvals int
	Defaults  []string
}

// OwnerRule is one pattern line.
type OwnerRule struct {
	Pattern string
	Owners  []string
	Line    int
	// Section indexes Codeowners.Sections.
	Section int
	glob    glob
}

// Ownership is who owns a path in one section: the last matching rule's
// owners (or the section's default owners when that rule names none).
type Ownership struct {
	Section   string   `json:"section,omitempty"`
	Optional  bool     `json:"optional,omitempty"`
	Approvals int      `json:"approvals,omitempty"`
	Owners    []string `json:"owners"`
	Line      int      `json:"line"`
	Pattern   string   `json:"pattern"`
}

var sectionHeader = regexp.MustCompile(`^(\^)?\[([^\]]+)\](?:\[(\d{1,4})\])?(.*)$`)

// ParseCodeowners reads a CODEOWNERS file. Lines the forges would skip
// (a bad pattern, no owners outside a section with defaults) are recorded
// in Problems; only a file over MaxCodeownersSize is an error.
func ParseCodeowners(file string, data []byte) (*Codeowners, error) {
	if len(data) > MaxCodeownersSize {
		return nil, fmt.Errorf("%s is %d bytes, over the %d the forges read; split it or trim it", file, len(data), MaxCodeownersSize)
	}
	c := &Codeowners{File: file, Sections: []Section{{}}}
	byName := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), MaxCodeownersSize+1)
	cur := 0
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if m := sectionHeader.FindStringSubmatch(line); m != nil && (m[4] == "" || m[4][0] == ' ' || m[4][0] == '\t') {
			name := strings.TrimSpace(m[2])
			approvals := 0
			if m[3] != "" {
				approvals, _ = strconv.Atoi(m[3])
			}
			owners := fields(stripComment(m[4]))
			key := strings.ToLower(name)
			if i, ok := byName[key]; ok {
				// GitLab merges sections of the same name.
				cur = i
				if len(owners) > 0 {
					c.Sections[i].Defaults = owners
				}
				continue
			}
			c.Sections = append(c.Sections, Section{Name: name, Optional: m[1] == "^", Approvals: approvals, Defaults: owners})
			cur = len(c.Sections) - 1
			byName[key] = cur
			continue
		}
		toks := fields(stripComment(line))
		if len(toks) == 0 {
			continue
		}
		pat, owners := toks[0], toks[1:]
		if len(owners) > maxOwnersPerRule {
			c.Problems = append(c.Problems, fmt.Sprintf("%s:%d: %d owners, over %d; line skipped", file, n, len(owners), maxOwnersPerRule))
			continue
		}
		g, err := compileGlob(pat)
		if err != nil {
			c.Problems = append(c.Problems, fmt.Sprintf("%s:%d: pattern %q: %v; line skipped", file, n, pat, err))
			continue
		}
		c.Rules = append(c.Rules, OwnerRule{Pattern: pat, Owners: owners, Line: n, Section: cur, glob: g})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return c, nil
}

// stripComment drops a trailing " # comment" (a "\#" stays a '#').
func stripComment(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if s[i] == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t') {
			return s[:i]
		}
	}
	return s
}

// fields splits on blanks, keeping a "\ " (GitLab's escaped space) and
// turning "\#" into '#'.
func fields(s string) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\\' && i+1 < len(s) && (s[i+1] == ' ' || s[i+1] == '#'):
			b.WriteByte(s[i+1])
			i++
		case ch == ' ' || ch == '\t':
			flush()
		default:
			b.WriteByte(ch)
		}
	}
	flush()
	return out
}

// Owners returns, section by section, who owns the file at p (a path from
// the repository root, "/"-separated): in each section the last matching
// rule wins. Sections where nothing matches are left out.
func (c *Codeowners) Owners(p string) []Ownership {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	if p == "" || len(p) > maxPathLen {
		return nil
	}
	segs := strings.Split(p, "/")
	last := map[int]int{} // section -> rule index
	for i := range c.Rules {
		if c.Rules[i].glob.match(segs) {
			last[c.Rules[i].Section] = i
		}
	}
	var out []Ownership
	for s := range c.Sections {
		i, ok := last[s]
		if !ok {
			continue
		}
		r := c.Rules[i]
		sec := c.Sections[s]
		owners := r.Owners
		if len(owners) == 0 {
			owners = sec.Defaults
		}
		if len(owners) == 0 {
			// A rule without owners makes the path unowned (GitHub).
			continue
		}
		out = append(out, Ownership{Section: sec.Name, Optional: sec.Optional, Approvals: sec.Approvals, Owners: owners, Line: r.Line, Pattern: r.Pattern})
	}
	return out
}

// RequiredOwners is every owner of any of the paths in a section that is
// not optional, sorted and once each: the reviewers a pull request that
// changes those paths asks for.
func (c *Codeowners) RequiredOwners(paths []string) []string {
	set := map[string]bool{}
	for _, p := range paths {
		for _, o := range c.Owners(p) {
			if o.Optional {
				continue
			}
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

// glob is a compiled gitignore-style pattern.
type glob struct {
	segs []string // "**" is any number of segments
	// dirOnly: the pattern ended in "/": it matches a directory (and so
	// everything under it), never a file of that name.
	dirOnly bool
	// noPrefix: the last segment is "*": it matches the entries of one
	// directory, not what is nested below them (GitHub's `docs/*`).
	noPrefix bool
}

func compileGlob(pat string) (glob, error) {
	if len(pat) > maxPatternLen {
		return glob{}, fmt.Errorf("over %d characters", maxPatternLen)
	}
	if strings.HasPrefix(pat, "!") {
		return glob{}, fmt.Errorf("negation (!) is not supported by CODEOWNERS")
	}
	var g glob
	p := pat
	if strings.HasSuffix(p, "/") {
		g.dirOnly = true
		p = strings.TrimRight(p, "/")
	}
	anchored := strings.HasPrefix(p, "/") || strings.Contains(p, "/")
	p = strings.TrimLeft(p, "/")
	if p == "" {
		if g.dirOnly || pat == "/" {
			// "/" is the root: everything.
			return glob{segs: []string{"**"}}, nil
		}
		return glob{}, fmt.Errorf("empty pattern")
	}
	for _, s := range strings.Split(p, "/") {
		if s == "" || s == "." || s == ".." {
			return glob{}, fmt.Errorf("empty, . or .. path segment")
		}
		if strings.Contains(s, "**") && s != "**" {
			// gitignore treats it as "*"; keep that meaning.
			s = strings.ReplaceAll(s, "**", "*")
		}
		if s != "**" {
			if _, err := path.Match(s, ""); err != nil {
				return glob{}, fmt.Errorf("bad glob %q", s)
			}
		}
		g.segs = append(g.segs, s)
	}
	if !anchored {
		g.segs = append([]string{"**"}, g.segs...)
	}
	g.noPrefix = g.segs[len(g.segs)-1] == "*"
	return g, nil
}

// match says whether the pattern matches the file with path segments xs,
// or a directory above it.
func (g glob) match(xs []string) bool {
	for k := len(xs); k >= 1; k-- {
		isFile := k == len(xs)
		if isFile && g.dirOnly {
			continue
		}
		if !isFile && g.noPrefix {
			break
		}
		if matchSegs(g.segs, xs[:k]) {
			return true
		}
	}
	return false
}

// matchSegs matches pattern segments against path segments, "**" standing
// for zero or more segments, in O(len(ps)*len(xs)) (no backtracking, so a
// hostile pattern of many "**" costs no more than a plain one).
func matchSegs(ps, xs []string) bool {
	// ok[j]: ps[:i] matches xs[:j], row by row.
	ok := make([]bool, len(xs)+1)
	ok[0] = true
	next := make([]bool, len(xs)+1)
	for _, p := range ps {
		if p == "**" {
			run := false
			for j := 0; j <= len(xs); j++ {
				run = run || ok[j]
				next[j] = run
			}
		} else {
			next[0] = false
			for j := 1; j <= len(xs); j++ {
				next[j] = false
				if ok[j-1] {
					m, _ := path.Match(p, xs[j-1])
					next[j] = m
				}
			}
		}
		ok, next = next, ok
	}
	return ok[len(xs)]
}

// CodeownersAt reads the CODEOWNERS file of a commit (the first of
// CodeownersPaths there); nil when it has none.
func CodeownersAt(repo *git.Repository, commit plumbing.Hash) (*Codeowners, error) {
	c, err := headerCommit(repo, commit)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", commit, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("commit %s tree: %w", commit, err)
	}
	for _, p := range CodeownersPaths {
		f, err := tree.File(p)
		if err != nil {
			continue
		}
		if f.Size > MaxCodeownersSize {
			return nil, fmt.Errorf("%s is %d bytes, over the %d the forges read", p, f.Size, MaxCodeownersSize)
		}
		data, err := f.Contents()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		return ParseCodeowners(p, []byte(data))
	}
	return nil, nil
}

// ChangedFiles are the paths a commit changes against its first parent.
func ChangedFiles(repo *git.Repository, commit plumbing.Hash) ([]string, error) {
	c, err := headerCommit(repo, commit)
	if err != nil {
		return nil, err
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, err
	}
	var parent *object.Tree
	if c.NumParents() > 0 {
		pc, err := headerCommit(repo, c.ParentHashes[0])
		if err != nil {
			return nil, err
		}
		if parent, err = pc.Tree(); err != nil {
			return nil, err
		}
	}
	changes, err := object.DiffTree(parent, tree)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ch := range changes {
		for _, n := range []string{ch.From.Name, ch.To.Name} {
			if n != "" && (len(out) == 0 || out[len(out)-1] != n) {
				out = append(out, n)
			}
		}
	}
	return out, nil
}
