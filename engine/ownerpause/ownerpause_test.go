package ownerpause

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"sigs.k8s.io/yaml"

	"kdrift.dev/kdrift/engine/app"
)

var argoHeal = &app.HealField{Path: []string{"spec", "syncPolicy", "automated"}, Field: "selfHeal", Off: "false"}

func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestPatchFor: what the merge patch writes for an Application that
// self-heals, one with no automated block (Argo CD was not healing: the
// block is never created, which would turn automated sync on), one
// already paused, and the lift.
func TestPatchFor(t *testing.T) {
	until := time.Date(2026, 12, 2, 17, 0, 0, 0, time.UTC)
	fr := &app.Freeze{Reason: "INC-7", By: "Lao Li <lao.li@example.com>", At: time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC), Until: &until}
	heals := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: shop, namespace: argocd, resourceVersion: '7'}\nspec: {syncPolicy: {automated: {selfHeal: true}}}\n"
	manual := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: shop, namespace: argocd}\nspec: {syncPolicy: {syncOptions: [A]}}\n"
	for _, c := range []struct {
		name, doc string
		fr        *app.Freeze
		want      []string
		none      string
	}{
		{"heals", heals, fr, []string{`"selfHeal":false`, `"kdrift.dev/freeze-previous":"true"`, `"kdrift.dev/freeze-until":"2026-12-02T17:00:00Z"`, `"kdrift.dev/freeze-channel":"kdrift/freezes"`, `"resourceVersion":"7"`}, ""},
		{"manual sync", manual, fr, []string{`"kdrift.dev/freeze-previous":"none"`}, ""},
		{"already paused", strings.Replace(heals, "selfHeal: true", "selfHeal: false", 1) + "", fr, []string{`"kdrift.dev/freeze-previous":"false"`}, ""},
		{"lift unpaused", heals, nil, nil, "carries no kdrift freeze"},
	} {
		t.Run(c.name, func(t *testing.T) {
			patch, what, err := patchFor(object(t, c.doc), argoHeal, c.fr, "kdrift/freezes")
			if err != nil {
				t.Fatal(err)
			}
			if c.none != "" {
				if patch != nil || !strings.Contains(what, c.none) {
					t.Fatalf("patch %s, %q", patch, what)
				}
				return
			}
			for _, w := range c.want {
				if !strings.Contains(string(patch), w) {
					t.Fatalf("patch %s lacks %s", patch, w)
				}
			}
			if c.name == "manual sync" && strings.Contains(string(patch), "automated") {
				t.Fatalf("the patch creates the automated block: %s", patch)
			}
		})
	}
	// Lift after a pause: the field back as it was, the annotations gone.
	paused := object(t, heals)
	paused.SetAnnotations(map[string]string{"kdrift.dev/freeze-reason": "INC-7", "kdrift.dev/freeze-previous": "true", "team": "web"})
	patch, what, err := patchFor(paused, argoHeal, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(patch, &body); err != nil {
		t.Fatal(err)
	}
	ann := body["metadata"].(map[string]any)["annotations"].(map[string]any)
	if _, ok := ann["team"]; ok || ann["kdrift.dev/freeze-reason"] != nil || len(ann) != 2 || !strings.Contains(what, "selfHeal is true again") || !strings.Contains(string(patch), `"selfHeal":true`) {
		t.Fatalf("lift patch %s, %q", patch, what)
	}
}

