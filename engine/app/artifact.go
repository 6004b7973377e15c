package app

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Flux 2.7's ArtifactGenerator (source.extensions.fluxcd.io) makes
// ExternalArtifacts by copying files of its sources; a Kustomization (or
// a HelmRelease's chartRef) may read one instead of a GitRepository.
// kdrift rebuilds such an artifact from the repository at the revision
// with the generator's copy rules (ARCHITECTURE.md, "Flux: cluster
// folders and HelmReleases").

// ArtifactGeneratorGroup is the API group of Flux's ArtifactGenerator.
const ArtifactGeneratorGroup = "source.extensions.fluxcd.io"

// ArtifactRoot is the folder under which an ExternalArtifact's files are
// mounted for a render; like RemoteChartRoot, no repository path can be
// it.
const ArtifactRoot = "@artifacts"

// Budgets of one rebuilt artifact.
const (
	maxArtifactFiles = 10000
	maxArtifactBytes = 64 << 20
)

// Artifact is an ExternalArtifact an ArtifactGenerator of the repository
// makes from this repository: its copy rules, read from the repository
// root.
type Artifact struct {
	// Name is the ExternalArtifact's NAMESPACE/NAME.
	Name string `json:"name"`
	// Generator is the ArtifactGenerator's NAMESPACE/NAME and File where
	// it is declared (or the app whose render yields it).
	Generator string `json:"generator"`
	File      string `json:"file,omitempty"`
	// Copy are the copy operations, in order.
	Copy []ArtifactCopy `json:"copy"`
}

// ArtifactCopy is one copy operation: From is a path or glob of the
// repository (the source alias resolved), To the destination in the
// artifact ("." for its root; a trailing "/" makes it a folder).
type ArtifactCopy struct {
	From     string   `json:"from"`
	To       string   `json:"to"`
	Exclude  []string `json:"exclude,omitempty"`
	Strategy string   `json:"strategy,omitempty"`
	Optional bool     `json:"optional,omitempty"`
}

// Mount is the folder the artifact's files are mounted at for a render.
func (a *Artifact) Mount() string {
	ns, name, _ := strings.Cut(a.Name, "/")
	return path.Join(ArtifactRoot, ns, name)
}

