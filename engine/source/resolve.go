package source

import (
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// Resolve is the commit that name, a revision as an Argo CD Application's
// targetRevision writes it, names in this repository as last fetched,
// and the ref as a person reads it ("origin/staging", "tag v1.2.0"): a
// branch of the upstream's remote (never a local branch while there is an
// upstream: a person's local commits are never the desired state), a
// tag, or a commit hash of at least 7 characters.
func (r *Repo) Resolve(name string) (Revision, string, error) {
	h := r.handle()
	h.mu.Lock()
	defer h.mu.Unlock()
	var refs []plumbing.ReferenceName
	if r.upstream != "" {
		refs = append(refs, plumbing.ReferenceName(strings.TrimSuffix(string(r.upstream), r.branch)+name))
	} else {
		refs = append(refs, plumbing.NewBranchReferenceName(name))
	}
	refs = append(refs, plumbing.NewTagReferenceName(name))
	for _, rn := range refs {
		if rn.Validate() != nil {
			// The name comes from a commit: never a path out of refs/.
			continue
		}
		ref, err := h.repo.Reference(rn, true)
		if err != nil {
			continue
		}
		c, err := h.repo.CommitObject(ref.Hash())
		if err != nil {
			// An annotated tag: its target.
			tag, terr := h.repo.TagObject(ref.Hash())
			if terr != nil {
				return Revision{}, "", fmt.Errorf("repository %s: %s: %w", r.shown(), rn, err)
			}
			if c, err = tag.Commit(); err != nil {
				return Revision{}, "", fmt.Errorf("repository %s: %s: %w", r.shown(), rn, err)
			}
		}
		shown := rn.Short()
		if rn.IsTag() {
			shown = "tag " + shown
		}
		return revisionOf(c), shown, nil
	}
	if len(name) >= 7 && len(name) <= 40 && strings.Trim(name, "0123456789abcdef") == "" {
		ch, err := h.repo.ResolveRevision(plumbing.Revision(name))
		if err == nil {
			if c, err := h.repo.CommitObject(*ch); err == nil {
				return revisionOf(c), "commit " + c.Hash.String()[:7], nil
			}
		}
	}
	return Revision{}, "", fmt.Errorf("repository %s: %q is no branch of the upstream, tag or commit here", r.shown(), name)
}
