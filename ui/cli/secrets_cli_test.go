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
