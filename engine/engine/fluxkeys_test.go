package engine_test

import (
	"context"
	"strings"
	"testing"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
	"kdrift.dev/kdrift/internal/sopstest"
)

// TestFluxKeysScoped: without --decryption-secret, a Flux Kustomization's
// spec.decryption.secretRef is read from the Kustomization's own
// namespace, and its keys decrypt that Kustomization's files only, as
// Flux's kustomize-controller scopes them. Two namespaces each hold a
// Secret named sops-age with their own identity; a Kustomization whose
// files are encrypted for the other namespace's identity stays Encrypted,
// and one naming a Secret that exists only in another namespace is not
// given it.
func TestFluxKeysScoped(t *testing.T) {
	ctx := context.Background()
	ns1, ns2 := namespace(t, "flux-keys-a"), namespace(t, "flux-keys-b")
	id1, id2 := sopstest.Identity(t), sopstest.Identity(t)
	files := map[string]string{}
	kz := `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: gitops, namespace: NS}
spec: {url: "https://git.example.com/team/gitops"}
`
	add := func(name, ns, secret string, id *age.X25519Identity) {
		for k, v := range sopstest.AppFiles(t, "deploy/"+name, id) {
			files[k] = v
		}
		kz += `---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: ` + name + `, namespace: ` + ns + `}
spec:
  sourceRef: {kind: GitRepository, name: gitops, namespace: ` + ns1 + `}
  path: ./deploy/` + name + `
  targetNamespace: ` + ns + `
  prune: true
  decryption:
    provider: sops
    secretRef: {name: ` + secret + `}
`
	}
	add("one", ns1, "sops-age", id1)
	add("two", ns2, "sops-age", id2)
	add("three", ns2, "sops-age", id1) // ns2's key cannot open it; ns1's is not its own
	add("four", ns2, "one-only", id1)  // one-only exists in ns1 only
	add("five", ns1, "sops-age", id1)  // live, naming another Secret
	add("six", ns1, "sops-age", id1)   // only in Git
	files["flux/apps.yaml"] = strings.Replace(kz, "NS", ns1, 1)
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", "https://git.example.com/team/gitops.git")
	repo.Commit("two teams", files)
	t.Setenv("SOPS_AGE_KEY", "")
	t.Setenv("SOPS_AGE_KEY_FILE", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())

	cs := enginetest.Clientset(t)
	for _, s := range []struct {
		ns, name string
		id       *age.X25519Identity
	}{{ns1, "sops-age", id1}, {ns2, "sops-age", id2}, {ns1, "one-only", id1}} {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: s.ns}, Data: map[string][]byte{"identity.agekey": []byte(s.id.String() + "\n")}}
		if _, err := cs.CoreV1().Secrets(s.ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Keys are read only for a live Kustomization that names them.
	installFluxCRDs(t)
	for _, k := range []struct{ name, ns, secret string }{{"one", ns1, "sops-age"}, {"two", ns2, "sops-age"}, {"three", ns2, "sops-age"}, {"four", ns2, "one-only"}, {"five", ns1, "other"}} {
		createFlux(t, schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}, map[string]any{
			"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "metadata": map[string]any{"name": k.name, "namespace": k.ns},
			"spec": map[string]any{"interval": "10m", "path": "./deploy/" + k.name, "prune": true, "sourceRef": map[string]any{"kind": "GitRepository", "name": "gitops", "namespace": ns1},
				"decryption": map[string]any{"provider": "sops", "secretRef": map[string]any{"name": k.secret}}},
		})
	}

	e := newEngine(t, repo, nil)
	_, warnings, err := e.LoadFluxDecryptionKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range warnings {
		got = append(got, w.Error())
	}
	all := strings.Join(got, "\n")
	if len(warnings) != 3 || !strings.Contains(all, "app four: Flux's decryption Secret "+ns2+"/one-only not found") ||
		!strings.Contains(all, "app five: Flux's decryption Secret "+ns1+"/sops-age not read: the live Kustomization "+ns1+"/five names Secret \"other\"") ||
		!strings.Contains(all, "app six: Flux's decryption Secret "+ns1+"/sops-age not read: Kustomization "+ns1+"/six is not in the cluster") {
		t.Fatalf("warnings:\n%s\nwant four's Secret not found, five's and six's not read", all)
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"one": 0, "two": 0, "three": 2, "four": 2, "five": 2, "six": 2} {
		if got := appStatus(t, e, name).EncryptedObjects(); got != want {
			t.Errorf("%s has %d Encrypted objects, want %d:\n%s", name, got, want, describe(appStatus(t, e, name)))
		}
	}
}