// artifactGenerator is an ArtifactGenerator document as discovery reads
// it.
type artifactGenerator struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Sources []struct {
			Alias     string `json:"alias"`
			Kind      string `json:"kind"`
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"sources"`
		Artifacts []struct {
			Name string `json:"name"`
			Copy []struct {
				From     string   `json:"from"`
				To       string   `json:"to"`
				Exclude  []string `json:"exclude"`
				Strategy string   `json:"strategy"`
				Optional bool     `json:"optional"`
			} `json:"copy"`
		} `json:"artifacts"`
	} `json:"spec"`
}

// generated is one ExternalArtifact as a declared generator makes it, or
// why kdrift cannot rebuild it.
type generated struct {
	artifact *Artifact
	problem  *problem
}

// readGenerator turns an ArtifactGenerator into the artifacts it makes,
// by NAMESPACE/NAME; a source that is not a GitRepository of this
// repository makes every artifact that copies from it a problem.
func readGenerator(g artifactGenerator, file string, repos map[string]gitRepository, sameRepo func(string) bool, branch string) map[string]generated {
	ns := g.Metadata.Namespace
	if ns == "" {
		ns = "default"
	}
	who := ns + "/" + g.Metadata.Name
	aliases := map[string]string{} // alias -> "" (this repository) or why not
	for _, s := range g.Spec.Sources {
		switch {
		case s.Kind != "GitRepository":
			aliases[s.Alias] = fmt.Sprintf("source %q is %s %s, which kdrift does not read", s.Alias, s.Kind, s.Name)
		default:
			full, repo, declared := fluxGitRepository(s.Namespace, s.Name, ns, repos)
			switch {
			case !declared:
				aliases[s.Alias] = fmt.Sprintf("source %q is GitRepository %s, which is not declared in this repository", s.Alias, full)
			default:
				aliases[s.Alias] = repo.foreign(full, sameRepo, branch)
			}
		}
	}
	out := map[string]generated{}
	for i, art := range g.Spec.Artifacts {
		field := fmt.Sprintf("ArtifactGenerator %s spec.artifacts[%d]", who, i)
		a := &Artifact{Name: ns + "/" + art.Name, Generator: who, File: file}
		var p *problem
		for j, c := range art.Copy {
			cf := fmt.Sprintf("%s.copy[%d]", field, j)
			alias, from, ok := strings.Cut(strings.TrimPrefix(c.From, "@"), "/")
			switch why, known := aliases[alias]; {
			case !strings.HasPrefix(c.From, "@") || !ok:
				p = &problem{cf + ".from", fmt.Sprintf("%q is not @ALIAS/PATH", c.From), "write the source as @alias/path"}
			case !known:
				p = &problem{cf + ".from", fmt.Sprintf("names source %q, which spec.sources does not declare", alias), "declare the source, or fix the alias"}
			case why != "":
				p = &problem{cf + ".from", why, "keep the artifact's files in this repository, or compare it with flux diff"}
			case c.Strategy == "Extract":
				p = &problem{cf + ".strategy", "is Extract (tarballs), which kdrift does not unpack", "copy the files themselves"}
			case c.Strategy != "" && c.Strategy != "Overwrite" && c.Strategy != "Merge":
				p = &problem{cf + ".strategy", fmt.Sprintf("is %q; Flux takes Overwrite, Merge or Extract", c.Strategy), "fix the strategy"}
			}
			to, tok := strings.CutPrefix(c.To, "@artifact/")
			if p == nil && !tok {
				p = &problem{cf + ".to", fmt.Sprintf("%q does not start with @artifact/", c.To), "write the destination as @artifact/path"}
			}
			if p != nil {
				break
			}
			bad := false
			for _, seg := range strings.Split(to, "/") {
				bad = bad || seg == ".."
			}
			if bad || strings.HasPrefix(to, "/") {
				p = &problem{cf + ".to", fmt.Sprintf("%q leaves the artifact", c.To), "keep the destination inside @artifact/"}
				break
			}
			dest := path.Clean(to)
			if to == "" {
				dest = "."
			}
			if strings.HasSuffix(to, "/") && dest != "." {
				dest += "/"
			}
			a.Copy = append(a.Copy, ArtifactCopy{From: from, To: dest, Exclude: c.Exclude, Strategy: c.Strategy, Optional: c.Optional})
		}
		out[a.Name] = generated{artifact: a}
		if p != nil {
			out[a.Name] = generated{problem: p}
		}
	}
	return out
}

// errArtifactBudget is an artifact past its budgets.
var errArtifactBudget = errors.New("over budget")

// BuildArtifact rebuilds the files of a from the repository tree fsys,
// as Flux's ArtifactGenerator copies them: operations in order, a later
// one overwriting (or, with the Merge strategy, merging into as YAML) an
// earlier one's file; a folder copied whole into the destination under
// its own name; a glob's matches (one path segment per "*", "**" too, as
// the generator matches them) each copied, those of a "DIR/**" pattern
// relative to DIR and the others by their whole path; excluded paths
// left out. It returns the files by path in the artifact and their
// content's digest.
func BuildArtifact(fsys fs.FS, a *Artifact) (map[string][]byte, string, error) {
	b := &artifactBuild{fsys: fsys, files: map[string][]byte{}}
	for i, c := range a.Copy {
		if err := b.apply(c); err != nil {
			return nil, "", fmt.Errorf("ArtifactGenerator %s, artifact %s, copy[%d] (%s to %s): %w", a.Generator, a.Name, i, c.From, c.To, err)
		}
	}
	names := make([]string, 0, len(b.files))
	for n := range b.files {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(b.files[n]))
		h.Write(b.files[n])
	}
	return b.files, "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// artifactBuild is one artifact being rebuilt.
type artifactBuild struct {
	fsys  fs.FS
	files map[string][]byte
	bytes int64
}

// isDir says whether p is a folder of the artifact built so far.
func (b *artifactBuild) isDir(p string) bool {
	if p == "." {
		return true
	}
	for n := range b.files {
		if strings.HasPrefix(n, p+"/") {
			return true
		}
	}
	return false
}

func (b *artifactBuild) apply(c ArtifactCopy) error {
	pattern := strings.TrimSuffix(c.From, "/")
	dest := strings.TrimSuffix(c.To, "/")
	destDir := strings.HasSuffix(c.To, "/") || c.To == "."
	if !strings.ContainsAny(pattern, "*?[]") {
		src := path.Clean(pattern)
		st, err := fs.Stat(b.fsys, src)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if c.Optional {
				return nil
			}
			return fmt.Errorf("%s does not exist in this revision", src)
		case err != nil:
			return err
		case st.IsDir():
			return b.copyTree(c, src, path.Join(dest, path.Base(src)), src)
		}
		if excluded(src, ".", c.Exclude) {
			return nil
		}
		to := dest
		if destDir || b.isDir(dest) {
			to = path.Join(dest, path.Base(src))
		}
		return b.copyFile(c, src, to)
	}
	matches, err := fs.Glob(b.fsys, pattern)
	if err != nil {
		return fmt.Errorf("the pattern %q is not a glob: %w", pattern, err)
	}
	base := selectionRoot(pattern)
	var kept []string
	for _, m := range matches {
		if m != "." && m != ".." && !excluded(m, base, c.Exclude) {
			kept = append(kept, m)
		}
	}
	if len(kept) == 0 {
		if c.Optional {
			return nil
		}
		return fmt.Errorf("no file of this revision matches %q (or every match is excluded)", pattern)
	}
	for _, m := range kept {
		to := path.Join(dest, m)
		if prefix, ok := strings.CutSuffix(pattern, "/**"); ok {
			if rel, ok := strings.CutPrefix(m, prefix+"/"); ok {
				to = path.Join(dest, rel)
			}
		}
		st, err := fs.Stat(b.fsys, m)
		if err != nil {
			return err
		}
		if st.IsDir() {
			err = b.copyTree(c, m, to, base)
		} else {
			err = b.copyFile(c, m, to)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// copyTree copies folder src to to, its excluded paths (matched from
// base) left out.
func (b *artifactBuild) copyTree(c ArtifactCopy, src, to, base string) error {
	return fs.WalkDir(b.fsys, src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == src {
			return nil
		}
		if excluded(p, base, c.Exclude) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel := strings.TrimPrefix(p, src+"/")
		return b.copyFile(c, p, path.Join(to, rel))
	})
}

// copyFile copies file src to to, merging it into an existing file as
// YAML with the Merge strategy.
func (b *artifactBuild) copyFile(c ArtifactCopy, src, to string) error {
	if len(b.files) >= maxArtifactFiles {
		return fmt.Errorf("the artifact holds more than %d files: %w", maxArtifactFiles, errArtifactBudget)
	}
	data, err := fs.ReadFile(b.fsys, src)
	if err != nil {
		return err
	}
	if old, ok := b.files[to]; ok && c.Strategy == "Merge" {
		merged, err := mergeYAMLFiles(old, data)
		if err != nil {
			return fmt.Errorf("merging %s into %s: %w", src, to, err)
		}
		data = merged
		b.bytes -= int64(len(old))
	} else if ok {
		b.bytes -= int64(len(old))
	}
	b.bytes += int64(len(data))
	if b.bytes > maxArtifactBytes {
		return fmt.Errorf("the artifact holds more than %d bytes: %w", maxArtifactBytes, errArtifactBudget)
	}
	b.files[to] = data
	return nil
}

// mergeYAMLFiles merges src into dst, both YAML mappings: src's values
// win, mappings merge key by key, anything else is replaced.
func mergeYAMLFiles(dst, src []byte) ([]byte, error) {
	var d, s map[string]any
	if err := yaml.Unmarshal(dst, &d); err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(src, &s); err != nil {
		return nil, err
	}
	return yaml.Marshal(MergeValues(d, s))
}

// MergeValues merges s into d (modified and returned; nil makes a new
// map) as Helm merges values: mappings key by key, s winning; anything
// else replaced.
func MergeValues(d, s map[string]any) map[string]any {
	if d == nil {
		d = map[string]any{}
	}
	for k, v := range s {
		dm, dok := d[k].(map[string]any)
		sm, sok := v.(map[string]any)
		if dok && sok {
			d[k] = MergeValues(dm, sm)
			continue
		}
		d[k] = v
	}
	return d
}

// selectionRoot is the part of a glob before its first segment with a
// wildcard ("." when the first has one).
func selectionRoot(pattern string) string {
	var root []string
	for _, s := range strings.Split(path.Clean(pattern), "/") {
		if strings.ContainsAny(s, "*?[]") {
			break
		}
		root = append(root, s)
	}
	if len(root) == 0 {
		return "."
	}
	return path.Join(root...)
}

// excluded says whether p (a repository path) matches one of the
// exclude patterns: from the repository root, or from base (the copy's
// selection root); a pattern without "/" also matches the file name.
func excluded(p, base string, patterns []string) bool {
	for _, pat := range patterns {
		if globMatch(pat, p) {
			return true
		}
		if rel, ok := strings.CutPrefix(p, base+"/"); ok && base != "." && globMatch(pat, rel) {
			return true
		}
		if !strings.Contains(pat, "/") && globMatch(pat, path.Base(p)) {
			return true
		}
	}
	return false
}

// pendingGenerator is an ArtifactGenerator discovery read, and where.
type pendingGenerator struct {
	gen  artifactGenerator
	file string
}

// artifacts are the ExternalArtifacts the generators read so far make,
// by NAMESPACE/NAME. With a cluster folder, a generator declared in a
// file under it wins over those of other folders (each cluster folder
// may declare its own generator of the same name); otherwise an
// artifact two generators make differently is a problem naming both.
func (d *discovery) artifacts(repos map[string]gitRepository) map[string]generated {
	type made struct {
		g    generated
		file string
	}
	all := map[string][]made{}
	for _, pg := range d.generators {
		for name, g := range readGenerator(pg.gen, pg.file, repos, d.opts.SameRepo, d.opts.Branch) {
			all[name] = append(all[name], made{g, pg.file})
		}
	}
	out := map[string]generated{}
	for name, ms := range all {
		if fc := d.opts.Flux; fc != nil && fc.Path != "" {
			var mine []made
			for _, m := range ms {
				if under(m.file, fc.Path) {
					mine = append(mine, m)
				}
			}
			if len(mine) > 0 {
				ms = mine
			}
		}
		out[name] = ms[0].g
		for _, m := range ms[1:] {
			if !sameGenerated(ms[0].g, m.g) {
				out[name] = generated{problem: &problem{"spec.sourceRef", fmt.Sprintf("ExternalArtifact %s is made by two ArtifactGenerators differently (%s, %s)", name, ms[0].file, m.file),
					"pass --cluster-path with the folder of the cluster to compare, or give the artifacts distinct names"}}
				break
			}
		}
	}
	return out
}

// sameGenerated says whether two generators make one artifact alike.
func sameGenerated(a, b generated) bool {
	if a.artifact == nil || b.artifact == nil {
		return a.artifact == b.artifact && a.problem != nil && b.problem != nil && *a.problem == *b.problem
	}
	return a.artifact.Name == b.artifact.Name && fmt.Sprint(a.artifact.Copy) == fmt.Sprint(b.artifact.Copy)
}
