package engine_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/ownerpause"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

var applicationsGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// shopApplication is an Argo CD Application of the repository at url, in
// namespace ns, that self-heals.
func shopApplication(url, ns string) string {
	return `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: shop
  namespace: ` + ns + `
spec:
  project: default
  source:
    repoURL: ` + url + `
    path: deploy/shop
  destination:
    server: https://kubernetes.default.svc
    namespace: ` + ns + `
  syncPolicy:
    automated:
      prune: true
      selfHeal: true
`
}

// applyAsParent server-side applies doc as the app-of-apps parent "root"
// would: Argo CD's field manager, its tracking annotation.
func applyAsParent(t *testing.T, doc string) {
	t.Helper()
	applyApplication(t, doc, "argocd-controller", func(obj *unstructured.Unstructured) {
		obj.SetAnnotations(map[string]string{"argocd.argoproj.io/tracking-id": "root:argoproj.io/Application:" + obj.GetNamespace() + "/shop"})
	})
}

// applyApplication server-side applies the Application doc as manager,
// after edit (when set) changed it.
func applyApplication(t *testing.T, doc, manager string, edit func(*unstructured.Unstructured)) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(obj)
	}
	body, err := obj.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	force := true
	if _, err := enginetest.Dynamic(t).Resource(applicationsGVR).Namespace(obj.GetNamespace()).Patch(context.Background(), obj.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: manager, Force: &force}); err != nil {
		t.Fatal(err)
	}
}

// shopRepo is a repository holding the Application shop of namespace ns
// and its ConfigMap, pushed to a bare remote: the remote, the clone, the
// Application's document and the commit.
func shopRepo(t *testing.T, ns string) (remote, repo *gittest.Repo, doc, head string) {
	t.Helper()
	remote = gittest.InitBare(t)
	repo = gittest.Init(t)
	doc = shopApplication("file://"+remote.Dir, ns)
	head = repo.Commit("first", map[string]string{
		"argocd/shop.yaml":    doc,
		"deploy/shop/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shop}\ndata: {a: b}\n",
	})
	repo.Git("remote", "add", "origin", remote.Dir)
	repo.Git("push", "-q", "-u", "origin", "main")
	return remote, repo, doc, head
}

