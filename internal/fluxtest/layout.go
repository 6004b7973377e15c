// Package fluxtest writes repositories in the shape of Flux's reference
// layout (one folder per cluster under clusters/, infrastructure/,
// apps/base and one apps folder per environment) for tests.
package fluxtest

import (
	"strconv"
	"strings"
)

// Clusters are the cluster folders ReferenceLayout writes.
var Clusters = []string{"clusters/production", "clusters/staging"}

// Replicas are the podinfo replicas each environment's values patch sets.
var Replicas = map[string]int{"production": 3, "staging": 1}

// ReferenceLayout is a repository whose GitRepository URL is url, laid
// out as Flux's reference example: each cluster folder holds the
// bootstrap sync (GitRepository and Kustomization flux-system) and the
// Kustomizations infra-configs and apps, with the same names in both; the
// apps are a HelmRelease of the in-repository chart charts/podinfo (from
// the GitRepository), patched per environment with its own values, in
// namespace ns of every environment (the test's namespace). Its
// postRenderers annotate the Deployment post-rendered: "true" and set
// its image's tag to 6.7.1.
func ReferenceLayout(url, ns string) map[string]string {
	files := map[string]string{
		"charts/podinfo/Chart.yaml":  "apiVersion: v2\nname: podinfo\nversion: 6.7.0\n",
		"charts/podinfo/values.yaml": "replicaCount: 1\nimage: ghcr.io/stefanprodan/podinfo:6.7.0\nenvironment: none\n",
		"charts/podinfo/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  namespace: {{ .Release.Namespace }}
  labels: {app: podinfo, env: {{ .Values.environment | quote }}}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels: {app: podinfo}
  template:
    metadata:
      labels: {app: podinfo}
    spec:
      containers:
      - name: podinfo
        image: {{ .Values.image }}
`,
		"apps/base/podinfo/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [release.yaml]\n",
		"apps/base/podinfo/release.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: NS
spec:
  interval: 10m
  releaseName: podinfo
  chart:
    spec:
      chart: ./charts/podinfo
      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
  install:
    crds: Create
  driftDetection:
    mode: enabled
    ignore:
    - paths: ["/metadata/annotations/ignored-by-flux"]
      target: {kind: Deployment}
  postRenderers:
  - kustomize:
      patches:
      - target: {kind: Deployment, name: podinfo}
        patch: |
          apiVersion: apps/v1
          kind: Deployment
          metadata:
            name: podinfo
            annotations: {post-rendered: "true"}
      images:
      - name: ghcr.io/stefanprodan/podinfo
        newTag: 6.7.1
  values:
    environment: base
`,
		"infrastructure/configs/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-settings\n  namespace: NS\ndata:\n  tier: shared\n",
	}
	for _, c := range Clusters {
		env := strings.TrimPrefix(c, "clusters/")
		files[c+"/flux-system/gotk-sync.yaml"] = BootstrapSync(url, c)
		files[c+"/flux-system/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [gotk-sync.yaml]\n"
		files[c+"/infrastructure.yaml"] = `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: infra-configs
  namespace: flux-system
spec:
  interval: 1h
  path: ./infrastructure/configs
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
`
		files[c+"/apps.yaml"] = `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  dependsOn: [{name: infra-configs}]
  path: ./apps/` + env + `
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
`
		files["apps/"+env+"/kustomization.yaml"] = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../base/podinfo]
patches:
- path: podinfo-values.yaml
  target: {kind: HelmRelease, name: podinfo}
`
		files["apps/"+env+"/podinfo-values.yaml"] = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: NS
spec:
  values:
    environment: ` + env + `
    replicaCount: ` + strconv.Itoa(Replicas[env]) + `
`
	}
	for k, v := range files {
		files[k] = strings.ReplaceAll(v, "namespace: NS", "namespace: "+ns)
	}
	return files
}

// BootstrapSync is the gotk-sync.yaml `flux bootstrap --path=./PATH`
// commits for a repository whose URL is url: the GitRepository and the
// Kustomization flux-system/flux-system that applies the cluster folder
// path.
func BootstrapSync(url, path string) string {
	return `# Written by flux bootstrap --path=./` + path + `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1m0s
  ref: {branch: main}
  url: ` + url + `
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 10m0s
  path: ./` + path + `
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
`
}
