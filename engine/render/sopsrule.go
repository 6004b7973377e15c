package render

import (
	"bufio"
	"bytes"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"

	yaml3 "gopkg.in/yaml.v3"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"kdrift.dev/kdrift/engine/sops"
)

// The rule a render's SOPS files follow, as Flux's kustomize-controller
// decrypts: the plaintext of a SOPS file becomes the data of a Secret
// and nothing else. A file is decrypted only when a render reads it as a
// Secret manifest (a kustomize resources entry or a plain folder's
// manifest, every document a Secret) or as a secretGenerator's files or
// envs. Read for anything else (Jsonnet's import and importstr, a Helm
// chart's files or values, a configMapGenerator, a patch, a replacement
// or another plugin's configuration) it is a *SOPSUseError, with or
// without a key, and the plaintext never enters the reader; a render
// that copies fields out of a Secret (replacements or vars with a Secret
// source) decrypts nothing. So no template, generator, transformer,
// message or cache can hold a transformed plaintext that a scrubber
// would not recognise.

// sopsUse is what a render may make of a SOPS file it reads.
type sopsUse int

const (
	// sopsRefused: no plaintext (the default for every path).
	sopsRefused sopsUse = iota
	// sopsSecretData: a secretGenerator's files or envs entry.
	sopsSecretData
	// sopsManifest: a manifest whose documents are all Secrets.
	sopsManifest
)

// SOPSUseError is a render that read a SOPS-encrypted file for anything
// but a Secret's data.
type SOPSUseError struct {
	// File is the encrypted file, relative to the repository root.
	File string
	// Reader says what read it ("Jsonnet", "Helm chart deploy/web", "a
	// configMapGenerator file entry of deploy/web/kustomization.yaml").
	Reader string
}

// Error renders `FILE is SOPS-encrypted and READER; ...rule; fix`.
func (e *SOPSUseError) Error() string {
	return fmt.Sprintf("%s is SOPS-encrypted and %s; decrypted content only ever becomes the data of a Secret "+
		"(a Secret manifest, or a secretGenerator's files or envs), never an input of Jsonnet, Helm, another generator, a patch or a transformer: "+
		"keep the value in a Secret and have the workload reference that Secret", e.File, e.Reader)
}

// sopsRule is what one render's kustomization graph (or plain folder)
// lets each path become; the guard fills it before kustomize reads.
type sopsRule struct {
	mu sync.Mutex
	// uses are the paths a Secret may come from, with how.
	uses map[string]sopsUse
	// others are the paths also named by a field that is not a Secret's
	// data, with the first such field.
	others map[string]string
	// copiers are the fields that copy values out of a Secret into other
	// objects (replacements, vars).
	copiers []string
}

// rule returns t's rule, made on first use.
func (t *treeFS) rule() *sopsRule {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sopsRule == nil {
		t.sopsRule = &sopsRule{uses: map[string]sopsUse{}, others: map[string]string{}}
	}
	return t.sopsRule
}

// realPath is p with symbolic links resolved when the tree can say.
func (t *treeFS) realPath(p string) string {
	if rp, ok := t.tree.(realPather); ok {
		if real, err := rp.RealPath(p); err == nil {
			return real
		}
	}
	return p
}

// allowSOPS records that path p (repository-relative) is read as use.
func (t *treeFS) allowSOPS(p string, use sopsUse) {
	r := t.rule()
	p = t.realPath(p)
	r.mu.Lock()
	defer r.mu.Unlock()
	if use > r.uses[p] {
		r.uses[p] = use
	}
}

// otherUse records that path p is named by field, which is not a
// Secret's data.
func (t *treeFS) otherUse(p, field string) {
	r := t.rule()
	p = t.realPath(p)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.others[p]; !ok {
		r.others[p] = field
	}
}

// copier records a field that copies values out of a Secret.
func (t *treeFS) copier(field string) {
	r := t.rule()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.copiers = append(r.copiers, field)
}

// readFor reads p for reader (Jsonnet, a Helm chart), which never gets
// a SOPS file's plaintext.
func (t *treeFS) readFor(p, reader string) ([]byte, error) {
	return t.readAs(p, reader)
}

// openSOPS returns a file read by reader ("" for kustomize and plain
// folders, which follow the rule's paths) as the reader may see it: a
// file that is not SOPS as it is; a SOPS file decrypted when the rule
// lets it become a Secret's data, else a *SOPSUseError.
func (t *treeFS) openSOPS(p string, data []byte, reader string) ([]byte, error) {
	if t.sops == nil {
		return data, nil
	}
	if _, ok := sops.Detect(p, data); !ok {
		return data, nil
	}
	use, why := t.sopsUseOf(p, reader)
	if use == sopsRefused {
		return nil, t.deny(&SOPSUseError{File: p, Reader: why})
	}
	out, err := t.sops.open(p, data)
	if err != nil || use != sopsManifest {
		return out, err
	}
	if kind := notSecret(out); kind != "" {
		return nil, t.deny(&SOPSUseError{File: p, Reader: "is read as a manifest that holds a " + kind})
	}
	return out, nil
}

