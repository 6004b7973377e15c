package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// envAppDeployment is the Deployment of the promotion example's qa
// environment at image version v, as its kustomization renders it.
func envAppDeployment(v string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: simple-deployment
spec:
  replicas: 1
  selector:
    matchLabels: {app: trivial-go-web-app}
  template:
    metadata:
      labels: {app: trivial-go-web-app}
    spec:
      containers:
      - name: webserver-simple
        image: docker.io/kostiscodefresh/simple-env-app:` + v + `
        ports:
        - containerPort: 8080
`
}

// envVersion is envs/qa/version.yml: the patch that sets the image.
func envVersion(v string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: simple-deployment
spec:
  template:
    spec:
      containers:
      - name: webserver-simple
        image: docker.io/kostiscodefresh/simple-env-app:` + v + `
`
}

// promotionRepo is a repository laid out as the environment-promotion
// example: an Argo CD Application ep-qa on envs/qa, a kustomization whose
// version.yml patch sets the image, pushed to a bare remote. It returns
// the clone and the commit.
func promotionRepo(t *testing.T, ns string) (*gittest.Repo, string) {
	t.Helper()
	remote := gittest.InitBare(t)
	repo := gittest.Init(t)
	head := repo.Commit("qa at 1.0", map[string]string{
		"argocd/ep-qa.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: ep-qa
  namespace: ` + ns + `
spec:
  project: default
  source:
    repoURL: file://` + remote.Dir + `
    targetRevision: HEAD
    path: envs/qa
  destination:
    server: https://kubernetes.default.svc
    namespace: ` + ns + `
  syncPolicy:
    automated: {prune: true, selfHeal: true}
`,
		"envs/qa/kustomization.yaml": "resources: [deployment.yml]\npatches:\n- path: version.yml\n",
		"envs/qa/deployment.yml":     envAppDeployment("0.9"),
		"envs/qa/version.yml":        envVersion("1.0"),
	})
	repo.Git("remote", "add", "origin", remote.Dir)
	repo.Git("push", "-q", "-u", "origin", "main")
	return repo, head
}

// argoSynced writes the live Application ep-qa as Argo CD's controller
// does after it synced rev: its status.sync and operationState.
func argoSynced(t *testing.T, repo *gittest.Repo, ns, rev string, at time.Time) {
	t.Helper()
	doc := repo.Git("show", "HEAD:argocd/ep-qa.yaml")
	applyApplication(t, doc, "argocd-application-controller", func(obj *unstructured.Unstructured) {
		obj.Object["status"] = map[string]any{
			"sync":           map[string]any{"status": "Synced", "revision": rev},
			"operationState": map[string]any{"phase": "Succeeded", "finishedAt": at.UTC().Format(time.RFC3339), "syncResult": map[string]any{"revision": rev}},
		}
	})
}

// imageField is the image field of the app's Deployment, when it differs.
func imageField(t *testing.T, a status.AppStatus) (status.FieldChange, bool) {
	t.Helper()
	r, ok := resource(a, "Deployment", "simple-deployment")
	if !ok {
		t.Fatalf("no Deployment:\n%s", describe(a))
	}
	for _, f := range r.Fields {
		if strings.HasSuffix(f.Path, "/image") {
			return f, true
		}
	}
	return status.FieldChange{}, false
}

// TestGitAheadOfArgoCDIsOutOfSyncWaiting: resources Argo CD applied at
// one commit, then a commit that changes the image: the app is OutOfSync,
// waiting for Argo CD, naming both revisions (an object it adds is Missing,
// waiting too), never Synced and never
// healed by kdrift. Once the Application says it applied the new commit
// while the image is still the old one, the difference is a render
// disagreement; a person's edit of the image is drift by that person.
func TestGitAheadOfArgoCDIsOutOfSyncWaiting(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "verdict-argo")
	enginetest.InstallCRDs(t, "applications.argoproj.io.yaml")
	repo, head := promotionRepo(t, ns)
	applyAs(t, ns, "argocd-controller", envAppDeployment("1.0"), map[string]string{},
		map[string]string{"argocd.argoproj.io/tracking-id": "ep-qa:apps/Deployment:" + ns + "/simple-deployment"})
	appliedAt := time.Now().Add(-4 * time.Minute)
	argoSynced(t, repo, ns, head, appliedAt)

	e := newEngine(t, repo, nil)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if a := appStatus(t, e, "ep-qa"); a.Sync != status.SyncSynced {
		t.Fatalf("what Argo CD applied is what Git says:\n%s", describe(a))
	}

	next := repo.Commit("qa: simple-env-app 2.0, its settings", map[string]string{
		"envs/qa/version.yml":        envVersion("2.0"),
		"envs/qa/settings.yml":       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {UI_THEME: dark}\n",
		"envs/qa/kustomization.yaml": "resources: [deployment.yml, settings.yml]\npatches:\n- path: version.yml\n",
	})
	repo.Git("push", "-q", "origin", "main")
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a := appStatus(t, e, "ep-qa")
	f, ok := imageField(t, a)
	if a.Sync != status.SyncOutOfSync || !ok || f.Difference != status.DifferenceWaiting || !f.IsDrift() {
		t.Fatalf("Git ahead of Argo CD must be OutOfSync, the image waiting for Argo CD:\n%s field %+v", describe(a), f)
	}
	if a.Difference != status.DifferenceWaiting || a.SyncLabel() != "OutOfSync (waiting for Argo CD)" {
		t.Fatalf("app difference %q label %q", a.Difference, a.SyncLabel())
	}
	ow := a.OwnerRevision
	if ow == nil || ow.Engine != "Argo CD" || ow.Applied != head || ow.Desired != next || ow.AppliedAt == nil || !ow.AppliedAt.Equal(appliedAt.Truncate(time.Second)) {
		t.Fatalf("owner revision %+v", ow)
	}
	if !strings.Contains(a.OwnerApplied, "Argo CD applied "+head[:7]) || !strings.Contains(a.OwnerApplied, "Git is at "+next[:7]) {
		t.Fatalf("ownerApplied %q", a.OwnerApplied)
	}
	if r, _ := resource(a, "Deployment", "simple-deployment"); r.Drifted() != 1 {
		t.Fatalf("drifted fields %d:\n%s", r.Drifted(), describe(a))
	}
	if r, ok := resource(a, "ConfigMap", "settings"); !ok || r.Status != status.ResourceMissing || r.Difference != status.DifferenceWaiting {
		t.Fatalf("an object the commit adds is Missing, waiting for Argo CD: %+v", r)
	}
	image := func() string {
		d, err := enginetest.Clientset(t).AppsV1().Deployments(ns).Get(ctx, "simple-deployment", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Spec.Containers[0].Image
	}
	if got := image(); !strings.HasSuffix(got, ":1.0") {
		t.Fatalf("kdrift healed an app Argo CD heals: image %s", got)
	}

	// Argo CD says it applied the new commit, and the image is still 1.0:
	// its render and kdrift's disagree.
	argoSynced(t, repo, ns, next, time.Now())
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a = appStatus(t, e, "ep-qa")
	f, _ = imageField(t, a)
	if a.Sync != status.SyncOutOfSync || f.Difference != status.DifferenceRender || a.Difference != status.DifferenceRender || a.SyncLabel() != "OutOfSync (render disagreement with Argo CD)" {
		t.Fatalf("render disagreement: label %q field %+v\n%s", a.SyncLabel(), f, describe(a))
	}

	// A person sets the image: drift by kubectl, whatever Argo CD did.
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"webserver-simple","image":"docker.io/kostiscodefresh/simple-env-app:3.0"}]}}}}`
	if _, err := enginetest.Clientset(t).AppsV1().Deployments(ns).Patch(ctx, "simple-deployment", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-set"}); err != nil {
		t.Fatal(err)
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a = appStatus(t, e, "ep-qa")
	f, _ = imageField(t, a)
	if f.Class != status.OwnerPerson || f.Difference != status.DifferenceDrift || a.Difference != status.DifferenceDrift || a.SyncLabel() != "OutOfSync" {
		t.Fatalf("a person's image: label %q field %+v\n%s", a.SyncLabel(), f, describe(a))
	}
}

// TestArgoTargetRevisionIsTheDesiredRevision: an Application that follows
// the branch staging is compared with staging's head as last fetched, not
// with the branch kdrift reads, and says so; a commit on staging Argo CD
// has not applied is waiting for it, while commits on main change nothing.
func TestArgoTargetRevisionIsTheDesiredRevision(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "verdict-follow")
	enginetest.InstallCRDs(t, "applications.argoproj.io.yaml")
	remote := gittest.InitBare(t)
	repo := gittest.Init(t)
	doc := `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: ep-staging
  namespace: ` + ns + `
spec:
  source:
    repoURL: file://` + remote.Dir + `
    targetRevision: staging
    path: envs/staging
  destination:
    server: https://kubernetes.default.svc
    namespace: ` + ns + `
`
	repo.Commit("staging app", map[string]string{"argocd/ep-staging.yaml": doc, "envs/staging/deployment.yml": envAppDeployment("1.0")})
	repo.Git("remote", "add", "origin", remote.Dir)
	repo.Git("push", "-q", "-u", "origin", "main")
	// staging moves on its own, from another clone.
	other := gittest.Init(t)
	other.Git("remote", "add", "origin", remote.Dir)
	other.Git("fetch", "-q", "origin")
	other.Git("checkout", "-q", "-B", "staging", "origin/main")
	staged := other.Commit("staging: 1.5", map[string]string{"envs/staging/deployment.yml": envAppDeployment("1.5")})
	other.Git("push", "-q", "origin", "staging")
	repo.Commit("main: 2.0", map[string]string{"envs/staging/deployment.yml": envAppDeployment("2.0")})
	repo.Git("push", "-q", "origin", "main")

	applyAs(t, ns, "argocd-controller", envAppDeployment("1.5"), map[string]string{},
		map[string]string{"argocd.argoproj.io/tracking-id": "ep-staging:apps/Deployment:" + ns + "/simple-deployment"})
	synced := func(rev string) {
		t.Helper()
		applyApplication(t, doc, "argocd-application-controller", func(obj *unstructured.Unstructured) {
			obj.Object["status"] = map[string]any{"sync": map[string]any{"status": "Synced", "revision": rev}}
		})
	}
	synced(staged)
	e := newEngine(t, repo, nil)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a := appStatus(t, e, "ep-staging")
	if a.Sync != status.SyncSynced || a.Revision != staged || a.RevisionRef != "origin/staging (targetRevision staging)" {
		t.Fatalf("staging as Argo CD applied it: revision %s (%s)\n%s", a.Revision, a.RevisionRef, describe(a))
	}

	next := other.Commit("staging: 1.6", map[string]string{"envs/staging/deployment.yml": envAppDeployment("1.6")})
	other.Git("push", "-q", "origin", "staging")
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a = appStatus(t, e, "ep-staging")
	f, _ := imageField(t, a)
	if a.SyncLabel() != "OutOfSync (waiting for Argo CD)" || a.Revision != next || f.Difference != status.DifferenceWaiting ||
		!strings.Contains(a.OwnerApplied, "Git is at "+next[:7]+" (origin/staging (targetRevision staging))") {
		t.Fatalf("a commit on staging: %q %q\n%s", a.SyncLabel(), a.OwnerApplied, describe(a))
	}
}
