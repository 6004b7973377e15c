package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
	"kdrift.dev/kdrift/internal/sopstest"
)

// argoApp is an Argo CD Application for this test's repository, as a team
// writes it.
func argoApp(ns string) string {
	return `# Deployed by Argo CD; kdrift only watches.
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook
  namespace: argocd
spec:
  project: default
  source:
    repoURL: https://Git.Example.com/team/gitops.git   # this repository
    path: deploy/guestbook
  destination:
    server: https://kubernetes.default.svc
    namespace: ` + ns + `
  syncPolicy:
    automated: {prune: true, selfHeal: true}
`
}

// fluxApp is Flux's source and Kustomization for this test's repository.
func fluxApp(ns string) string {
	return `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: gitops, namespace: flux-system}
spec: {url: "ssh://git@git.example.com/team/gitops"}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: podinfo, namespace: flux-system}
spec:
  sourceRef: {kind: GitRepository, name: gitops}
  path: ./deploy/podinfo
  targetNamespace: ` + ns + `
  prune: true
`
}

// applyAs server-side applies a manifest (YAML) as manager, the way Argo
// CD and Flux apply, with their tracking metadata added.
func applyAs(t *testing.T, ns, manager, manifest string, labels, annotations map[string]string) {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(manifest), &obj); err != nil {
		t.Fatal(err)
	}
	md := obj["metadata"].(map[string]any)
	md["namespace"] = ns
	md["labels"], md["annotations"] = labels, annotations
	body, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(body)
	if err != nil {
		t.Fatal(err)
	}
	force := true
	if _, err := enginetest.Clientset(t).AppsV1().Deployments(ns).Patch(context.Background(), md["name"].(string), types.ApplyPatchType, js,
		metav1.PatchOptions{FieldManager: manager, Force: &force}); err != nil {
		t.Fatalf("apply as %s: %v", manager, err)
	}
}

func TestArgoAndFluxAppsAreComparedNeverHealed(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "gitops-owned")
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", "https://git.example.com/team/gitops.git")
	repo.Commit("Argo CD and Flux", map[string]string{
		"argocd/guestbook.yaml":     argoApp(ns),
		"flux/podinfo.yaml":         fluxApp(ns),
		"deploy/guestbook/dep.yaml": deploymentYAML("guestbook", 3),
		"deploy/podinfo/dep.yaml":   deploymentYAML("podinfo", 2),
	})
	applyAs(t, ns, "argocd-controller", deploymentYAML("guestbook", 3),
		map[string]string{"app.kubernetes.io/instance": "guestbook"},
		map[string]string{"argocd.argoproj.io/tracking-id": "guestbook:apps/Deployment:" + ns + "/guestbook"})
	applyAs(t, ns, "kustomize-controller", deploymentYAML("podinfo", 2),
		map[string]string{"kustomize.toolkit.fluxcd.io/name": "podinfo", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}, nil)

	e := newEngine(t, repo, nil)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	gb := appStatus(t, e, "guestbook")
	if gb.Sync != status.SyncSynced || gb.Owner != "Argo CD Application argocd/guestbook" || gb.OwnerFile != "argocd/guestbook.yaml" || gb.SelfHeal != status.SelfHealOn || !gb.Prune {
		t.Fatalf("objects Argo CD applied must compare Synced, owned by the Application:\n%s owner=%q file=%q heal=%s", describe(gb), gb.Owner, gb.OwnerFile, gb.SelfHeal)
	}
	pi := appStatus(t, e, "podinfo")
	if pi.Sync != status.SyncSynced || pi.Owner != "Flux Kustomization flux-system/podinfo" {
		t.Fatalf("objects Flux applied must compare Synced:\n%s owner=%q", describe(pi), pi.Owner)
	}

	// A person scales the guestbook: drift owned by kubectl, shown, and
	// left alone although the Application says selfHeal.
	deps := enginetest.Clientset(t).AppsV1().Deployments(ns)
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "guestbook", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 7}}
	if _, err := deps.UpdateScale(ctx, "guestbook", s, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := e.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
	}
	gb = appStatus(t, e, "guestbook")
	r, _ := resource(gb, "Deployment", "guestbook")
	f, ok := field(r, "/spec/replicas")
	if gb.Sync != status.SyncOutOfSync || !ok || f.Class != status.OwnerPerson || f.Owners[0].Manager != "kubectl" {
		t.Fatalf("the scale must be drift owned by kubectl:\n%s", describe(gb))
	}
	replicas := func() int32 {
		d, err := deps.Get(ctx, "guestbook", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *d.Spec.Replicas
	}
	if got := replicas(); got != 7 {
		t.Fatalf("kdrift healed an app Argo CD owns: replicas %d", got)
	}

	// A person's sync asks first and names the owner.
	_, err := e.Sync(ctx, "argocd/guestbook", engine.SyncOptions{})
	var owned *engine.OwnedError
	if !errors.As(err, &owned) || owned.Owner != "Argo CD Application argocd/guestbook" || !strings.Contains(err.Error(), "--owned") {
		t.Fatalf("sync of an owned app: %v", err)
	}
	if got := replicas(); got != 7 {
		t.Fatalf("a refused sync applied: replicas %d", got)
	}
	if _, err := e.Sync(ctx, "guestbook", engine.SyncOptions{AllowOwned: true}); err != nil {
		t.Fatal(err)
	}
	if got := replicas(); got != 3 {
		t.Fatalf("a confirmed sync did not apply Git: replicas %d", got)
	}
	d, err := deps.Get(ctx, "guestbook", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, tracked := d.Labels["app.kubernetes.io/managed-by"]; tracked {
		t.Fatalf("kdrift adopted an object Argo CD owns: labels %v", d.Labels)
	}
}

// TestFluxDecryptionSecretRef: a Flux Kustomization's
// spec.decryption.secretRef names the Secret the controller reads its age
// identities from; without a key its SOPS files, and an Argo CD
// Application's, are Encrypted.
func TestFluxDecryptionSecretRef(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "flux-sops")
	id := sopstest.Identity(t)
	files := sopstest.AppFiles(t, "deploy/secure", id)
	files["flux/secure.yaml"] = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: gitops, namespace: ` + ns + `}
