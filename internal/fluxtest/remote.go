package fluxtest

import (
	"strconv"
	"strings"
)

// RemoteChart is the files of a small chart named name, at version, as
// a Helm repository or an OCI registry serves it: one Deployment named
// after the release, with the values replicaCount, image and
// environment.
func RemoteChart(name, version, image string) map[string]string {
	return map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: " + name + "\nversion: " + version + "\n",
		"values.yaml": "replicaCount: 1\nimage: " + image + "\nenvironment: none\n",
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  namespace: {{ .Release.Namespace }}
  labels: {app: ` + name + `, env: {{ .Values.environment | quote }}}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels: {app: ` + name + `}
  template:
    metadata:
      labels: {app: ` + name + `}
    spec:
      containers:
      - name: ` + name + `
        image: {{ .Values.image }}
`,
	}
}

// RemoteReleases adds to files (a ReferenceLayout with namespace ns)
// two HelmReleases whose charts are remote, in every environment, as
// Flux's reference layout keeps them: "cache", chart cache at version
// range 1.x from the HelmRepository flux-system/cache, and "web", the
// chart of the OCIRepository flux-system/web (semver >=6.0.0). The
// sources are committed beside them with the URLs helmURL and ociURL;
// each environment patches the releases' replicaCount (Replicas) and
// environment.
func RemoteReleases(files map[string]string, ns, helmURL, ociURL string) {
	files["apps/base/cache/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [repository.yaml, release.yaml]\n"
	files["apps/base/cache/repository.yaml"] = `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: cache
  namespace: flux-system
spec:
  interval: 1h
  url: ` + helmURL + "\n"
	files["apps/base/cache/release.yaml"] = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: cache
  namespace: NS
spec:
  interval: 10m
  chart:
    spec:
      chart: cache
      version: 1.x
      sourceRef: {kind: HelmRepository, name: cache, namespace: flux-system}
  driftDetection: {mode: enabled}
`
	files["apps/base/web/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [repository.yaml, release.yaml]\n"
	files["apps/base/web/repository.yaml"] = `apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: web
  namespace: flux-system
spec:
  interval: 1h
  url: ` + ociURL + `
  ref: {semver: ">=6.0.0"}
  layerSelector:
    mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip
    operation: copy
`
	files["apps/base/web/release.yaml"] = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
  namespace: NS
spec:
  interval: 10m
  chartRef: {kind: OCIRepository, name: web, namespace: flux-system}
`
	for _, c := range Clusters {
		env := strings.TrimPrefix(c, "clusters/")
		files["apps/"+env+"/kustomization.yaml"] = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../base/podinfo, ../base/cache, ../base/web]
patches:
- path: podinfo-values.yaml
  target: {kind: HelmRelease, name: podinfo}
- path: remote-values.yaml
  target: {kind: HelmRelease, name: cache|web}
`
		files["apps/"+env+"/remote-values.yaml"] = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: any
spec:
  values:
    environment: ` + env + `
    replicaCount: ` + strconv.Itoa(Replicas[env]) + `
`
	}
	for k, v := range files {
		files[k] = strings.ReplaceAll(v, "namespace: NS", "namespace: "+ns)
	}
}

// WithArtifactGenerator changes files (a ReferenceLayout) so that each
// cluster's Kustomization apps reads the ExternalArtifact flux-system/apps,
// which an ArtifactGenerator declared in each cluster folder makes of the
// repository's apps/ folder (excluding Markdown files), as Flux 2.7's
// layout does; its path becomes the environment's folder inside it.
func WithArtifactGenerator(files map[string]string) {
	for _, c := range Clusters {
		env := strings.TrimPrefix(c, "clusters/")
		files[c+"/artifacts.yaml"] = `apiVersion: source.extensions.fluxcd.io/v1beta1
kind: ArtifactGenerator
metadata:
  name: apps
  namespace: flux-system
spec:
  sources:
  - alias: repo
    kind: GitRepository
    name: flux-system
  artifacts:
  - name: apps
    originRevision: "@repo"
    copy:
    - from: "@repo/apps/**"
      to: "@artifact/"
      exclude: ["*.md"]
`
		files[c+"/apps.yaml"] = strings.Replace(strings.Replace(files[c+"/apps.yaml"],
			"sourceRef: {kind: GitRepository, name: flux-system}", "sourceRef: {kind: ExternalArtifact, name: apps}", 1),
			"path: ./apps/"+env, "path: ./"+env, 1)
	}
	files["apps/README.md"] = "The apps of every environment.\n"
}
