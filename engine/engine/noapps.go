package engine

import (
	"context"
	"io/fs"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/source"
)

// maxNamedElsewhere bounds how many live objects that read other
// repositories NoApps names; the rest are counted.
const maxNamedElsewhere = 3

// NoApps says why the engine found no app at the revision it read, for
// a person to act on: what Git holds and what the cluster runs that
// reads other repositories. The UI renders it; it holds no wording.
type NoApps struct {
	// Revision is the short commit read.
	Revision string `json:"revision"`
	// AppDir reports whether the commit has a .kdrift folder at its root
	// (with no App file in it, since no app was found).
	AppDir bool `json:"appDir"`
	// FluxDeclared counts the Flux Kustomizations the commit declares;
	// FluxFolder is the cluster folder followed ("" when none), and
	// FluxCandidates the cluster folders the tree holds.
	FluxDeclared   int      `json:"fluxDeclared"`
	FluxFolder     string   `json:"fluxFolder,omitempty"`
	FluxCandidates []string `json:"fluxCandidates,omitempty"`
	// Applications and Kustomizations are the live Argo CD Applications
	// and Flux Kustomizations of the cluster; nil when not read.
	Applications   *LiveElsewhere `json:"applications,omitempty"`
	Kustomizations *LiveElsewhere `json:"kustomizations,omitempty"`
	// Note says why a live list could not be read; empty when it was.
	Note string `json:"note,omitempty"`
}

// LiveElsewhere is what one live kind holds in a cluster, seen from this
// repository.
type LiveElsewhere struct {
	// Context is the kubeconfig context read ("" = the current one).
	Context string `json:"context,omitempty"`
	// Total counts the live objects of the kind.
	Total int `json:"total"`
	// Ours counts those that read this repository (and branch, for
	// Flux); they are not apps all the same (see Named).
	Ours int `json:"ours"`
	// Others counts those that read another repository or branch.
	Others int `json:"others"`
	// Named are the first few of Others, sorted by name.
	Named []LiveRef `json:"named,omitempty"`
	// OursNamed are the first few of Ours, sorted by name.
	OursNamed []LiveRef `json:"oursNamed,omitempty"`
}

// LiveRef is one live object and the source it reads.
type LiveRef struct {
	// Name is NAMESPACE/NAME.
	Name string `json:"name"`
	// URL is the repository URL it reads ("" when its source is not a
	// Git repository the cluster names); Path the folder in it.
	URL  string `json:"url,omitempty"`
	Path string `json:"path,omitempty"`
}

// NoApps is why the last read of Git found no app; nil when it found
// one (or an App that is invalid, which status shows as an Error).
func (e *core) NoApps() *NoApps {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.noApps == nil {
		return nil
	}
	n := *e.noApps
	return &n
}

// noteNoApps records why apps is empty (see NoApps), reading the live
// Flux Kustomizations when discovery did not; it clears the record when
// apps holds an app. It costs nothing on a repository with apps.
func (e *core) noteNoApps(ctx context.Context, snap *source.Snapshot, rev source.Revision, apps app.LoadResult) {
	if len(apps.Apps) > 0 || len(apps.Invalid) > 0 {
		e.mu.Lock()
		e.noApps = nil
		e.mu.Unlock()
		return
	}
	n := &NoApps{Revision: rev.Short()}
	if st, err := fs.Stat(snap, ".kdrift"); err == nil && st.IsDir() {
		n.AppDir = true
	}
	if l := apps.Flux; l != nil {
		n.FluxDeclared, n.FluxFolder, n.FluxCandidates = l.Kustomizations, l.ClusterPath, l.Candidates
	}
	e.mu.Lock()
	n.Applications = e.argoSeen
	e.mu.Unlock()
	n.Kustomizations, n.Note = e.fluxElsewhere(ctx)
	e.mu.Lock()
	e.noApps = n
	e.mu.Unlock()
}