// sopsUseOf says what p may become for reader, and when nothing, why.
func (t *treeFS) sopsUseOf(p, reader string) (sopsUse, string) {
	if reader != "" {
		return sopsRefused, "is read by " + reader
	}
	r := t.rule()
	real := t.realPath(p)
	r.mu.Lock()
	defer r.mu.Unlock()
	use := r.uses[real]
	switch {
	case use == sopsRefused:
		if f, ok := r.others[real]; ok {
			return sopsRefused, "is read as " + f
		}
		return sopsRefused, "is read by kustomize as something other than a Secret manifest or a secretGenerator's file"
	case r.others[real] != "":
		return sopsRefused, "is also read as " + r.others[real]
	case len(r.copiers) > 0:
		cs := append([]string(nil), r.copiers...)
		sort.Strings(cs)
		return sopsRefused, "the same render copies Secret fields into other objects (" + strings.Join(cs, ", ") + ")"
	}
	return use, ""
}

// deny records a refused read as the render's error (the first wins);
// unlike a budget, the input decides it, so the result may be cached.
func (t *treeFS) deny(err error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.limitErr == nil {
		t.limitErr = err
	}
	return err
}

// notSecret returns the kind of the first document of a decrypted
// manifest that is not a Secret, or "".
func notSecret(data []byte) string {
	rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := rd.Read()
		if err != nil {
			return ""
		}
		var m struct {
			Kind string `yaml:"kind"`
		}
		if yaml3.Unmarshal(doc, &m) != nil {
			return "document that is not a Kubernetes object"
		}
		if m.Kind != "" && m.Kind != "Secret" {
			return m.Kind
		}
	}
}

// copiesSecret reports whether a replacement (a mapping with a source)
// or a var (with an objref) takes its value from a Secret, or from a
// source of any kind.
func copiesSecret(m map[string]any) bool {
	for _, key := range []string{"source", "objref"} {
		for _, s := range mappingsOf(lookup(m, key)) {
			kinds := strings_(lookup(s, "kind"))
			if len(kinds) == 0 || kinds[0] == "" || kinds[0] == "Secret" {
				return true
			}
		}
	}
	return false
}

// secretCopiers records, in kustomization file's fields k, the
// replacements and vars that copy from a Secret; replacement files
// (path) are read and checked too.
func (g *kguard) secretCopiers(file string, k map[string]any) {
	for _, m := range mappingsOf(lookup(k, "vars")) {
		if copiesSecret(m) {
			g.fsys.copier(file + ": vars")
		}
	}
	for _, m := range mappingsOf(lookup(k, "replacements")) {
		if copiesSecret(m) {
			g.fsys.copier(file + ": replacements")
		}
		for _, p := range strings_(lookup(m, "path")) {
			g.replacementFile(file, path.Join(path.Dir(file), p))
		}
	}
}

// patchCopiers records, in kustomization file's fields k, the JSON
// patches (inline or in a file) with a copy or move operation: one can
// move a Secret's value into a field that is not its data.
func (g *kguard) patchCopiers(file string, k map[string]any) {
	for _, f := range []string{"patches", "patchesJson6902"} {
		for _, m := range mappingsOf(lookup(k, f)) {
			texts := strings_(lookup(m, "patch"))
			for _, p := range strings_(lookup(m, "path")) {
				if data, err := g.fsys.ReadFile("/" + path.Join(path.Dir(file), p)); err == nil {
					texts = append(texts, string(data))
				}
			}
			for _, t := range texts {
				if copiesByPatch(t) {
					g.fsys.copier(file + ": " + f + " (a copy or move operation)")
				}
			}
		}
	}
}

// copiesByPatch reports whether text is a JSON patch with a copy or move
// operation.
func copiesByPatch(text string) bool {
	var ops []map[string]any
	if yaml3.Unmarshal([]byte(text), &ops) != nil {
		return false
	}
	for _, op := range ops {
		for _, o := range strings_(lookup(op, "op")) {
			if o == "copy" || o == "move" {
				return true
			}
		}
	}
	return false
}

// replacementFile records the replacements of file p, named by
// kustomization file, that copy from a Secret.
func (g *kguard) replacementFile(file, p string) {
	data, err := g.fsys.ReadFile("/" + p)
	if err != nil {
		return // kustomize reports it
	}
	var list []any
	if yaml3.Unmarshal(data, &list) != nil {
		var one map[string]any
		if yaml3.Unmarshal(data, &one) != nil {
			return
		}
		list = []any{one}
	}
	for _, m := range mappingsOf([]any{list}) {
		if copiesSecret(m) {
			g.fsys.copier(file + ": replacements " + p)
			return
		}
	}
}
