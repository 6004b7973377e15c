package cli

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/internal/enginetest"
)

// TestValuesFromSecretCLI: a commit adds a HelmRelease in kube-system
// whose valuesFrom names the Secret victim there, and a chart that
// writes it base64-encoded, upper-cased and split into a ConfigMap.
// diff, status and sync say the HelmRelease is not live and read
// nothing, and create nothing; once the live HelmRelease names the
// Secret, diff shows the ConfigMap's fields masked. No output holds any
// form of the value.
func TestValuesFromSecretCLI(t *testing.T) {
	ctx := context.Background()
	const ns = "kube-system"
	const token = "v1ct1m-cli-t0ken"
	cs := enginetest.Clientset(t)
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "victim-cli"}, StringData: map[string]string{"token": token}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Secrets(ns).Delete(ctx, "victim-cli", metav1.DeleteOptions{}) })
	enginetest.InstallCRDs(t, "gitrepositories.source.toolkit.fluxcd.io.yaml", "kustomizations.kustomize.toolkit.fluxcd.io.yaml", "helmreleases.helm.toolkit.fluxcd.io.yaml")
	files := map[string]string{
		"clusters/prod/sync.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: flux-system, namespace: flux-system}\nspec: {url: https://git.example.com/team/fleet.git}\n---\n" +
			"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system}\nspec: {path: ./apps, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}\n",
		"apps/kustomization.yaml": "resources: [release.yaml]\n",
		"apps/release.yaml": "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: hr3, namespace: kube-system}\nspec:\n  chart:\n    spec: {chart: ./charts/leak, sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}}\n" +
			"  valuesFrom:\n  - {kind: Secret, name: victim-cli, valuesKey: token, targetPath: tok}\n",
		"charts/leak/Chart.yaml":  "apiVersion: v2\nname: leak\nversion: 0.1.0\n",
		"charts/leak/values.yaml": "tok: none\n",
		"charts/leak/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stolen-cli}\ndata:\n  b64: {{ .Values.tok | b64enc | quote }}\n" +
			"  up: {{ .Values.tok | upper | quote }}\n  split: {{ splitList \"\" .Values.tok | join \" \" | quote }}\n",
	}
	repo := gitRepo(t, files)
	git(t, repo, "remote", "add", "origin", "https://git.example.com/team/fleet.git")
	g := []string{"--repo", repo, "--kubeconfig", enginetest.Kubeconfig()}
	var outputs []string
	run := func(args ...string) (int, string) {
		code, out, errOut := kdrift(t, ctx, append(args, g...)...)
		outputs = append(outputs, out, errOut)
		return code, out + errOut
	}
	for _, args := range [][]string{{"diff", "hr3"}, {"status"}, {"sync", "hr3", "--owned"}} {
		// status reports the app's error and exits 0, as for any app.
		if code, out := run(args...); code == exitOK && args[0] != "status" || !strings.Contains(out, "HelmRelease kube-system/hr3 is not in the cluster") {
			t.Errorf("%v: code %d\n%s", args, code, out)
		}
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "stolen-cli", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("sync wrote the ConfigMap (or it cannot be checked: %v)", err)
	}

	hr := enginetest.Dynamic(t).Resource(schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}).Namespace(ns)
	live := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
		"metadata": map[string]any{"name": "hr3", "namespace": ns},
		"spec": map[string]any{"interval": "10m", "chart": map[string]any{"spec": map[string]any{"chart": "./charts/leak", "sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system", "namespace": "flux-system"}}},
			"valuesFrom": []any{map[string]any{"kind": "Secret", "name": "victim-cli", "valuesKey": "token", "targetPath": "tok"}}}}}
	if _, err := hr.Create(ctx, live, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hr.Delete(ctx, "hr3", metav1.DeleteOptions{}) })
	// A live ConfigMap of that name, edited: its fields show as drift.
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stolen-cli"}, Data: map[string]string{"b64": "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().ConfigMaps(ns).Delete(ctx, "stolen-cli", metav1.DeleteOptions{}) })
	code, out := run("diff", "hr3")
	t.Logf("diff hr3:\n%s", out)
	if code != exitDrift || !strings.Contains(out, "ConfigMap/kube-system/stolen-cli") || !strings.Contains(out, "●●●●") {
		t.Errorf("diff with the live HelmRelease: code %d\n%s", code, out)
	}
	run("diff", "hr3", "-o", "json")
	forms := []string{token, base64.StdEncoding.EncodeToString([]byte(token)), strings.ToUpper(token), strings.Join(strings.Split(token, ""), " ")}
	for _, o := range outputs {
		for _, f := range forms {
			if strings.Contains(o, f) {
				t.Errorf("an output holds %q:\n%s", f, o)
			}
		}
	}
}
