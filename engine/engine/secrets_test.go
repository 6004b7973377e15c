package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/sops"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
	"kdrift.dev/kdrift/internal/sopstest"
)

// eventLog keeps every event of an engine as JSON, to grep for plaintext.
type eventLog struct {
	mu  sync.Mutex
	out strings.Builder
}

func recordEvents(t *testing.T, e *engine.Engine) *eventLog {
	r := &eventLog{}
	events, stop := e.SubscribeAll()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range events {
			js, err := json.Marshal(ev)
			r.mu.Lock()
			if err != nil {
				r.out.WriteString(err.Error())
			}
			r.out.Write(js)
			r.out.WriteByte('\n')
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() { stop(); <-done })
	return r
}

func (r *eventLog) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

func secretNames(t *testing.T, ns string) []string {
	t.Helper()
	list, err := enginetest.Clientset(t).CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range list.Items {
		out = append(out, s.Name)
	}
	return out
}

func resultText(res engine.SyncResult) string {
	js, _ := json.Marshal(res)
	return string(js)
}

// TestSOPSSecrets: a kustomize app with a SOPS-encrypted Secret and a
// secretGenerator over an encrypted dotenv file. Without a key both are
// Encrypted, nothing of them is applied and the ConfigMap syncs; with the
// key in SOPS_AGE_KEY_FILE they are applied decrypted and heal after a
// hand edit; a keyless engine afterwards neither applies nor prunes them.
// No status, result or event ever holds the plaintext.
func TestSOPSSecrets(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "sops")
	id, repo := sopsRepo(t, "secure", ns, true)

	// No key: Encrypted, never applied, the rest syncs.
	noKeys, err := sops.LoadKeyring(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	bare := newEngine(t, repo, func(o *engine.Options) { o.Keys = noKeys })
	rec := recordEvents(t, bare)
	res, err := bare.Sync(ctx, "secure", engine.SyncOptions{Prune: true})
	if err != nil {
		t.Fatal(err)
	}
	a := res.Status
	if r, ok := resource(a, "ConfigMap", "settings"); !ok || r.Status != status.ResourceSynced {
		t.Fatalf("the ConfigMap did not sync:\n%s", describe(a))
	}
	db, ok := resource(a, "Secret", "db-credentials")
	if !ok || db.Status != status.ResourceEncrypted || !strings.Contains(db.Message, "deploy/secure/secret.enc.yaml: encrypted for "+id.Recipient().String()) ||
		!strings.Contains(db.Message, "no matching identity in SOPS_AGE_KEY (unset), SOPS_AGE_KEY_FILE (unset)") {
		t.Fatalf("want db-credentials Encrypted, saying for whom and where kdrift looked:\n%s", describe(a))
	}
	encrypted := 0
	for _, r := range a.Resources {
		if r.Status == status.ResourceEncrypted {
			encrypted++
		}
	}
	if encrypted != 2 || a.Sync != status.SyncSynced || a.EncryptedObjects() != 2 {
		t.Fatalf("want 2 Encrypted Secrets and the app otherwise Synced:\n%s", describe(a))
	}
	if got := secretNames(t, ns); len(got) != 0 {
		t.Fatalf("Secrets applied without a key: %v", got)
	}
	for _, o := range res.Objects {
		if o.Ref.Kind == "Secret" {
			t.Fatalf("the sync touched %s: %+v", o.Ref, o)
		}
	}

	// The key in SOPS_AGE_KEY_FILE: applied decrypted.
	t.Setenv("SOPS_AGE_KEY_FILE", sopstest.KeyFile(t, id))
	keys, err := sops.LoadKeyring(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	keyed := newEngine(t, repo, func(o *engine.Options) { o.Keys = keys })
	rec2 := recordEvents(t, keyed)
	res2, err := keyed.Sync(ctx, "secure", engine.SyncOptions{Prune: true})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Status.Sync != status.SyncSynced || res2.Failed() > 0 || res2.Status.EncryptedObjects() != 0 {
		t.Fatalf("with the key:\n%s\n%s", describe(res2.Status), resultText(res2))
	}
	cs := enginetest.Clientset(t)
	sec, err := cs.CoreV1().Secrets(ns).Get(ctx, "db-credentials", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(sec.Data["password"]) != sopstest.DBPassword || len(sec.Data) != 2 {
		t.Fatalf("db-credentials holds keys %v, not the decrypted values", slices.Sorted(maps.Keys(sec.Data)))
	}
	var apiEnv *corev1.Secret
	list, err := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range list.Items {
		if strings.HasPrefix(s.Name, "api-env-") {
			apiEnv = &list.Items[i]
		}
	}
	if apiEnv == nil || string(apiEnv.Data["API_TOKEN"]) != sopstest.APIToken || len(apiEnv.Data) != 2 {
		t.Fatalf("the generated Secret is missing or not decrypted: %v", secretNames(t, ns))
	}

	// A hand edit is drift, masked, and healed.
	patch := []byte(`{"data":{"password":"` + "aGFuZC1lZGl0ZWQ=" + `"}}`)
	if _, err := cs.CoreV1().Secrets(ns).Patch(ctx, "db-credentials", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	viewer := newEngine(t, repo, func(o *engine.Options) { o.Keys = keys; o.ReadOnly = true })
	if err := viewer.Reconcile(ctx, "secure"); err != nil {
		t.Fatal(err)
	}
	va := appStatus(t, viewer, "secure")
	vr, _ := resource(va, "Secret", "db-credentials")
	if f, ok := field(vr, "/data/password"); vr.Status != status.ResourceOutOfSync || !ok || !f.Masked {
		t.Fatalf("want the hand edit as masked drift:\n%s", describe(va))
	}
	detail, err := viewer.Detail(ctx, "secure", vr.Ref)
	if err != nil {
		t.Fatal(err)
	}
	djs, _ := json.Marshal(detail)
	sopstest.NoPlaintext(t, "the viewer", describe(va), string(djs))
	if err := keyed.Reconcile(ctx, "secure"); err != nil {
		t.Fatal(err)
	}
	sec, err = cs.CoreV1().Secrets(ns).Get(ctx, "db-credentials", metav1.GetOptions{})
	if err != nil || string(sec.Data["password"]) != sopstest.DBPassword {
		t.Fatalf("not healed: %v", err)
	}

	// A keyless engine later: compares key names, applies and prunes
	// nothing (the live api-env-… has another hash suffix than its
	// keyless render).
	res3, err := bare.Sync(ctx, "secure", engine.SyncOptions{Prune: true})
	if err != nil {
		t.Fatal(err)
	}
	db, _ = resource(res3.Status, "Secret", "db-credentials")
	if db.Status != status.ResourceEncrypted || !strings.Contains(db.Message, "key names, type and metadata match") {
		t.Fatalf("keyless compare of db-credentials:\n%s", describe(res3.Status))
	}
	if _, err := cs.CoreV1().Secrets(ns).Get(ctx, apiEnv.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("a keyless sync pruned %s: %v\n%s", apiEnv.Name, err, describe(res3.Status))
	}
	for _, o := range res3.Objects {
		if o.Ref.Kind == "Secret" {
			t.Fatalf("the keyless sync touched %s: %+v", o.Ref, o)
		}
	}
	sopstest.NoPlaintext(t, "statuses, results and events", describe(a), describe(res2.Status), describe(res3.Status),
		resultText(res), resultText(res2), resultText(res3), rec.String(), rec2.String())
}

// sopsRepo commits sopstest's app as App name in ns, with a fresh age
// identity, and clears every place sops looks for keys.
func sopsRepo(t *testing.T, name, ns string, prune bool) (*age.X25519Identity, *gittest.Repo) {
	t.Helper()
	id := sopstest.Identity(t)
	files := sopstest.AppFiles(t, "deploy/secure", id)
	files[".kdrift/app.yaml"] = appYAML(name, "deploy/secure", ns, true, prune, "")
	repo := gittest.Init(t)
	repo.Commit("app", files)
	t.Setenv("SOPS_AGE_KEY", "")
	t.Setenv("SOPS_AGE_KEY_FILE", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	return id, repo
}

// TestDecryptionSecret: the controller's keys come from a Secret's
// .agekey keys; a missing Secret or one without such a key is an error
// that says what to do.
func TestDecryptionSecret(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "sops-ctl")
	id, repo := sopsRepo(t, "secure-ctl", ns, false)
	e := newEngine(t, repo, nil)
	if _, err := e.LoadDecryptionSecret(ctx, ns, "sops-age"); err == nil || !strings.Contains(err.Error(), "Secret "+ns+"/sops-age not found") {
		t.Fatalf("missing Secret: %v", err)
	}
	cs := enginetest.Clientset(t)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sops-age", Namespace: ns}, Data: map[string][]byte{"README": []byte("keys go in *.agekey")}}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.LoadDecryptionSecret(ctx, ns, "sops-age"); err == nil || !strings.Contains(err.Error(), "no key ending in .agekey") {
		t.Fatalf("Secret without .agekey: %v", err)
	}
	s.Data["identity.agekey"] = []byte("# test\n" + id.String() + "\n")
	if _, err := cs.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.LoadDecryptionSecret(ctx, ns, "sops-age"); err != nil {
		t.Fatal(err)
	}
	res, err := e.Sync(ctx, "secure-ctl", engine.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status.Sync != status.SyncSynced || res.Status.EncryptedObjects() != 0 {
		t.Fatalf("with the Secret's key:\n%s", describe(res.Status))
	}
	sec, err := cs.CoreV1().Secrets(ns).Get(ctx, "db-credentials", metav1.GetOptions{})
	if err != nil || string(sec.Data["password"]) != sopstest.DBPassword {
		t.Fatalf("not decrypted from the Secret's key: %v", err)
	}
	sopstest.NoPlaintext(t, "the sync result", resultText(res))
}

// TestSealedSecretChild: a SealedSecret in Git is compared as itself; the
// Secret its controller makes (here made by the test, with the
// controller's ownerReference and the SealedSecret's labels copied, as
// the controller does) is Generated under it, not drift, and never
// pruned.
func TestSealedSecretChild(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "sealed")
	enginetest.InstallCRDs(t, "sealedsecrets.bitnami.com.yaml")
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/app.yaml":   appYAML("sealed", "deploy/app", ns, true, true, ""),
		"deploy/app/ss.yaml": "apiVersion: bitnami.com/v1alpha1\nkind: SealedSecret\nmetadata:\n  name: db\nspec:\n  encryptedData:\n    password: AgBy3i4OJSWK+PiTySYZZA==\n",
		"deploy/app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
	})
	e := newEngine(t, repo, nil)
	var ss *unstructured.Unstructured
	eventually(t, "the SealedSecret applied", func() bool {
		res, err := e.Sync(ctx, "sealed", engine.SyncOptions{})
		if err != nil || res.Failed() > 0 {
			return false
		}
		ss, err = enginetest.Dynamic(t).Resource(schema.GroupVersionResource{Group: "bitnami.com", Version: "v1alpha1", Resource: "sealedsecrets"}).Namespace(ns).Get(ctx, "db", metav1.GetOptions{})
		return err == nil
	})
	// The controller's Secret: owned by the SealedSecret, labels copied.
	controller := true
	gen := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns, Labels: ss.GetLabels(), Annotations: ss.GetAnnotations(),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "bitnami.com/v1alpha1", Kind: "SealedSecret", Name: "db", UID: ss.GetUID(), Controller: &controller}}},
		Data: map[string][]byte{"password": []byte("unsealed")}}
	if _, err := enginetest.Clientset(t).CoreV1().Secrets(ns).Create(ctx, gen, metav1.CreateOptions{FieldManager: "sealed-secrets-controller"}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Sync(ctx, "sealed", engine.SyncOptions{Prune: true})
	if err != nil {
		t.Fatal(err)
	}
	a := res.Status
	child, ok := resource(a, "Secret", "db")
	if !ok || child.Status != status.ResourceGenerated || child.Parent == nil || child.Parent.Kind != "SealedSecret" || child.Parent.Name != "db" {
		t.Fatalf("want the Secret Generated under the SealedSecret:\n%s", describe(a))
	}
	if r, ok := resource(a, "SealedSecret", "db"); !ok || r.Status != status.ResourceSynced || a.Sync != status.SyncSynced {
		t.Fatalf("want the SealedSecret and the app Synced:\n%s", describe(a))
	}
	if _, err := enginetest.Clientset(t).CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{}); err != nil {
		t.Fatalf("prune removed the generated Secret: %v", err)
	}
}