spec: {url: "https://git.example.com/team/gitops"}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: secure, namespace: ` + ns + `}
spec:
  sourceRef: {kind: GitRepository, name: gitops}
  path: ./deploy/secure
  targetNamespace: ` + ns + `
  decryption:
    provider: sops
    secretRef: {name: sops-age}
`
	files["argocd/secure.yaml"] = strings.ReplaceAll(strings.ReplaceAll(argoApp(ns), "guestbook", "secure-argo"), "deploy/secure-argo", "deploy/secure")
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", "https://git.example.com/team/gitops.git")
	repo.Commit("Flux with SOPS", files)
	t.Setenv("SOPS_AGE_KEY", "")
	t.Setenv("SOPS_AGE_KEY_FILE", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())

	e := newEngine(t, repo, nil)
	refs, err := e.FluxDecryptionSecrets(ctx)
	if err != nil || len(refs) != 1 || refs[0] != ns+"/sops-age" {
		t.Fatalf("FluxDecryptionSecrets = %v, %v", refs, err)
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"secure", "secure-argo"} {
		if a := appStatus(t, e, name); a.EncryptedObjects() != 2 {
			t.Fatalf("%s without a key must have its two SOPS objects Encrypted:\n%s", name, describe(a))
		}
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sops-age", Namespace: ns}, Data: map[string][]byte{"identity.agekey": []byte(id.String() + "\n")}}
	if _, err := enginetest.Clientset(t).CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.LoadDecryptionSecret(ctx, ns, refs[0][len(ns)+1:]); err != nil {
		t.Fatal(err)
	}
	res, err := e.Sync(ctx, "secure", engine.SyncOptions{AllowOwned: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status.EncryptedObjects() != 0 || res.Status.Sync != status.SyncSynced {
		t.Fatalf("with Flux's decryption Secret:\n%s", describe(res.Status))
	}
	sec, err := enginetest.Clientset(t).CoreV1().Secrets(ns).Get(ctx, "db-credentials", metav1.GetOptions{})
	if err != nil || string(sec.Data["password"]) != sopstest.DBPassword {
		t.Fatalf("not decrypted with the key of Flux's secretRef: %v", err)
	}
	sopstest.NoPlaintext(t, "the sync result", resultText(res))
}