// TestResumedNamesTheParent: an Application a parent re-applied says who
// and when, from its tracking annotation and managedFields.
func TestResumedNamesTheParent(t *testing.T) {
	obj := object(t, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: shop
  namespace: argocd
  annotations:
    argocd.argoproj.io/tracking-id: "root:argoproj.io/Application:argocd/shop"
    kdrift.dev/freeze-previous: "true"
  managedFields:
  - manager: kdrift-freeze
    operation: Update
    time: "2026-12-02T15:00:00Z"
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {"f:syncPolicy": {"f:automated": {"f:selfHeal": {}}}}}
  - manager: argocd-controller
    operation: Apply
    time: "2026-12-02T15:07:00Z"
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {"f:syncPolicy": {"f:automated": {"f:selfHeal": {}}}}}
spec: {syncPolicy: {automated: {selfHeal: true}}}
`)
	shop := app.OwnedFreeze{App: "shop", Origin: app.Origin{Engine: "Argo CD", Kind: "Application", Namespace: "argocd", Name: "shop"}}
	got := Resumed(obj, shop, "kdrift/freezes")
	for _, want := range []string{"still heals: the parent root re-enabled self-heal at ", "field manager argocd-controller", "selfHeal is true"} {
		if !strings.Contains(got, want) {
			t.Fatalf("%q lacks %q", got, want)
		}
	}
	_ = unstructured.SetNestedField(obj.Object, false, "spec", "syncPolicy", "automated", "selfHeal")
	if got := Resumed(obj, shop, "kdrift/freezes"); got != "" {
		t.Fatalf("paused: %q", got)
	}
}

func TestCommand(t *testing.T) {
	o := app.Origin{Engine: "Flux", Kind: "Kustomization", Namespace: "flux-system", Name: "podinfo"}
	fr := &app.Freeze{Reason: "it's INC-5", By: "Lao Li", At: time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)}
	h := &app.HealField{Path: []string{"spec"}, Field: "suspend", Off: "true"}
	got := Command(app.OwnedFreeze{App: "podinfo", Origin: o, Freeze: fr}, h, "kdrift/freezes")
	if !strings.HasPrefix(got, "kubectl patch kustomization podinfo -n flux-system --type merge -p '") || !strings.Contains(got, `"suspend":true`) || !strings.Contains(got, `it'\''s INC-5`) {
		t.Fatalf("command %s", got)
	}
	// A name a hostile repository chose stays one quoted word.
	o.Name = "x; rm -rf ~"
	if got := Command(app.OwnedFreeze{App: "x", Origin: o, Freeze: fr}, h, ""); !strings.Contains(got, "kustomization 'x; rm -rf ~' -n flux-system") {
		t.Fatalf("hostile name: %s", got)
	}
}

// TestChannelUnfreezeLeavesMainsFreeze: a live declaration whose freeze
// came from the desired branch (no freeze-channel annotation) is not
// lifted by a record on the incident channel; one the channel paused is.
func TestChannelUnfreezeLeavesMainsFreeze(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Group: "argoproj.io", Version: "v1alpha1"}})
	mapper.Add(schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}, meta.RESTScopeNamespace)
	live := func(channel string) *unstructured.Unstructured {
		obj := object(t, "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: shop, namespace: argocd}\nspec: {syncPolicy: {automated: {selfHeal: false}}}\n")
		ann := map[string]string{"kdrift.dev/freeze-reason": "INC-7", "kdrift.dev/freeze-previous": "true"}
		if channel != "" {
			ann["kdrift.dev/freeze-channel"] = channel
		}
		obj.SetAnnotations(ann)
		return obj
	}
	o := app.Origin{Engine: "Argo CD", Kind: "Application", Namespace: "argocd", Name: "shop"}
	for _, c := range []struct {
		channel string
		done    bool
	}{{"", false}, {"kdrift/freezes", true}} {
		dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ApplicationList"}, live(c.channel))
		out := Write(t.Context(), Cluster{Dynamic: dyn, Mapper: mapper, Context: "test"}, app.OwnedFreeze{App: "shop", Origin: o}, "kdrift/freezes")
		if out.Done != c.done {
			t.Fatalf("channel %q: %+v", c.channel, out)
		}
		got, err := dyn.Resource(gvr).Namespace("argocd").Get(t.Context(), "shop", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		heal, _, _ := unstructured.NestedBool(got.Object, "spec", "syncPolicy", "automated", "selfHeal")
		if heal != c.done {
			t.Fatalf("channel %q: selfHeal %v after the lift (%s)", c.channel, heal, out.Message)
		}
		if !c.done && (out.Command != "" || !strings.Contains(out.Message, "does not lift")) {
			t.Fatalf("main's freeze: %+v", out)
		}
	}
}

// TestUnreachable: without a cluster, each owned freeze says its owner
// was not told and gives the command.
func TestUnreachable(t *testing.T) {
	o := app.Origin{Engine: "Flux", Kind: "Kustomization", Namespace: "flux-system", Name: "podinfo"}
	fr := &app.Freeze{Reason: "INC-5", By: "Lao Li", At: time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)}
	outs := Unreachable([]app.OwnedFreeze{{App: "podinfo", Origin: o, Freeze: fr}}, "kdrift/freezes", errors.New(`context "prod" is not in the kubeconfig`))
	if len(outs) != 1 || outs[0].Done || !strings.Contains(outs[0].Message, `Flux was not told to stop healing podinfo: no cluster (context "prod" is not in the kubeconfig)`) || !strings.HasPrefix(outs[0].Command, "kubectl patch kustomization podinfo") {
		t.Fatalf("%+v", outs)
	}
}