// fluxElsewhere lists the live Flux Kustomizations and GitRepositories
// of the destination context: nil when the cluster runs no Flux or
// cannot be reached, with a note when a list failed otherwise.
func (e *core) fluxElsewhere(ctx context.Context) (*LiveElsewhere, string) {
	cs, err := e.clients.For(e.opts.Context)
	if err != nil {
		return nil, ""
	}
	ctx, cancel := context.WithTimeout(ctx, liveFluxTimeout)
	defer cancel()
	ks, err := listFlux(ctx, cs, fluxKustomizationGVK)
	if err != nil || ks == nil {
		return nil, ""
	}
	grs, err := listFlux(ctx, cs, fluxGitRepositoryGVK)
	if err != nil {
		return nil, "Flux's live GitRepositories not read on context " + cs.Context + ": " + err.Error()
	}
	repos := liveGitRepositories(grs)
	branch := e.repo.ReadBranch()
	seen := &LiveElsewhere{Context: cs.Context, Total: len(ks)}
	for _, k := range ks {
		kind, _, _ := unstructured.NestedString(k.Object, "spec", "sourceRef", "kind")
		name, _, _ := unstructured.NestedString(k.Object, "spec", "sourceRef", "name")
		ns, _, _ := unstructured.NestedString(k.Object, "spec", "sourceRef", "namespace")
		if ns == "" {
			ns = k.GetNamespace()
		}
		p, _, _ := unstructured.NestedString(k.Object, "spec", "path")
		ref := LiveRef{Name: k.GetNamespace() + "/" + k.GetName(), Path: p}
		if kind == "GitRepository" {
			ref.URL = repos.Repos[ns+"/"+name]
		}
		ours := kind == "GitRepository" && e.repo.SameRepo(ref.URL) && app.SameBranch(repos.Refs[ns+"/"+name], branch)
		seen.add(ref, ours)
	}
	seen.sort()
	return seen, ""
}

// argoElsewhere sums up the live Applications objs: which read this
// repository (any of their sources) and which read another.
func (e *core) argoElsewhere(objs []map[string]any, context string) *LiveElsewhere {
	if objs == nil {
		return nil
	}
	seen := &LiveElsewhere{Context: context, Total: len(objs)}
	for _, o := range objs {
		u := unstructured.Unstructured{Object: o}
		ref := LiveRef{Name: u.GetNamespace() + "/" + u.GetName()}
		ours := false
		for _, src := range argoSources(o) {
			url, _ := src["repoURL"].(string)
			if ref.URL == "" {
				ref.URL = url
				ref.Path, _ = src["path"].(string)
			}
			if url != "" && e.repo.SameRepo(url) {
				ours = true
			}
		}
		seen.add(ref, ours)
	}
	seen.sort()
	return seen
}

// argoSources are an Application's spec.source and spec.sources.
func argoSources(obj map[string]any) []map[string]any {
	spec, _ := obj["spec"].(map[string]any)
	var out []map[string]any
	if s, ok := spec["source"].(map[string]any); ok {
		out = append(out, s)
	}
	srcs, _ := spec["sources"].([]any)
	for _, s := range srcs {
		if m, ok := s.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// add counts ref, as reading this repository when ours.
func (l *LiveElsewhere) add(ref LiveRef, ours bool) {
	if ours {
		l.Ours++
		l.OursNamed = append(l.OursNamed, ref)
		return
	}
	l.Others++
	l.Named = append(l.Named, ref)
}

// sort keeps the first few of each list by name.
func (l *LiveElsewhere) sort() {
	for _, refs := range []*[]LiveRef{&l.Named, &l.OursNamed} {
		sort.Slice(*refs, func(i, j int) bool { return strings.Compare((*refs)[i].Name, (*refs)[j].Name) < 0 })
		if len(*refs) > maxNamedElsewhere {
			*refs = (*refs)[:maxNamedElsewhere]
		}
	}
}
