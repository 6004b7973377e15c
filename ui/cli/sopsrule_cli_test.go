package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/engine/publish"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/hostile"
	"kdrift.dev/kdrift/internal/sopstest"
)

// TestSOPSPlaintextOnlyInSecretsCLI: with the age key present, status
// over apps that ask for a SOPS file's plaintext outside a Secret
// (Jsonnet, a chart's .Files, a configMapGenerator over a copy of the
// ciphertext, ...) says Error naming the file; sync of the
// configMapGenerator app creates no ConfigMap; no output holds the
// plaintext in any form, and the app beside them syncs its Secrets.
func TestSOPSPlaintextOnlyInSecretsCLI(t *testing.T) {
	ctx := context.Background()
	ns := "sops-rule-cli"
	cs := enginetest.Clientset(t)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	app := func(name string) string {
		return fmt.Sprintf("apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: %s\nspec:\n  path: deploy/%s\n  destination:\n    namespace: %s\n", name, name, ns)
	}
	id := sopstest.Identity(t)
	files := sopstest.AppFiles(t, "deploy/good", id)
	files[".kdrift/good.yaml"] = app("good")
	cases := hostile.SOPSCases(t, id)
	for _, c := range cases {
		files[".kdrift/"+c.Name+".yaml"] = app(c.Name)
		for f, body := range c.Files {
			files[f] = body
		}
	}
	g := []string{"--repo", gitRepo(t, files), "--kubeconfig", enginetest.Kubeconfig()}
	t.Setenv("SOPS_AGE_KEY", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("SOPS_AGE_KEY_FILE", sopstest.KeyFile(t, id))
	var outputs []string
	do := func(args ...string) (int, string) {
		code, out, errOut := kdrift(t, ctx, append(args, g...)...)
		outputs = append(outputs, out, errOut)
		return code, out + errOut
	}

	if code, out := do("sync", "good"); code != exitOK {
		t.Fatalf("sync good: code %d\n%s", code, out)
	}
	code, out := do("sync", "sops-configmap")
	if code == exitOK || !strings.Contains(out, "deploy/sops-configmap/x.env is SOPS-encrypted") {
		t.Errorf("sync sops-configmap: code %d\n%s", code, out)
	}
	cms, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		if strings.HasPrefix(cm.Name, "stolen") {
			t.Errorf("sync created ConfigMap %s: %v", cm.Name, cm.Data)
		}
	}
	if _, err := cs.CoreV1().Secrets(ns).Get(ctx, "db-credentials", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		t.Errorf("the good app's Secret was not synced")
	}
	do("diff", "sops-configmap")
	do("diff", "sops-jsonnet")
	do("status")
	_, js := do("status", "-o", "json")
	var doc struct {
		Apps []struct {
			Name  string `json:"name"`
			Sync  string `json:"sync"`
			Error string `json:"error"`
		} `json:"apps"`
	}
	if err := json.Unmarshal([]byte(outputs[len(outputs)-2]), &doc); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, js)
	}
	got := map[string]string{}
	for _, a := range doc.Apps {
		got[a.Name] = a.Sync + " " + a.Error
	}
	if !strings.HasPrefix(got["good"], "Synced") {
		t.Errorf("good = %q, want Synced", got["good"])
	}
	for _, c := range cases {
		if !strings.HasPrefix(got[c.Name], "Error") || !strings.Contains(got[c.Name], c.Want) {
			t.Errorf("%s = %q, want Error containing %q", c.Name, got[c.Name], c.Want)
		}
	}
	// The controller reports the same errors; its output, events and
	// published AppStatuses hold no plaintext either.
	cctx, cancel := context.WithCancel(ctx)
	var cout, cerr syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(cctx, append([]string{"controller"}, g...), &cliEnv{stdout: &cout, stderr: &cerr}) }()
	reported := false
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && !reported; time.Sleep(200 * time.Millisecond) {
		reported = strings.Contains(cout.String()+cerr.String(), "deploy/sops-configmap/x.env is SOPS-encrypted")
	}
	if reported {
		// One more pass's worth of publishing before it stops.
		time.Sleep(2 * time.Second)
	}
	cancel()
	<-done
	outputs = append(outputs, cout.String(), cerr.String())
	if !reported {
		t.Errorf("the controller did not report the configMapGenerator app's error:\n%s\n%s", cout.String(), cerr.String())
	}
	if list, err := enginetest.Dynamic(t).Resource(publish.GVR).Namespace("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, it := range list.Items {
			js, _ := it.MarshalJSON()
			outputs = append(outputs, string(js))
		}
	}
	for _, o := range outputs {
		if leak := hostile.Leak(o); leak != "" {
			t.Errorf("an output holds %q:\n%s", leak, o)
		}
	}
	sopstest.NoPlaintext(t, "kdrift's output", outputs...)
}
