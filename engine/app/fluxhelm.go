package app

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"kdrift.dev/kdrift/engine/render"
)

// fluxHelmGroup is the API group of Flux's HelmRelease.
const fluxHelmGroup = "helm.toolkit.fluxcd.io"

// FluxHelmAPIVersion is the HelmRelease apiVersion kdrift reads.
const FluxHelmAPIVersion = fluxHelmGroup + "/v2"

// fluxHelmRelease is the part of a HelmRelease kdrift reads.
type fluxHelmRelease struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Chart *struct {
			Spec struct {
				Chart     string `json:"chart"`
				Version   string `json:"version"`
				SourceRef struct {
					Kind      string `json:"kind"`
					Name      string `json:"name"`
					Namespace string `json:"namespace"`
				} `json:"sourceRef"`
				ValuesFiles []string `json:"valuesFiles"`
				ValuesFile  string   `json:"valuesFile"`
			} `json:"spec"`
		} `json:"chart"`
		ChartRef *struct {
			Kind      string `json:"kind"`
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"chartRef"`
		ReleaseName     string         `json:"releaseName"`
		TargetNamespace string         `json:"targetNamespace"`
		Values          map[string]any `json:"values"`
		ValuesFrom      []ValuesFrom   `json:"valuesFrom"`
		Suspend         bool           `json:"suspend"`
		KubeConfig      map[string]any `json:"kubeConfig"`
		Install         *struct {
			CRDs string `json:"crds"`
		} `json:"install"`
		PostRenderers []struct {
			Kustomize *struct {
				Patches []fluxPatch `json:"patches"`
				Images  []fluxImage `json:"images"`
			} `json:"kustomize"`
		} `json:"postRenderers"`
		DriftDetection *struct {
			Mode   string `json:"mode"`
			Ignore []struct {
				Paths  []string `json:"paths"`
				Target *struct {
					Group     string `json:"group"`
					Kind      string `json:"kind"`
					Name      string `json:"name"`
					Namespace string `json:"namespace"`
				} `json:"target"`
			} `json:"ignore"`
		} `json:"driftDetection"`
	} `json:"spec"`
}

// maxReleaseName is the longest release name Helm takes; helm-controller
// shortens longer ones (shortReleaseName).
const maxReleaseName = 53

// shortReleaseName is helm-controller's release name for a HelmRelease
// whose default name is too long: its first 40 characters, "-", and the
// first 12 hex digits of the name's SHA-256.
func shortReleaseName(name string) string {
	if len(name) <= maxReleaseName {
		return name
	}
	return fmt.Sprintf("%s-%x", name[:40], sha256.Sum256([]byte(name)))[:53]
}

// fluxHelmApp maps one HelmRelease (as a Flux Kustomization's render
// yields it) into an App that renders its chart from this repository, or
// says exactly what kdrift cannot read in it.
func fluxHelmApp(fsys fs.FS, k pendingKustomization, repos map[string]gitRepository, sameRepo func(string) bool, branch string) found {
	f, origin, shown, bad := fluxStart(k, "HelmRelease", "default")
	ns, name := f.ns, f.name
	if name == "" {
		return bad("metadata.name", "is missing", "name the HelmRelease")
	}
	if v := scalar(lookup(k.body, "apiVersion")); v != FluxHelmAPIVersion {
		return bad("apiVersion", fmt.Sprintf("is %q; kdrift reads %s", v, FluxHelmAPIVersion), "move the HelmRelease to v2 (flux migrate)")
	}
	var hr fluxHelmRelease
	if err := decodeNode(k.body, &hr); err != nil {
		return bad("", "cannot be read as a Flux HelmRelease: "+err.Error(), "fix the document")
	}
	s := hr.Spec
	for i, v := range s.ValuesFrom {
		f := fmt.Sprintf("spec.valuesFrom[%d]", i)
		switch {
		case v.Kind != "ConfigMap" && v.Kind != "Secret":
			return bad(f+".kind", fmt.Sprintf("is %q; Flux takes values from a ConfigMap or a Secret", v.Kind), "write ConfigMap or Secret")
		case strings.TrimSpace(v.Name) == "":
			return bad(f+".name", "is missing", "name the "+v.Kind)
		}
	}
	if len(s.KubeConfig) > 0 {
		return bad("spec.kubeConfig", "names a cluster through a kubeconfig Secret; kdrift reaches clusters through kubeconfig contexts", "declare the app in "+Dir+"/ with spec.destination.context")
	}
	out := App{APIVersion: APIVersion, Kind: Kind, File: k.file, Origin: origin}
	out.Metadata.Name = name
	var files []string
	switch {
	case s.ChartRef != nil:
		ref := s.ChartRef
		switch ref.Kind {
		case "OCIRepository", "HelmChart":
		case "ExternalArtifact":
			return bad("spec.chartRef.kind", "is ExternalArtifact: kdrift does not read a chart an ArtifactGenerator composes yet", "compare this release with flux diff")
		default:
			return bad("spec.chartRef.kind", fmt.Sprintf("is %q; Flux takes a chart from an OCIRepository, a HelmChart or an ExternalArtifact", ref.Kind), "name an OCIRepository or a HelmChart")
		}
		if ref.Name == "" {
			return bad("spec.chartRef.name", "is missing", "name the "+ref.Kind)
		}
		refNS := ref.Namespace
		if refNS == "" {
			refNS = ns
		}
		out.Spec.Chart = &RemoteChart{SourceKind: ref.Kind, SourceNamespace: refNS, SourceName: ref.Name}
		if ref.Kind == "HelmChart" {
			out.Spec.Chart.HelmChart = ref.Name
		}
		out.Spec.Path = RemoteChartPath("HelmRelease", ns, name)
	case s.Chart == nil:
		return bad("spec.chart", "is missing", "give spec.chart.spec or spec.chartRef")
	default:
		cs := s.Chart.Spec
		ref := cs.SourceRef
		chart := strings.TrimSpace(cs.Chart)
		if chart == "" {
			return bad("spec.chart.spec.chart", "is missing", "give the chart's name, or its folder in the repository")
		}
		files = cs.ValuesFiles
		if cs.ValuesFile != "" {
			files = append([]string{cs.ValuesFile}, files...)
		}
		switch ref.Kind {
		case "GitRepository":
			full, repo, declared := fluxGitRepository(ref.Namespace, ref.Name, ns, repos)
			if !declared {
				return bad("spec.chart.spec.sourceRef", fmt.Sprintf("GitRepository %s is not declared in this repository, so kdrift cannot tell which repository holds the chart", full), "commit the GitRepository, or pass --cluster-path for a bootstrap repository")
			}
			if problem := repo.foreign(full, sameRepo, branch); problem != "" {
				return bad("spec.chart.spec.sourceRef", problem, "open kdrift on that repository and branch")
			}
			out.Spec.Path = path.Clean(strings.TrimPrefix(strings.TrimPrefix(chart, "./"), "/"))
			if err := checkPath(out.Spec.Path, fsys); err != nil {
				return bad("spec.chart.spec.chart", err.problem, err.fix)
			}
			if st, err := fs.Stat(fsys, path.Join(out.Spec.Path, "Chart.yaml")); err != nil || st.IsDir() {
				return bad("spec.chart.spec.chart", fmt.Sprintf("%s holds no Chart.yaml", out.Spec.Path), "point it at the chart's folder")
			}
			// A GitRepository's values files are relative to the
			// repository root, which render.Helm spells with a leading
			// "/".
			for i, vf := range files {
				files[i] = "/" + path.Clean(strings.TrimPrefix(strings.TrimPrefix(vf, "./"), "/"))
			}
		case "HelmRepository":
			if ref.Name == "" {
				return bad("spec.chart.spec.sourceRef.name", "is missing", "name the HelmRepository")
			}
			refNS := ref.Namespace
			if refNS == "" {
				refNS = ns
			}
			version := strings.TrimSpace(cs.Version)
			if version == "" {
				version = "*" // Flux's default: the newest
			}
			// source-controller makes one HelmChart per release, named
			// NAMESPACE-NAME, in the HelmRepository's namespace; its
			// status is the version it resolved.
			out.Spec.Chart = &RemoteChart{SourceKind: ref.Kind, SourceNamespace: refNS, SourceName: ref.Name, Chart: chart, Version: version, HelmChart: ns + "-" + name}
			out.Spec.Path = RemoteChartPath("HelmRelease", ns, name)
			// A HelmRepository chart's values files are the chart's own.
			for i, vf := range files {
				files[i] = path.Clean(strings.TrimPrefix(vf, "./"))
			}
		default:
			return bad("spec.chart.spec.sourceRef.kind", fmt.Sprintf("is %q (%s, chart %s %s): kdrift reads charts from a GitRepository of this repository or a HelmRepository", ref.Kind, ref.Name, cs.Chart, cs.Version), "compare this release with `flux diff`, or keep the chart in a Helm or OCI repository")
		}
	}
	release := s.ReleaseName
	if release == "" {
		release = name
		if s.TargetNamespace != "" {
			release = s.TargetNamespace + "-" + name
		}
		release = shortReleaseName(release)
	}
	h := &Helm{ReleaseName: release, ValuesObject: s.Values, ValueFiles: files, ValuesFrom: s.ValuesFrom}
	for i, pr := range s.PostRenderers {
		if pr.Kustomize == nil {
			continue
		}
		var step render.PostRender
		patches, images, p := fluxKustomize(fmt.Sprintf("spec.postRenderers[%d].kustomize", i), pr.Kustomize.Patches, pr.Kustomize.Images)
		if p != nil {
			return bad(p.field, p.problem, p.fix)
		}
		step.Patches, step.Images = patches, images
		if len(step.Patches)+len(step.Images) > 0 {
			h.PostRender = append(h.PostRender, step)
		}
	}
	if s.Install != nil && s.Install.CRDs == "Skip" {
		h.SkipCRDs = true
	}
	out.Spec.Helm = h
	out.Spec.Destination.Namespace = ns
	if s.TargetNamespace != "" {
		out.Spec.Destination.Namespace = s.TargetNamespace
	}
	// helm-controller puts drift back only with driftDetection.mode
	// enabled; otherwise it upgrades on a change of the HelmRelease and
	// leaves the cluster's edits alone.
	mode := ""
	if dd := s.DriftDetection; dd != nil {
		mode = dd.Mode
		for i, r := range dd.Ignore {
			if len(r.Paths) == 0 {
				return bad(fmt.Sprintf("spec.driftDetection.ignore[%d].paths", i), "is empty", "list the JSON pointers to ignore")
			}
			rule := IgnoreRule{JSONPointers: r.Paths}
			if t := r.Target; t != nil {
				rule.Group, rule.Kind, rule.Name, rule.Namespace = t.Group, t.Kind, t.Name, t.Namespace
			}
			out.Spec.IgnoreDifferences = append(out.Spec.IgnoreDifferences, rule)
		}
	}
	heals := !s.Suspend && mode == "enabled"
	out.Spec.SyncPolicy.SelfHeal = heals
	out.Spec.SyncPolicy.Prune = !s.Suspend
	origin.Heals = heals
	origin.Suspended = s.Suspend
	origin.SuspendReason = hr.Metadata.Annotations[FluxSuspendReason]
	return finish(f, out, hr.Metadata.Annotations, fsys, shown, bad)
}
