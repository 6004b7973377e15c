package app

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/api/types"

	"kdrift.dev/kdrift/engine/render"
)

// fluxKustomization is the part of a Flux Kustomization kdrift reads.
type fluxKustomization struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec fluxSpec `json:"spec"`
}

// fluxPatch is a kustomize patch as Flux writes one: inline only.
type fluxPatch struct {
	Patch  string          `json:"patch"`
	Target *types.Selector `json:"target"`
}

// fluxImage is a kustomize image override as Flux writes one.
type fluxImage struct {
	Name    string `json:"name"`
	NewName string `json:"newName"`
	NewTag  string `json:"newTag"`
	Digest  string `json:"digest"`
}

// fluxKustomize converts the patches and images of a Flux Kustomization
// (field "spec") or of a HelmRelease's post-renderer into kustomize's
// types; a patch with no inline text or an image with no name is a
// problem naming its field (FIELD.patches[i].patch, FIELD.images[i].name).
func fluxKustomize(field string, patches []fluxPatch, images []fluxImage) ([]types.Patch, []types.Image, *problem) {
	var ps []types.Patch
	var is []types.Image
	for i, p := range patches {
		if strings.TrimSpace(p.Patch) == "" {
			return nil, nil, &problem{fmt.Sprintf("%s.patches[%d].patch", field, i), "is missing", "give the patch inline (Flux takes no patch files here)"}
		}
		ps = append(ps, types.Patch{Patch: p.Patch, Target: p.Target})
	}
	for i, im := range images {
		if im.Name == "" {
			return nil, nil, &problem{fmt.Sprintf("%s.images[%d].name", field, i), "is missing", "name the image to replace"}
		}
		is = append(is, types.Image{Name: im.Name, NewName: im.NewName, NewTag: im.NewTag, Digest: im.Digest})
	}
	return ps, is, nil
}

