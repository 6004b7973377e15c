package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/sopstest"
)

// TestSOPSCLI: status without a key says Encrypted, for whom and where
// kdrift looked; sync with SOPS_AGE_KEY_FILE applies the decrypted
// values; a hand edit shows in diff masked; the controller decrypts with
// the key of its --decryption-secret. No output holds the plaintext.
func TestSOPSCLI(t *testing.T) {
	ctx := context.Background()
	ns := "sops-cli"
	cs := enginetest.Clientset(t)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	id := sopstest.Identity(t)
	files := sopstest.AppFiles(t, "deploy", id)
	files[".kdrift/app.yaml"] = fmt.Sprintf("apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: %[1]s\nspec:\n  path: deploy\n  destination:\n    namespace: %[1]s\n  syncPolicy:\n    selfHeal: true\n", ns)
	repo := gitRepo(t, files)
	g := []string{"--repo", repo, "--kubeconfig", enginetest.Kubeconfig()}
	t.Setenv("SOPS_AGE_KEY", "")
	t.Setenv("SOPS_AGE_KEY_FILE", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	var outputs []string

	code, out, errOut := kdrift(t, ctx, append([]string{"status", "-o", "json"}, g...)...)
	outputs = append(outputs, out, errOut)
	var doc struct {
		Apps []struct {
			EncryptedObjects int `json:"encryptedObjects"`
			Drifted          []struct {
				Status  string `json:"status"`
				Message string `json:"message"`
			} `json:"drifted"`
		} `json:"apps"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitOK || len(doc.Apps) != 1 || doc.Apps[0].EncryptedObjects != 2 {
		t.Fatalf("status -o json without a key: code %d %v\n%s\n%s", code, err, out, errOut)
	}
	code, out, errOut = kdrift(t, ctx, append([]string{"status"}, g...)...)
	outputs = append(outputs, out, errOut)
	if code != exitOK || !strings.Contains(out, "2 Encrypted") || !strings.Contains(out, id.Recipient().String()) || !strings.Contains(out, "~/.config") && !strings.Contains(out, "sops/age/keys.txt") {
		t.Fatalf("status without a key: code %d\n%s\n%s", code, out, errOut)
	}

	t.Setenv("SOPS_AGE_KEY_FILE", sopstest.KeyFile(t, id))
	code, out, errOut = kdrift(t, ctx, append([]string{"sync", ns}, g...)...)
	outputs = append(outputs, out, errOut)
	if code != exitOK {
		t.Fatalf("sync with the key: code %d\n%s\n%s", code, out, errOut)
	}
	sec, err := cs.CoreV1().Secrets(ns).Get(ctx, "db-credentials", metav1.GetOptions{})
	if err != nil || string(sec.Data["password"]) != sopstest.DBPassword {
		t.Fatalf("db-credentials not applied decrypted: %v", err)
	}
	if _, err := cs.CoreV1().Secrets(ns).Patch(ctx, "db-credentials", types.MergePatchType, []byte(`{"data":{"password":"aGFuZC1lZGl0ZWQ="}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = kdrift(t, ctx, append([]string{"diff", ns}, g...)...)
	outputs = append(outputs, out, errOut)
	if code != exitDrift || !strings.Contains(out, "Secret/"+ns+"/db-credentials  OutOfSync") || !strings.Contains(out, "/data/password\n    value:   ●●●● (differs)") {
		t.Fatalf("diff after a hand edit: code %d\n%s\n%s", code, out, errOut)
	}

	// The controller, with no key but its Secret's, heals the edit.
	t.Setenv("SOPS_AGE_KEY_FILE", "")
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sops-age", Namespace: ns}, Data: map[string][]byte{"identity.agekey": []byte(id.String() + "\n")}}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	var cout, cerr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(cctx, append([]string{"controller", "--decryption-secret", ns + "/sops-age"}, g...), &cliEnv{stdout: &cout, stderr: &cerr})
	}()
	healed := false
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		sec, err := cs.CoreV1().Secrets(ns).Get(ctx, "db-credentials", metav1.GetOptions{})
		if err == nil && string(sec.Data["password"]) == sopstest.DBPassword {
			healed = true
			break
		}
	}
	cancel()
	if code := <-done; code != exitOK || !healed {
		t.Fatalf("controller: exit %d, healed %v\n%s\n%s", code, healed, cout.String(), cerr.String())
	}
	outputs = append(outputs, cout.String(), cerr.String())
	sopstest.NoPlaintext(t, "kdrift's output", outputs...)
}

// TestSealedAndExternalSecretsCLI: a SealedSecret and an ExternalSecret in
// Git, with the Secrets their controllers make (ownerReference and the
// controllers' field managers; the sealed one with the labels
// sealed-secrets copies from its parent): status says Synced and lists
// each Secret as its parent's child, diff finds no drift, and sync
// --prune leaves both Secrets alone.
func TestSealedAndExternalSecretsCLI(t *testing.T) {
	ctx := context.Background()
	ns := "sealed-cli"
	cs := enginetest.Clientset(t)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	enginetest.InstallCRDs(t, "sealedsecrets.bitnami.com.yaml", "externalsecrets.external-secrets.io.yaml")
	repo := gitRepo(t, map[string]string{
		".kdrift/app.yaml":     fmt.Sprintf("apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: %[1]s\nspec:\n  path: deploy\n  destination:\n    namespace: %[1]s\n  syncPolicy:\n    selfHeal: true\n    prune: true\n", ns),
		"deploy/sealed.yaml":   "apiVersion: bitnami.com/v1alpha1\nkind: SealedSecret\nmetadata:\n  name: db\nspec:\n  encryptedData:\n    password: AgBy3i4OJSWK+PiTySYZZA==\n  template:\n    type: Opaque\n",
		"deploy/external.yaml": "apiVersion: external-secrets.io/v1beta1\nkind: ExternalSecret\nmetadata:\n  name: api\nspec:\n  secretStoreRef: {name: vault, kind: ClusterSecretStore}\n  target: {name: api-token}\n  data:\n  - secretKey: token\n    remoteRef: {key: prod/api, property: token}\n",
		"deploy/cm.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: prod\n",
	})
	g := []string{"--repo", repo, "--kubeconfig", enginetest.Kubeconfig()}
	if code, out, errOut := kdrift(t, ctx, append([]string{"sync", ns}, g...)...); code != exitOK {
		t.Fatalf("first sync: code %d\n%s\n%s", code, out, errOut)
	}
	dyn := enginetest.Dynamic(t)
	sealed, err := dyn.Resource(schema.GroupVersionResource{Group: "bitnami.com", Version: "v1alpha1", Resource: "sealedsecrets"}).Namespace(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	external, err := dyn.Resource(schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1beta1", Resource: "externalsecrets"}).Namespace(ns).Get(ctx, "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	controller := true
	owned := func(o *unstructured.Unstructured) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Name: o.GetName(), UID: o.GetUID(), Controller: &controller}}
	}
	for _, s := range []struct {
		sec     *corev1.Secret
		manager string
	}{
		{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns, Labels: sealed.GetLabels(), Annotations: sealed.GetAnnotations(), OwnerReferences: owned(sealed)},
			Data: map[string][]byte{"password": []byte("unsealed")}}, "sealed-secrets-controller"},
		{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "api-token", Namespace: ns, OwnerReferences: owned(external)},
			Data: map[string][]byte{"token": []byte("from-vault")}}, "external-secrets"},
	} {
		if _, err := cs.CoreV1().Secrets(ns).Create(ctx, s.sec, metav1.CreateOptions{FieldManager: s.manager}); err != nil {
			t.Fatal(err)
		}
	}

	code, out, errOut := kdrift(t, ctx, append([]string{"status", ns, "-o", "json"}, g...)...)
	var doc struct {
		Apps []struct {
			Sync      string `json:"sync"`
			Drifted   []json.RawMessage
			Generated []struct {
				Ref    struct{ Kind, Name string }  `json:"ref"`
				Status string                       `json:"status"`
				Parent *struct{ Kind, Name string } `json:"parent"`
			} `json:"generated"`
		} `json:"apps"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitOK || len(doc.Apps) != 1 {
		t.Fatalf("status -o json: code %d %v\n%s\n%s", code, err, out, errOut)
	}
	a := doc.Apps[0]
	children := map[string]string{}
	for _, r := range a.Generated {
		if r.Ref.Kind == "Secret" && r.Status == "Generated" && r.Parent != nil {
			children[r.Ref.Name] = r.Parent.Kind + "/" + r.Parent.Name
		}
	}
	if a.Sync != "Synced" || len(a.Drifted) != 0 || children["db"] != "SealedSecret/db" || children["api-token"] != "ExternalSecret/api" {
		t.Fatalf("want Synced with both Secrets as children:\n%s", out)
	}
	if code, out, errOut := kdrift(t, ctx, append([]string{"diff", ns}, g...)...); code != exitOK {
		t.Fatalf("diff: code %d, want no drift\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := kdrift(t, ctx, append([]string{"sync", ns, "--prune"}, g...)...); code != exitOK || strings.Contains(out, "Secret/") {
		t.Fatalf("sync --prune: code %d\n%s\n%s", code, out, errOut)
	}
	for _, name := range []string{"db", "api-token"} {
		if _, err := cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Fatalf("sync --prune removed the generated Secret %s: %v", name, err)
		}
	}
}
