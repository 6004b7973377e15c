package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"kdrift.dev/kdrift/internal/enginetest"
)

// webDeployment is the Deployment web of namespace ns at image version v.
func webDeployment(ns, v string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ` + ns + `
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: docker.io/kostiscodefresh/simple-env-app:` + v + `
`
}

// applyYAMLAs server-side applies the manifest doc (YAML) as manager, with
// labels and annotations added, the way Argo CD and Flux apply.
func applyYAMLAs(t *testing.T, gvr schema.GroupVersionResource, doc, manager string, labels, annotations map[string]string) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatal(err)
	}
	if labels != nil {
		obj.SetLabels(labels)
	}
	if annotations != nil {
		obj.SetAnnotations(annotations)
	}
	body, err := obj.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	force := true
	if _, err := enginetest.Dynamic(t).Resource(gvr).Namespace(obj.GetNamespace()).Patch(context.Background(), obj.GetName(), types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: manager, Force: &force}); err != nil {
		t.Fatalf("apply %s as %s: %v", obj.GetName(), manager, err)
	}
}

var (
	deploymentsGVR      = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	argoApplicationsGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
)

// commitAndPush writes files in clone, commits and pushes them: the new
// commit.
func commitAndPush(t *testing.T, clone, msg string, files map[string]string) string {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(clone, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, clone, "add", "-A")
	git(t, clone, "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-qm", msg)
	git(t, clone, "push", "-q", "origin", "main")
	return git(t, clone, "rev-parse", "HEAD")
}

// TestGitAheadOfArgoCDIsOutOfSyncCLI: the environment-promotion reproducer
// through the commands. Argo CD applied the qa environment at one commit;
// a commit changes the image; status says "OutOfSync (waiting for Argo
// CD)" and names both revisions, diff exits 1 and says why, the JSON says
// "waiting"; the live image is left as it is. Once the Application says
// it applied that commit while the image is still the old one, it is a
// render disagreement.
func TestGitAheadOfArgoCDIsOutOfSyncCLI(t *testing.T) {
	ctx := context.Background()
	const ns = "cli-verdict-argo"
	cs := enginetest.Clientset(t)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	enginetest.InstallCRDs(t, "applications.argoproj.io.yaml")
	root := t.TempDir()
	remoteDir := filepath.Join(root, "remote.git")
	application := `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: ep-qa
  namespace: ` + ns + `
spec:
  project: default
  source:
    repoURL: file://` + remoteDir + `
    targetRevision: HEAD
    path: envs/qa
  destination:
    server: https://kubernetes.default.svc
    namespace: ` + ns + `
  syncPolicy:
    automated: {prune: true, selfHeal: true}
`
	git(t, root, "init", "-q", "--bare", "-b", "main", remoteDir)
	seed := gitRepo(t, map[string]string{"argocd/ep-qa.yaml": application, "envs/qa/web.yaml": webDeployment(ns, "1.0")})
	git(t, seed, "push", "-q", remoteDir, "main")
	clone := filepath.Join(root, "clone")
	git(t, root, "clone", "-q", remoteDir, clone)
	head := git(t, clone, "rev-parse", "HEAD")

	applyYAMLAs(t, deploymentsGVR, webDeployment(ns, "1.0"), "argocd-controller", map[string]string{},
		map[string]string{"argocd.argoproj.io/tracking-id": "ep-qa:apps/Deployment:" + ns + "/web"})
	synced := func(rev string) {
		t.Helper()
		doc := strings.Replace(application, "kind: Application\n", "kind: Application\nstatus:\n  sync: {status: Synced, revision: "+rev+"}\n  operationState: {phase: Succeeded, finishedAt: \""+time.Now().Add(-4*time.Minute).UTC().Format(time.RFC3339)+"\", syncResult: {revision: "+rev+"}}\n", 1)
		applyYAMLAs(t, argoApplicationsGVR, doc, "argocd-application-controller", nil, nil)
	}
	synced(head)
	g := []string{"--repo", clone, "--kubeconfig", enginetest.Kubeconfig()}
	if code, out, errOut := kdrift(t, ctx, append([]string{"status", "ep-qa"}, g...)...); code != exitOK || !strings.Contains(out, " Synced ") {
		t.Fatalf("status before the commit: %d\n%s\n%s", code, out, errOut)
	}

	next := commitAndPush(t, clone, "qa: simple-env-app 2.0", map[string]string{"envs/qa/web.yaml": webDeployment(ns, "2.0")})
	code, out, errOut := kdrift(t, ctx, append([]string{"status", "ep-qa"}, g...)...)
	if !strings.Contains(out, "OutOfSync (waiting for Argo CD)") || !strings.Contains(out, "ep-qa: Argo CD applied "+head[:7]+" 4m ago; Git is at "+next[:7]+" (origin/main)") {
		t.Fatalf("status with Git ahead of Argo CD: %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = kdrift(t, ctx, append([]string{"diff", "ep-qa", "--live"}, g...)...)
	if code != exitDrift || !strings.Contains(out, "app ep-qa: OutOfSync (waiting for Argo CD); Argo CD applied "+head[:7]) ||
		!strings.Contains(out, "simple-env-app:2.0") || !strings.Contains(out, "why:     waiting for Argo CD") {
		t.Fatalf("diff with Git ahead of Argo CD: %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = kdrift(t, ctx, append([]string{"status", "ep-qa", "-o", "json"}, g...)...)
	if !strings.Contains(out, `"difference": "waiting"`) || !strings.Contains(out, `"syncLabel": "OutOfSync (waiting for Argo CD)"`) || !strings.Contains(out, `"behind": true`) {
		t.Fatalf("status JSON with Git ahead of Argo CD: %d\n%s\n%s", code, out, errOut)
	}
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":1.0") {
		t.Fatalf("kdrift healed an app Argo CD heals: image %s", img)
	}

	synced(next)
	code, out, errOut = kdrift(t, ctx, append([]string{"diff", "ep-qa", "--live"}, g...)...)
	if code != exitDrift || !strings.Contains(out, "OutOfSync (render disagreement with Argo CD)") || !strings.Contains(out, "why:     render disagreement") {
		t.Fatalf("diff with Argo CD's render disagreeing: %d\n%s\n%s", code, out, errOut)
	}
}

// TestGitAheadOfFluxIsOutOfSyncCLI: the same with Flux: objects
// kustomize-controller applied at the commit the live Kustomization's
// status.lastAppliedRevision names, then a commit Flux has not applied.
func TestGitAheadOfFluxIsOutOfSyncCLI(t *testing.T) {
	ctx := context.Background()
	const ns = "cli-verdict-flux"
	cs := enginetest.Clientset(t)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	enginetest.InstallCRDs(t, "kustomizations.kustomize.toolkit.fluxcd.io.yaml")
	root := t.TempDir()
	remoteDir := filepath.Join(root, "remote.git")
	git(t, root, "init", "-q", "--bare", "-b", "main", remoteDir)
	seed := gitRepo(t, map[string]string{
		"flux/podinfo.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: gitops, namespace: ` + ns + `}
spec: {url: "file://` + remoteDir + `", ref: {branch: main}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: podinfo
  namespace: ` + ns + `
spec:
  interval: 10m
  sourceRef: {kind: GitRepository, name: gitops}
  path: ./deploy/podinfo
  prune: true
`,
		"deploy/podinfo/web.yaml": webDeployment(ns, "1.0"),
	})
	git(t, seed, "push", "-q", remoteDir, "main")
	clone := filepath.Join(root, "clone")
	git(t, root, "clone", "-q", remoteDir, clone)
	head := git(t, clone, "rev-parse", "HEAD")

	applyYAMLAs(t, deploymentsGVR, webDeployment(ns, "1.0"), "kustomize-controller",
		map[string]string{"kustomize.toolkit.fluxcd.io/name": "podinfo", "kustomize.toolkit.fluxcd.io/namespace": ns}, nil)
	applyKustomization(t, ns, nil)
	applied := func(rev string) {
		t.Helper()
		k, err := enginetest.Dynamic(t).Resource(kustomizationsGVR).Namespace(ns).Get(ctx, "podinfo", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		k.Object["status"] = map[string]any{"lastAppliedRevision": "main@sha1:" + rev}
		if _, err := enginetest.Dynamic(t).Resource(kustomizationsGVR).Namespace(ns).UpdateStatus(ctx, k, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	applied(head)
	g := []string{"--repo", clone, "--kubeconfig", enginetest.Kubeconfig()}
	if code, out, errOut := kdrift(t, ctx, append([]string{"status", "podinfo"}, g...)...); code != exitOK || !strings.Contains(out, " Synced ") {
		t.Fatalf("status before the commit: %d\n%s\n%s", code, out, errOut)
	}

	next := commitAndPush(t, clone, "podinfo 2.0", map[string]string{"deploy/podinfo/web.yaml": webDeployment(ns, "2.0")})
	code, out, errOut := kdrift(t, ctx, append([]string{"status", "podinfo"}, g...)...)
	if !strings.Contains(out, "OutOfSync (waiting for Flux)") || !strings.Contains(out, "podinfo: Flux applied main@sha1:"+head[:7]+"; Git is at "+next[:7]) {
		t.Fatalf("status with Git ahead of Flux: %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = kdrift(t, ctx, append([]string{"diff", "podinfo", "--live"}, g...)...)
	if code != exitDrift || !strings.Contains(out, "why:     waiting for Flux") {
		t.Fatalf("diff with Git ahead of Flux: %d\n%s\n%s", code, out, errOut)
	}

	applied(next)
	code, out, errOut = kdrift(t, ctx, append([]string{"status", "podinfo", "-o", "json"}, g...)...)
	if !strings.Contains(out, `"difference": "render"`) || !strings.Contains(out, `"syncLabel": "OutOfSync (render disagreement with Flux)"`) {
		t.Fatalf("status JSON with Flux's render disagreeing: %d\n%s\n%s", code, out, errOut)
	}
}
