package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"kdrift.dev/kdrift/internal/enginetest"
)

var kustomizationsGVR = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}

// applyKustomization server-side applies the live Kustomization podinfo
// in ns as its parent, the Flux Kustomization flux-system/flux-system,
// does: kustomize-controller's field manager and labels; suspend as given
// (nil: not written).
func applyKustomization(t *testing.T, ns string, suspend *bool) {
	t.Helper()
	spec := map[string]any{"interval": "10m", "path": "./deploy/podinfo", "prune": true,
		"sourceRef": map[string]any{"kind": "GitRepository", "name": "gitops"}}
	if suspend != nil {
		spec["suspend"] = *suspend
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "podinfo", "namespace": ns, "labels": map[string]any{
			"kustomize.toolkit.fluxcd.io/name": "flux-system", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}},
		"spec": spec,
	}}
	body, err := obj.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	force := true
	if _, err := enginetest.Dynamic(t).Resource(kustomizationsGVR).Namespace(ns).Patch(context.Background(), "podinfo", types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "kustomize-controller", Force: &force}); err != nil {
		t.Fatal(err)
	}
}

// TestChannelFreezeSuspendsTheLiveKustomization: with main protected, `kdrift
// freeze` of an app Flux owns goes to the incident channel and suspends
// the live Kustomization (Flux reads main only), and says so; `status`
// says when the parent Kustomization has put suspend back; `unfreeze`
// puts the live object back as it was. Without a cluster, the freeze
// exits 3 and prints the kubectl command that suspends it by hand.
func TestChannelFreezeSuspendsTheLiveKustomization(t *testing.T) {
	ctx := context.Background()
	const ns = "cli-ownerpause"
	if _, err := enginetest.Clientset(t).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	enginetest.InstallCRDs(t, "kustomizations.kustomize.toolkit.fluxcd.io.yaml")
	t.Setenv("KDRIFT_AUTHOR", "Lao Li <lao.li@example.com>")
	root := t.TempDir()
	remote := filepath.Join(root, "remote.git")
	git(t, root, "init", "-q", "--bare", "-b", "main", remote)
	seed := gitRepo(t, map[string]string{
		"flux/podinfo.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: gitops, namespace: ` + ns + `}
spec: {url: "file://` + remote + `"}
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
		"deploy/podinfo/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: podinfo}\ndata: {a: b}\n",
	})
	git(t, seed, "push", "-q", remote, "main")
	hook := "#!/bin/sh\nwhile read old new ref; do\n  [ \"$ref\" = refs/heads/main ] && { echo 'protected branch: changes go through a pull request' >&2; exit 1; }\ndone\nexit 0\n"
	if err := os.WriteFile(filepath.Join(remote, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(root, "clone")
	git(t, root, "clone", "-q", remote, clone)
	applyKustomization(t, ns, nil)
	g := []string{"--repo", clone, "--kubeconfig", enginetest.Kubeconfig()}
	live := func() *unstructured.Unstructured {
		obj, err := enginetest.Dynamic(t).Resource(kustomizationsGVR).Namespace(ns).Get(ctx, "podinfo", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return obj
	}

	code, out, errOut := kdrift(t, ctx, append([]string{"freeze", "podinfo", "--reason", "INC-5 hold Flux"}, g...)...)
	if code != exitOK || !strings.Contains(out, "incident channel") || !strings.Contains(out, "podinfo: wrote kdrift's freeze on the live Kustomization "+ns+"/podinfo: spec.suspend true, as it was absent") {
		t.Fatalf("freeze: %d\n%s\n%s", code, out, errOut)
	}
	lv := live()
	if s, _, _ := unstructured.NestedBool(lv.Object, "spec", "suspend"); !s || lv.GetAnnotations()["kdrift.dev/freeze-reason"] != "INC-5 hold Flux" {
		t.Fatalf("live Kustomization: suspend %v annotations %v", s, lv.GetAnnotations())
	}
	if c := git(t, remote, "show", "kdrift/freezes:flux/podinfo.yaml"); !strings.Contains(c, "suspend: true") {
		t.Fatalf("the channel does not hold the freeze:\n%s", c)
	}
	code, out, errOut = kdrift(t, ctx, append([]string{"status", "podinfo"}, g...)...)
	if !strings.Contains(out, "(channel kdrift/freezes)") || strings.Contains(out, "still heals") {
		t.Fatalf("status while paused: %d\n%s\n%s", code, out, errOut)
	}
	// What Flux last applied, from the live Kustomization's status.
	mainHash := git(t, remote, "rev-parse", "main")
	st := live()
	st.Object["status"] = map[string]any{"lastAppliedRevision": "main@sha1:" + mainHash}
	if _, err := enginetest.Dynamic(t).Resource(kustomizationsGVR).Namespace(ns).UpdateStatus(ctx, st, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = kdrift(t, ctx, append([]string{"status", "podinfo", "-o", "json"}, g...)...)
	if !strings.Contains(out, `"ownerApplied": "Flux applied main@sha1:`+mainHash+`, the revision kdrift compares"`) {
		t.Fatalf("status with Flux's applied revision: %d\n%s\n%s", code, out, errOut)
	}

	// The parent Kustomization reconciles and un-suspends it.
	off := false
	applyKustomization(t, ns, &off)
	code, out, errOut = kdrift(t, ctx, append([]string{"status", "podinfo", "-o", "json"}, g...)...)
	if !strings.Contains(out, `"ownerResumed": "still heals: the parent flux-system/flux-system re-enabled self-heal at `) {
		t.Fatalf("status after the parent: %d\n%s\n%s", code, out, errOut)
	}

	code, out, errOut = kdrift(t, ctx, append([]string{"unfreeze", "podinfo", "--reason", "INC-5 over"}, g...)...)
	if code != exitOK || !strings.Contains(out, "lifted kdrift's freeze from the live Kustomization "+ns+"/podinfo: spec.suspend is unset again") {
		t.Fatalf("unfreeze: %d\n%s\n%s", code, out, errOut)
	}
	lv = live()
	if _, found, _ := unstructured.NestedFieldNoCopy(lv.Object, "spec", "suspend"); found {
		t.Fatal("spec.suspend left on the live Kustomization")
	}
	for k := range lv.GetAnnotations() {
		if strings.HasPrefix(k, "kdrift.dev/") {
			t.Fatalf("annotation %s left on the live Kustomization", k)
		}
	}

	// No cluster: the record is on the channel, Flux was not told.
	dead := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(dead, []byte("apiVersion: v1\nkind: Config\ncurrent-context: dead\nclusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:1\"}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: dead\n  context: {cluster: c, user: u}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = kdrift(t, ctx, "freeze", "podinfo", "--reason", "INC-6 hold", "--repo", clone, "--kubeconfig", dead)
	if code != exitRefused || !strings.Contains(errOut, "Flux was not told to stop healing podinfo") || !strings.Contains(errOut, "by hand: kubectl patch kustomization podinfo -n "+ns+" --type merge -p '") {
		t.Fatalf("freeze without a cluster: %d\n%s\n%s", code, out, errOut)
	}
}
