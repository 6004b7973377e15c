package source

import (
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"kdrift.dev/kdrift/internal/gitobj"
)

// Resolve is the commit that name, a revision as an Argo CD Application's
// targetRevision writes it, names in this repository as last fetched,
// and the ref as a person reads it ("origin/staging", "tag v1.2.0"): a
// branch of the upstream's remote (never a local branch while there is an
// upstream: a person's local commits are never the desired state), a
// tag, or a full commit hash. Objects are read bounded (gitobj).
func (r *Repo) Resolve(name string) (Revision, string, error) {
	h := r.handle()
	h.mu.Lock()
	defer h.mu.Unlock()
	var refs []plumbing.ReferenceName
	if r.upstream != "" {
		refs = append(refs, plumbing.ReferenceName(strings.TrimSuffix(string(r.upstream), r.ReadBranch())+name))
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
		target := ref.Hash()
		if rn.IsTag() {
			// An annotated tag names its commit; a light one is it.
			if tag, err := gitobj.Tag(h.repo.Storer, target); err == nil {
				target = tag.Target
			}
		}
		c, err := readCommit(h.repo, target)
		if err != nil {
			return Revision{}, "", fmt.Errorf("repository %s: %s: %w", r.shown(), rn, err)
		}
		shown := rn.Short()
		if rn.IsTag() {
			shown = "tag " + shown
		}
		return revisionOf(c), shown, nil
	}
	if plumbing.IsHash(name) {
		if c, err := readCommit(h.repo, plumbing.NewHash(name)); err == nil {
			return revisionOf(c), "commit " + name[:7], nil
		}
	}
	return Revision{}, "", fmt.Errorf("repository %s: %q is no branch of the upstream, tag or full commit hash here", r.shown(), name)
}