// TestExternalSecretChild: the Secret the external-secrets controller makes
// carries none of the ExternalSecret's labels; it is found by the
// ExternalSecret's spec.target.name and shown Generated under it when its
// controller ownerReference points at the ExternalSecret, or when, with
// no ownerReference (creationPolicy Orphan), the controller's field
// manager wrote it. A hand-made Secret of that name is neither.
func TestExternalSecretChild(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "external")
	enginetest.InstallCRDs(t, "externalsecrets.external-secrets.io.yaml")
	es := func(name, target string) string {
		return fmt.Sprintf("apiVersion: external-secrets.io/v1beta1\nkind: ExternalSecret\nmetadata:\n  name: %s\nspec:\n  refreshInterval: 1h\n  secretStoreRef: {name: vault, kind: ClusterSecretStore}\n  target: {name: %s, creationPolicy: Owner}\n  data:\n  - secretKey: password\n    remoteRef: {key: prod/db, property: password}\n", name, target)
	}
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/app.yaml":       appYAML("external", "deploy/app", ns, true, true, ""),
		"deploy/app/owned.yaml":  es("db", "db-credentials"),
		"deploy/app/orphan.yaml": es("api", "api-token"),
		"deploy/app/hand.yaml":   es("smtp", "smtp"),
	})
	e := newEngine(t, repo, nil)
	var db *unstructured.Unstructured
	eventually(t, "the ExternalSecrets applied", func() bool {
		res, err := e.Sync(ctx, "external", engine.SyncOptions{})
		if err != nil || res.Failed() > 0 {
			return false
		}
		db, err = enginetest.Dynamic(t).Resource(schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1beta1", Resource: "externalsecrets"}).Namespace(ns).Get(ctx, "db", metav1.GetOptions{})
		return err == nil
	})
	controller := true
	secrets := enginetest.Clientset(t).CoreV1().Secrets(ns)
	for _, s := range []struct {
		sec     *corev1.Secret
		manager string
	}{
		{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-credentials", Namespace: ns,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "external-secrets.io/v1beta1", Kind: "ExternalSecret", Name: "db", UID: db.GetUID(), Controller: &controller}}},
			Data: map[string][]byte{"password": []byte("from-vault")}}, "external-secrets"},
		{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "api-token", Namespace: ns}, Data: map[string][]byte{"token": []byte("from-vault")}}, "external-secrets"},
		{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "smtp", Namespace: ns}, Data: map[string][]byte{"password": []byte("by-hand")}}, "kubectl-create"},
	} {
		if _, err := secrets.Create(ctx, s.sec, metav1.CreateOptions{FieldManager: s.manager}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := e.Sync(ctx, "external", engine.SyncOptions{Prune: true})
	if err != nil {
		t.Fatal(err)
	}
	a := res.Status
	for secret, parent := range map[string]string{"db-credentials": "db", "api-token": "api"} {
		child, ok := resource(a, "Secret", secret)
		if !ok || child.Status != status.ResourceGenerated || child.Parent == nil || child.Parent.Kind != "ExternalSecret" || child.Parent.Name != parent {
			t.Fatalf("want Secret %s Generated under ExternalSecret %s:\n%s", secret, parent, describe(a))
		}
	}
	if _, ok := resource(a, "Secret", "smtp"); ok {
		t.Fatalf("a hand-made Secret is listed as the ExternalSecret's child:\n%s", describe(a))
	}
	if a.Sync != status.SyncSynced {
		t.Fatalf("want the app Synced:\n%s", describe(a))
	}
	for _, name := range []string{"db-credentials", "api-token", "smtp"} {
		if _, err := secrets.Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Fatalf("Secret %s: %v", name, err)
		}
	}
}
