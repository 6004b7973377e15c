package engine_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// guestbookYAML is a guestbook UI as argocd-example-apps keeps it: a
// Deployment whose port names only containerPort, with probes, and its
// Service; the apiserver defaults protocol, probe timings, dnsPolicy and
// the rest.
const guestbookYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook-ui
spec:
  replicas: 1
  revisionHistoryLimit: 3
  selector:
    matchLabels:
      app: guestbook-ui
  template:
    metadata:
      labels:
        app: guestbook-ui
    spec:
      containers:
      - image: gcr.io/heptio-images/ks-guestbook-demo:0.2
        name: guestbook-ui
        ports:
        - containerPort: 80
        readinessProbe:
          httpGet:
            path: /
            port: 80
---
apiVersion: v1
kind: Service
metadata:
  name: guestbook-ui
spec:
  ports:
  - port: 80
    targetPort: 80
  selector:
    app: guestbook-ui
`

// rolebindingYAML is a tenant's RoleBinding with two subjects, as
// flux2-multi-tenancy's tenants/base/dev-team/rbac.yaml binds them.
const rolebindingYAML = `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: gotk-reconciler
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: gotk:dev-team:reconciler
- kind: ServiceAccount
  name: dev-team
`

// argoRepo is a repository whose Argo CD Application guestbook renders
// deploy/guestbook into ns, with files.
func argoRepo(t *testing.T, ns string, files map[string]string) *gittest.Repo {
	t.Helper()
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", "https://git.example.com/team/gitops.git")
	files["argocd/guestbook.yaml"] = argoApp(ns)
	repo.Commit("guestbook", files)
	return repo
}

// kubectl runs kubectl on the test cluster and fails the test on error.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", enginetest.Kubeconfig()}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// writeManifest writes text into a temporary file for kubectl -f.
func writeManifest(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// reconciled compares app once and returns its status.
func reconciled(t *testing.T, e *engine.Engine, app string) status.AppStatus {
	t.Helper()
	if err := e.Reconcile(context.Background(), app); err != nil {
		t.Fatal(err)
	}
	return appStatus(t, e, app)
}

// allFields counts every field listed on the app's resources, drift or
// not, and its drifted ones.
func allFields(a status.AppStatus) (listed, drifted int) {
	for _, r := range a.Resources {
		listed += len(r.Fields)
		drifted += r.Drifted()
	}
	return listed, drifted
}

// TestNoFalseDriftAfterAnotherManagerApplies: Git applied exactly by
// another manager, with Server-Side Apply or with Update (client-side
// apply), for an Argo CD Application, is Synced with no field listed; after one kubectl scale,
// exactly one drifted field, /spec/replicas, owned by kubectl.
func TestNoFalseDriftAfterAnotherManagerApplies(t *testing.T) {
	tests := []struct {
		name, ns string
		apply    []string
	}{
		{"server-side argocd-controller", "fd-ssa-argo", []string{"apply", "--server-side", "--field-manager=argocd-controller"}},
		{"server-side kustomize-controller", "fd-ssa-flux", []string{"apply", "--server-side", "--field-manager=kustomize-controller"}},
		{"server-side kubectl", "fd-ssa-kubectl", []string{"apply", "--server-side"}},
		{"client-side argocd-controller", "fd-csa-argo", []string{"apply", "--field-manager=argocd-controller"}},
		{"create helm-controller", "fd-create-helm", []string{"create", "--field-manager=helm-controller"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := namespace(t, tt.ns)
			repo := argoRepo(t, ns, map[string]string{"deploy/guestbook/guestbook.yaml": guestbookYAML})
			kubectl(t, append(tt.apply, "-n", ns, "-f", writeManifest(t, guestbookYAML))...)
			e := newEngine(t, repo, nil)
			a := reconciled(t, e, "guestbook")
			if listed, _ := allFields(a); a.Sync != status.SyncSynced || listed != 0 {
				t.Fatalf("after applying exactly Git: want Synced with no field listed, got\n%s", describe(a))
			}

			kubectl(t, "scale", "-n", ns, "deployment/guestbook-ui", "--replicas=2")
			a = reconciled(t, e, "guestbook")
			if _, drifted := allFields(a); a.Sync != status.SyncOutOfSync || drifted != 1 {
				t.Fatalf("after one kubectl scale: want OutOfSync with 1 drifted field, got\n%s", describe(a))
			}
			d, _ := resource(a, "Deployment", "guestbook-ui")
			f, ok := field(d, "/spec/replicas")
			if !ok || !f.IsDrift() || f.Class != status.OwnerPerson || len(f.Owners) != 1 || f.Owners[0].Manager != "kubectl" {
				t.Fatalf("want /spec/replicas drift owned by kubectl alone, got\n%s", describe(a))
			}
			if len(d.Fields) != 1 {
				t.Fatalf("want the scale as the Deployment's only field, got\n%s", describe(a))
			}
		})
	}
}

// TestNoFalseDriftNamespaceByUpdate: a Namespace Git declares, created by
// Update, carries the apiserver's kubernetes.io/metadata.name label under
// its creator's entry; that is not drift.
func TestNoFalseDriftNamespaceByUpdate(t *testing.T) {
	ns := "fd-ns-update"
	nsYAML := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ns + "\n  labels:\n    team: dev\n"
	repo := argoRepo(t, ns, map[string]string{"deploy/guestbook/ns.yaml": nsYAML})
	kubectl(t, "apply", "--field-manager=argocd-controller", "-f", writeManifest(t, nsYAML))
	t.Cleanup(func() { kubectl(t, "delete", "namespace", ns, "--wait=false") })
	e := newEngine(t, repo, nil)
	a := reconciled(t, e, "guestbook")
	if listed, _ := allFields(a); a.Sync != status.SyncSynced || listed != 0 {
		t.Fatalf("want Synced with no field listed, got\n%s", describe(a))
	}
}

// TestRemovedListItemOwner: a RoleBinding subject removed with kubectl
// patch is drift owned by kubectl-patch (it owns the atomic subjects
// list), never "defaulted".
func TestRemovedListItemOwner(t *testing.T) {
	ns := namespace(t, "fd-subjects")
	repo := gittest.Init(t)
	repo.Commit("rbac", map[string]string{
		".kdrift/apps.yaml": appYAML("tenant", "rbac", ns, false, false, ""),
		"rbac/rbac.yaml":    rolebindingYAML,
	})
	e := newEngine(t, repo, nil)
	if _, err := e.Sync(context.Background(), "tenant", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	if a := reconciled(t, e, "tenant"); a.Sync != status.SyncSynced {
		t.Fatalf("after sync: want Synced, got\n%s", describe(a))
	}
	kubectl(t, "patch", "-n", ns, "rolebinding/gotk-reconciler", "--type=json", `-p=[{"op":"remove","path":"/subjects/1"}]`)
	a := reconciled(t, e, "tenant")
	r, _ := resource(a, "RoleBinding", "gotk-reconciler")
	if _, drifted := allFields(a); a.Sync != status.SyncOutOfSync || drifted != 1 {
		t.Fatalf("want OutOfSync with 1 drifted field, got\n%s", describe(a))
	}
	for _, f := range r.Fields {
		if !f.IsDrift() {
			continue
		}
		if f.Class != status.OwnerPerson || len(f.Owners) == 0 || f.Owners[0].Manager != "kubectl-patch" {
			t.Fatalf("want the removed subject owned by kubectl-patch (person), got\n%s", describe(a))
		}
	}
}
