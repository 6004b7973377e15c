package engine

import "kdrift.dev/kdrift/engine/status"

// follow makes the pass compare, for an app whose declaration follows
// name (an Application's targetRevision) rather than the branch kdrift
// reads, the commit name resolves to as last fetched (source.Repo.Resolve),
// and reports whether it did; when name resolves to nothing here, the
// pass keeps the branch head and ownerApplied says the two are not told
// apart.
func (p *pass) follow(name string) bool {
	rev, ref, err := p.e.repo.Resolve(name)
	if err != nil {
		return false
	}
	snap, err := p.e.repo.Snapshot(rev.Hash)
	if err != nil {
		return false
	}
	p.rev, p.snap = rev, snap
	p.status.Revision, p.status.RevisionAuthor = rev.Hash, rev.Author
	p.status.RevisionRef = ref + " (targetRevision " + name + ")"
	return true
}

// classify says, for an app another GitOps engine owns, what kind of
// difference each drifted field and each Missing or Extraneous object is
// (status.Difference). Whether a field differs is decided before, by its
// values alone (FieldChange.IsDrift); this only says why. A kdrift App's
// differences are drift and stay unmarked.
func (p *pass) classify(results []status.ResourceStatus) {
	if p.app.Origin == nil {
		return
	}
	classifyDifferences(results, p.status.OwnerRevision)
}

// classifyDifferences marks the differences of results (see
// pass.classify). ow is what the owner last applied: a field the owner's
// manager wrote is waiting for the owner when ow is behind the desired
// revision and a render disagreement when it is not; a field a person or
// a controller wrote is drift whatever the owner did. With ow nil the
// owner's fields stay unmarked: kdrift cannot tell which kind they are.
// Results from the comparison cache share their fields with earlier
// statuses that readers may hold, so the fields are copied before they
// are marked.
func classifyDifferences(results []status.ResourceStatus, ow *status.OwnerRevision) {
	var byOwner status.Difference
	switch {
	case ow == nil:
	case ow.Behind:
		byOwner = status.DifferenceWaiting
	default:
		byOwner = status.DifferenceRender
	}
	for i := range results {
		r := &results[i]
		r.Difference = ""
		if r.Status == status.ResourceMissing || r.Status == status.ResourceExtraneous {
			// The owner creates and prunes the app's objects.
			r.Difference = byOwner
		}
		if len(r.Fields) == 0 {
			continue
		}
		fields := append([]status.FieldChange(nil), r.Fields...)
		for j := range fields {
			f := &fields[j]
			f.Difference = ""
			switch {
			case !f.IsDrift():
			case f.Class == status.OwnerGitOps:
				f.Difference = byOwner
			default:
				f.Difference = status.DifferenceDrift
			}
		}
		r.Fields = fields
	}
}

// readBranch is the branch name a declaration's targetRevision names when
// it follows what kdrift reads: the upstream's branch, else the local one.
func (e *core) readBranch() string {
	if b := e.repo.ReadBranch(); b != "" {
		return b
	}
	return e.repo.Branch()
}