// liveApplication reads the live Application shop in ns.
func liveApplication(t *testing.T, ns string) *unstructured.Unstructured {
	t.Helper()
	obj, err := enginetest.Dynamic(t).Resource(applicationsGVR).Namespace(ns).Get(context.Background(), "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestChannelFreezeOfAnArgoAppPausesItsLiveApplication: on a remote whose
// main refuses pushes, a freeze of an app Argo CD owns lands on the
// incident channel as an edit of its Application that every reader
// accepts as a freeze record; Argo CD reads main only, so the live
// Application is paused too (selfHeal false, kdrift's annotations, the
// earlier value kept); until it is, and again when a parent re-applies
// it, the app says Argo CD still heals, naming the parent, its field
// manager and the time; the unfreeze restores the live Application.
func TestChannelFreezeOfAnArgoAppPausesItsLiveApplication(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "ownerpause")
	enginetest.InstallCRDs(t, "applications.argoproj.io.yaml")
	remote, mine, doc, _ := shopRepo(t, ns)
	protectMain(t, remote.Dir)
	applyAsParent(t, doc)

	e := newEngine(t, mine, nil)
	events := errorEvents(t, e)
	res, err := oncall(t, cloneOf(t, remote).Dir).Freeze(ctx, actions.FreezeRequest{Selection: actions.Selection{Apps: []string{"shop"}}, Reason: "INC-77 keep manual scale"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Channel != "kdrift/freezes" || len(res.Owned) != 1 || res.Owned[0].App != "shop" || res.Owned[0].Freeze == nil {
		t.Fatalf("the freeze did not land on the channel as an owned freeze: %+v", res)
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a := appStatus(t, e, "shop")
	if a.Freeze == nil || a.FreezeChannel != "kdrift/freezes" || !strings.Contains(a.OwnerResumed, "never paused") {
		t.Fatalf("freeze %+v channel %q ownerResumed %q: the channel's freeze must be read, and Argo CD said to heal still", a.Freeze, a.FreezeChannel, a.OwnerResumed)
	}
	if ch := e.Channel(); ch.Refused != nil || ch.Valid == "" {
		t.Fatalf("the channel's record was refused: %+v", ch.Refused)
	}

	cs, err := engine.ClientSetOf(e, "")
	if err != nil {
		t.Fatal(err)
	}
	outs := ownerpause.WriteAll(ctx, ownerpause.ClusterOf(cs), res.Owned, res.Channel)
	if len(outs) != 1 || !outs[0].Done || !strings.Contains(outs[0].Message, "spec.syncPolicy.automated.selfHeal false, as it was true") {
		t.Fatalf("pause: %+v", outs)
	}
	lv := liveApplication(t, ns)
	heal, _, _ := unstructured.NestedBool(lv.Object, "spec", "syncPolicy", "automated", "selfHeal")
	ann := lv.GetAnnotations()
	if heal || ann["kdrift.dev/freeze-reason"] != "INC-77 keep manual scale" || ann["kdrift.dev/freeze-previous"] != "true" || ann["kdrift.dev/freeze-channel"] != "kdrift/freezes" {
		t.Fatalf("live Application: selfHeal %v annotations %v", heal, ann)
	}
	if again := ownerpause.WriteAll(ctx, ownerpause.ClusterOf(cs), res.Owned, res.Channel); !again[0].Done || !strings.Contains(again[0].Message, "already carries") {
		t.Fatalf("a second write: %+v", again)
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if a := appStatus(t, e, "shop"); a.OwnerResumed != "" {
		t.Fatalf("paused, yet ownerResumed %q", a.OwnerResumed)
	}

	// The parent syncs and puts selfHeal back.
	applyAsParent(t, doc)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a = appStatus(t, e, "shop")
	for _, want := range []string{"still heals: the parent root re-enabled self-heal at ", "field manager argocd-controller", "selfHeal is true"} {
		if !strings.Contains(a.OwnerResumed, want) {
			t.Fatalf("ownerResumed %q lacks %q", a.OwnerResumed, want)
		}
	}
	found := false
	for _, m := range events() {
		if strings.Contains(m, "the parent root") {
			found = true
		}
		if strings.Contains(m, "not a freeze record") {
			t.Fatalf("channel refused: %s", m)
		}
	}
	if !found {
		t.Fatal("no Error event says the parent re-enabled healing")
	}

	// Pause again, then lift: the live Application is as it was.
	ownerpause.WriteAll(ctx, ownerpause.ClusterOf(cs), res.Owned, res.Channel)
	ures, err := oncall(t, cloneOf(t, remote).Dir).Unfreeze(ctx, actions.UnfreezeRequest{Selection: actions.Selection{Apps: []string{"shop"}}, Reason: "INC-77 over"})
	if err != nil {
		t.Fatal(err)
	}
	if ures.Channel == "" || len(ures.Owned) != 1 || ures.Owned[0].Freeze != nil {
		t.Fatalf("unfreeze: %+v", ures)
	}
	outs = ownerpause.WriteAll(ctx, ownerpause.ClusterOf(cs), ures.Owned, ures.Channel)
	if !outs[0].Done || !strings.Contains(outs[0].Message, "selfHeal is true again") {
		t.Fatalf("lift: %+v", outs)
	}
	lv = liveApplication(t, ns)
	heal, _, _ = unstructured.NestedBool(lv.Object, "spec", "syncPolicy", "automated", "selfHeal")
	for k := range lv.GetAnnotations() {
		if strings.HasPrefix(k, "kdrift.dev/") {
			t.Fatalf("live annotation %s left after the lift", k)
		}
	}
	if !heal {
		t.Fatal("selfHeal not restored")
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if a := appStatus(t, e, "shop"); a.Freeze != nil || a.OwnerResumed != "" {
		t.Fatalf("after the lift: freeze %+v ownerResumed %q", a.Freeze, a.OwnerResumed)
	}
}

// TestOwnerAppliedRevision: the revision Argo CD last synced, read from
// the live Application's status, is shown against the revision kdrift
// compares: the same, then behind after a commit.
func TestOwnerAppliedRevision(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "owner-applied")
	enginetest.InstallCRDs(t, "applications.argoproj.io.yaml")
	_, repo, doc, head := shopRepo(t, ns)
	synced := func(rev string) {
		t.Helper()
		applyApplication(t, doc, "argocd-application-controller", func(obj *unstructured.Unstructured) {
			obj.Object["status"] = map[string]any{"sync": map[string]any{"status": "Synced", "revision": rev}}
		})
	}
	synced(head)
	e := newEngine(t, repo, nil)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if a := appStatus(t, e, "shop"); a.OwnerApplied != "Argo CD applied "+head+", the revision kdrift compares" {
		t.Fatalf("ownerApplied %q", a.OwnerApplied)
	}
	next := repo.Commit("more", map[string]string{"deploy/shop/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shop}\ndata: {a: c}\n"})
	repo.Git("push", "-q", "origin", "main")
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a := appStatus(t, e, "shop")
	if !strings.HasPrefix(a.OwnerApplied, "Argo CD applied "+head[:7]+"; Git is at "+next[:7]+" (origin/main)") {
		t.Fatalf("after a commit Argo CD has not synced: ownerApplied %q", a.OwnerApplied)
	}
}