// fluxSpec is the part of a Kustomization's spec kdrift reads.
type fluxSpec struct {
	SourceRef struct {
		Kind      string `json:"kind"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"sourceRef"`
	Path            string         `json:"path"`
	TargetNamespace string         `json:"targetNamespace"`
	Prune           bool           `json:"prune"`
	Suspend         bool           `json:"suspend"`
	Patches         []fluxPatch    `json:"patches"`
	Images          []fluxImage    `json:"images"`
	Ignore          any            `json:"ignore"`
	KubeConfig      map[string]any `json:"kubeConfig"`
	PostBuild       *struct {
		Substitute     map[string]string `json:"substitute"`
		SubstituteFrom []any             `json:"substituteFrom"`
	} `json:"postBuild"`
	Components              []string `json:"components"`
	IgnoreMissingComponents bool     `json:"ignoreMissingComponents"`
	NamePrefix              string   `json:"namePrefix"`
	NameSuffix              string   `json:"nameSuffix"`
	CommonMetadata          *struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"commonMetadata"`
	Decryption *struct {
		Provider  string `json:"provider"`
		SecretRef *struct {
			Name string `json:"name"`
		} `json:"secretRef"`
	} `json:"decryption"`
}

// fluxIgnoreRule is one rule of Kustomization.spec.ignore in its
// structured form: a target and the JSON pointers Flux leaves alone.
type fluxIgnoreRule struct {
	Target struct {
		Group     string `json:"group"`
		Kind      string `json:"kind"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"target"`
	JSONPointers []string `json:"jsonPointers"`
	Paths        []string `json:"paths"`
}

// FluxSuspendReason is the annotation `flux suspend --reason` writes.
const FluxSuspendReason = "suspend.toolkit.fluxcd.io/reason"

// fluxStart is what the App of a Flux declaration of kind starts from:
// what was found (its namespace defaulting to defaultNS), its Origin, the
// place its errors name, and bad, which makes it invalid with an error
// naming field.
func fluxStart(k pendingKustomization, kind, defaultNS string) (f found, origin *Origin, shown string, bad func(field, problem, fix string) found) {
	ns, name := metaOf(k.body, defaultNS)
	f = found{kind: kind, ns: ns, name: name, file: k.file, from: k.from}
	origin = &Origin{Engine: EngineFlux, Kind: kind, Namespace: ns, Name: name, File: k.file, Doc: k.doc, GeneratedBy: k.generatedBy, GeneratedFrom: k.from}
	shown = k.file
	if shown == "" {
		shown = origin.Where()
	}
	bad = func(field, problem, fix string) found {
		f.invalid = &Invalid{Name: name, File: shown, Err: &Error{File: shown, Doc: k.doc, Line: k.line, App: name, Field: field, Problem: problem, Fix: fix}}
		return f
	}
	return f, origin, shown, bad
}

// fluxGitRepository looks up the GitRepository a sourceRef names (its
// namespace defaulting to ns): full is its NAMESPACE/NAME, declared whether
// repos has it.
func fluxGitRepository(refNS, refName, ns string, repos map[string]gitRepository) (full string, repo gitRepository, declared bool) {
	if refNS == "" {
		refNS = ns
	}
	full = refNS + "/" + refName
	repo, declared = repos[full]
	return full, repo, declared
}

// foreign says why the GitRepository full names another repository than
// the one kdrift reads, or another branch of it than branch (see
// DiscoverOptions.Branch); "" when it is this one.
func (r gitRepository) foreign(full string, sameRepo func(string) bool, branch string) string {
	if r.self {
		return ""
	}
	if sameRepo == nil || !sameRepo(r.url) {
		return fmt.Sprintf("GitRepository %s (%s) names another repository, which kdrift does not read", full, r.file)
	}
	if !SameBranch(r.ref, branch) {
		return fmt.Sprintf("GitRepository %s (%s) follows %s of this repository; kdrift reads branch %s", full, r.file, DescribeRef(r.ref), branch)
	}
	return ""
}

// fluxApp maps one Kustomization into an App, or says what kdrift cannot
// follow in it. Its sourceRef must be a GitRepository declared in the
// repository whose URL is this repository.
func fluxApp(fsys fs.FS, k pendingKustomization, repos map[string]gitRepository, artifacts map[string]generated, sameRepo func(string) bool, branch string) found {
	f, origin, shown, bad := fluxStart(k, "Kustomization", "flux-system")
	ns, name := f.ns, f.name
	if name == "" {
		return bad("metadata.name", "is missing", "name the Kustomization")
	}
	if v := scalar(lookup(k.body, "apiVersion")); v != "kustomize.toolkit.fluxcd.io/v1" {
		return bad("apiVersion", fmt.Sprintf("is %q; kdrift reads kustomize.toolkit.fluxcd.io/v1", v), "move the Kustomization to v1 (flux migrate)")
	}
	var kz fluxKustomization
	if err := decodeNode(k.body, &kz); err != nil {
		return bad("", "cannot be read as a Flux Kustomization: "+err.Error(), "fix the document")
	}
	s := kz.Spec
	var art *Artifact
	switch s.SourceRef.Kind {
	case "GitRepository":
		full, repo, declared := fluxGitRepository(s.SourceRef.Namespace, s.SourceRef.Name, ns, repos)
		if !declared {
			return bad("spec.sourceRef", fmt.Sprintf("GitRepository %s is not declared in this repository, so kdrift cannot tell which repository it reads", full), "commit the GitRepository beside the Kustomization")
		}
		if problem := repo.foreign(full, sameRepo, branch); problem != "" {
			return bad("spec.sourceRef", problem, "open kdrift on that repository and branch")
		}
	case "ExternalArtifact":
		refNS := s.SourceRef.Namespace
		if refNS == "" {
			refNS = ns
		}
		full := refNS + "/" + s.SourceRef.Name
		g, ok := artifacts[full]
		switch {
		case !ok:
			return bad("spec.sourceRef", fmt.Sprintf("ExternalArtifact %s is made by no ArtifactGenerator of this repository, so kdrift cannot tell what it holds", full), "commit the ArtifactGenerator, or compare this Kustomization with flux diff")
		case g.problem != nil:
			return bad(g.problem.field, g.problem.problem, g.problem.fix)
		}
		files, _, err := BuildArtifact(fsys, g.artifact)
		if err != nil {
			return bad("spec.sourceRef", err.Error(), "fix the ArtifactGenerator's copy rules, or the files they copy")
		}
		art = g.artifact
		fsys = render.MountFS(fsys, art.Mount(), files)
	case "OCIRepository", "Bucket":
		return bad(outsideSource(s.SourceRef.Kind, s.SourceRef.Namespace, s.SourceRef.Name, ns, name))
	default:
		return bad("spec.sourceRef.kind", fmt.Sprintf("is %q; kdrift reads GitRepository and ExternalArtifact sources", s.SourceRef.Kind), "declare the app in "+Dir+"/")
	}
	if len(s.KubeConfig) > 0 {
		return bad("spec.kubeConfig", "names a cluster through a kubeconfig Secret; kdrift reaches clusters through kubeconfig contexts", "declare the app in "+Dir+"/ with spec.destination.context")
	}
	p := strings.TrimPrefix(strings.TrimSpace(s.Path), "./")
	if p == "" {
		p = "."
	}
	out := App{APIVersion: APIVersion, Kind: Kind, File: k.file, Origin: origin}
	out.Metadata.Name = name
	out.Spec.Path = path.Clean(strings.TrimPrefix(p, "/"))
	if art != nil {
		out.Spec.Artifact = art
		out.Spec.Path = path.Join(art.Mount(), out.Spec.Path)
		if !strings.HasPrefix(out.Spec.Path, art.Mount()+"/") && out.Spec.Path != art.Mount() {
			return bad("spec.path", fmt.Sprintf("%q leaves the artifact", s.Path), "give a path inside the ExternalArtifact")
		}
	}
	if err := checkPath(out.Spec.Path, fsys); err != nil {
		return bad("spec.path", err.problem, err.fix)
	}
	out.Spec.Destination.Namespace = s.TargetNamespace
	ov, pr := fluxOverlay(s, fsys, out.Spec.Path)
	if pr != nil {
		return bad(pr.field, pr.problem, pr.fix)
	}
	out.Spec.Overlay = ov
	out.Spec.SyncPolicy.SelfHeal = !s.Suspend
	out.Spec.SyncPolicy.Prune = s.Prune
	origin.Heals = !s.Suspend
	origin.SuspendReason = kz.Metadata.Annotations[FluxSuspendReason]
	if d := s.Decryption; d != nil {
		if d.Provider != "sops" {
			return bad("spec.decryption.provider", fmt.Sprintf("is %q; Flux and kdrift decrypt with sops only", d.Provider), "set provider: sops")
		}
		origin.Decryption = &Decryption{Provider: d.Provider}
		if d.SecretRef != nil && d.SecretRef.Name != "" {
			origin.Decryption.SecretRef = ns + "/" + d.SecretRef.Name
		}
	}
	switch ig := s.Ignore.(type) {
	case nil:
	case []any:
		var rules []fluxIgnoreRule
		if err := remarshal(ig, &rules); err != nil {
			return bad("spec.ignore", "cannot be read: "+err.Error(), "write a list of {target, jsonPointers}")
		}
		for _, r := range rules {
			out.Spec.IgnoreDifferences = append(out.Spec.IgnoreDifferences, IgnoreRule{Group: r.Target.Group, Kind: r.Target.Kind, Name: r.Target.Name,
				Namespace: r.Target.Namespace, JSONPointers: append(r.JSONPointers, r.Paths...)})
		}
	default:
		return bad("spec.ignore", "is file patterns (.sourceignore form); kdrift renders every file of the path", "move the ignored files out of "+out.Spec.Path)
	}
	return finish(f, out, kz.Metadata.Annotations, fsys, shown, bad)
}

// freezeOf reads a freeze kdrift wrote into a declaration's annotations;
// nil when there is none.
func freezeOf(ann map[string]string) (*Freeze, error) {
	reason, ok := ann[AnnotationFreezeReason]
	if !ok {
		return nil, nil
	}
	fr := &Freeze{Reason: reason, By: ann[AnnotationFreezeBy]}
	at, err := time.Parse(time.RFC3339, ann[AnnotationFreezeAt])
	if err != nil {
		return nil, fmt.Errorf("%s %q is not an RFC 3339 time", AnnotationFreezeAt, ann[AnnotationFreezeAt])
	}
	fr.At = at
	if u, ok := ann[AnnotationFreezeUntil]; ok {
		t, err := time.Parse(time.RFC3339, u)
		if err != nil {
			return nil, fmt.Errorf("%s %q is not an RFC 3339 time", AnnotationFreezeUntil, u)
		}
		fr.Until = &t
	}
	return fr, nil
}

// outsideSource is the field, problem and fix of a Kustomization (ns/name)
// whose sourceRef is an OCIRepository or a Bucket: its manifests are an
// artifact source-controller fetched from outside this repository, which
// kdrift does not fetch for a Kustomization (it reads Helm charts only
// from a source's artifact), so it can neither compare nor heal it.
func outsideSource(kind, refNS, refName, ns, name string) (field, problem, fix string) {
	if refNS == "" {
		refNS = ns
	}
	what := "an OCI artifact"
	pull := fmt.Sprintf("`flux pull artifact` of its URL into a folder, then `flux diff kustomization %s -n %s --path FOLDER`", name, ns)
	if kind == "Bucket" {
		what = "objects of a storage bucket"
		pull = fmt.Sprintf("download the bucket's objects into a folder, then `flux diff kustomization %s -n %s --path FOLDER`", name, ns)
	}
	return "spec.sourceRef", fmt.Sprintf("%s %s/%s holds this Kustomization's manifests as %s, outside this repository; kdrift reads a Kustomization's files only from this repository (a GitRepository or an ExternalArtifact) and does not fetch that artifact, so it neither compares nor heals this app",
			kind, refNS, refName, what),
		"compare it with Flux itself: " + pull
}
