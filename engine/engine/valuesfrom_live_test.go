package engine_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// TestValuesFromOnlyForLiveRelease: a commit adds a HelmRelease in
// kube-system whose valuesFrom names a Secret there and whose chart (in
// the repository) writes that value, base64-encoded, upper-cased and
// split, into a ConfigMap. While no such HelmRelease is live, or the
// live one does not name the Secret, kdrift reads nothing and says why;
// once the live HelmRelease names it, the ConfigMap that received the
// values is masked as a Secret in every field and in the diff view,
// while an object of the same chart that received none is shown as is.
// No form of the Secret's value is in any status or view.
func TestValuesFromOnlyForLiveRelease(t *testing.T) {
	ctx := context.Background()
	const ns = "kube-system"
	const token = "v1ct1m-t0ken-Zq"
	forms := []string{token, base64.StdEncoding.EncodeToString([]byte(token)), strings.ToUpper(token), strings.Join(strings.Split(token, ""), " ")}
	leak := func(what, s string) {
		t.Helper()
		for _, f := range forms {
			if strings.Contains(s, f) {
				t.Fatalf("%s holds %q:\n%s", what, f, s)
			}
		}
	}
	cs := enginetest.Clientset(t)
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "victim"}, StringData: map[string]string{"token": token}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Secrets(ns).Delete(ctx, "victim", metav1.DeleteOptions{}) })
	// The ConfigMap is live, edited: its fields show as drift.
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stolen"}, Data: map[string]string{"b64": "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().ConfigMaps(ns).Delete(ctx, "stolen", metav1.DeleteOptions{}) })
	const url = "https://git.example.com/team/fleet.git"
	files := map[string]string{
		"clusters/prod/sync.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {url: ` + url + `}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec: {path: ./apps, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
`,
		"apps/kustomization.yaml": "resources: [release.yaml]\n",
		"apps/release.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: hr3, namespace: kube-system}
spec:
  chart:
    spec: {chart: ./charts/leak, sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}}
  valuesFrom:
  - {kind: Secret, name: victim, valuesKey: token, targetPath: tok}
`,
		"charts/leak/Chart.yaml":  "apiVersion: v2\nname: leak\nversion: 0.1.0\n",
		"charts/leak/values.yaml": "tok: none\n",
		"charts/leak/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: stolen}
data:
  b64: {{ .Values.tok | b64enc | quote }}
  up: {{ .Values.tok | upper | quote }}
  split: {{ splitList "" .Values.tok | join " " | quote }}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: calm}
data: {kept: "plain-value"}
`,
	}
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", url)
	repo.Commit("a release that reads a Secret", files)
	installFluxCRDs(t)
	hr := schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}
	liveHR := func(valuesFrom []any) {
		createFlux(t, hr, map[string]any{"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
			"metadata": map[string]any{"name": "hr3", "namespace": ns},
			"spec": map[string]any{"interval": "10m", "chart": map[string]any{"spec": map[string]any{"chart": "./charts/leak",
				"sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system", "namespace": "flux-system"}}}, "valuesFrom": valuesFrom}})
	}
	check := func(want string) status.AppStatus {
		t.Helper()
		e := newEngine(t, repo, nil)
		if err := e.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		a := appStatus(t, e, "hr3")
		leak("status", fmt.Sprintf("%+v", a))
		if want != "" && (a.Sync != status.SyncError || !strings.Contains(a.Error, want)) {
			t.Fatalf("want an error containing %q:\n%s", want, describe(a))
		}
		if want == "" {
			for _, name := range []string{"stolen", "calm"} {
				r, ok := resource(a, "ConfigMap", name)
				if !ok {
					t.Fatalf("no ConfigMap %s:\n%s", name, describe(a))
				}
				d, err := e.Detail(ctx, "hr3", r.Ref)
				if err != nil {
					t.Fatal(err)
				}
				text := fmt.Sprintf("%+v", d)
				leak("the diff view of "+name, text)
				if name == "calm" && !strings.Contains(text, "plain-value") {
					t.Errorf("calm received no Secret value but is masked: %s", text)
				}
				if name == "stolen" && (len(r.Fields) == 0 || strings.Contains(text, "none")) {
					t.Errorf("stolen: want masked drift: %+v\n%s", r, text)
				}
				for _, f := range r.Fields {
					if name == "stolen" && !f.Masked {
						t.Errorf("stolen field %s not masked", f.Path)
					}
				}
			}
		}
		return a
	}
	check("HelmRelease kube-system/hr3 is not in the cluster")
	liveHR([]any{})
	check("spec.valuesFrom[0]: Secret kube-system/victim is not named by the live HelmRelease kube-system/hr3")
	deleteHR := enginetest.Dynamic(t).Resource(hr).Namespace(ns)
	if err := deleteHR.Delete(ctx, "hr3", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	liveHR([]any{map[string]any{"kind": "Secret", "name": "victim", "valuesKey": "token", "targetPath": "tok"}})
	check("")
}
