package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/fight"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

const frozenYAML = `  freeze:
    reason: INC-77 hold replicas
    by: Lao Li <lao.li@example.com>
    at: "2026-01-01T00:00:00Z"
`

// scaleAs sets a Deployment's replicas through the scale subresource as
// manager (kubectl scale writes as "kubectl").
func scaleAs(t *testing.T, ns, name, manager string, n int32) {
	t.Helper()
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: n}}
	if _, err := enginetest.Clientset(t).AppsV1().Deployments(ns).UpdateScale(context.Background(), name, s, metav1.UpdateOptions{FieldManager: manager}); err != nil {
		t.Fatal(err)
	}
}

func replicasOf(t *testing.T, ns, name string) int32 {
	t.Helper()
	d, err := enginetest.Clientset(t).AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return *d.Spec.Replicas
}

// TestReadOnlyWritesNothing: with ReadOnly, neither Run nor Reconcile
// heals a drifted self-heal app, and Sync is refused (a dry run is not):
// the object's resourceVersion and managedFields stay as they were.
func TestReadOnlyWritesNothing(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "readonly")
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/apps.yaml":   appYAML("ro", "deploy/app", ns, true, true, ""),
		"deploy/app/dep.yaml": deploymentYAML("web", 2),
	})
	rw := newEngine(t, repo, nil)
	if _, err := rw.Sync(ctx, "ro", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	scaleAs(t, ns, "web", "kubectl", 5)
	before, err := enginetest.Clientset(t).AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	e := newEngine(t, repo, func(o *engine.Options) { o.ReadOnly = true })
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Sync(ctx, "ro", engine.SyncOptions{Prune: true}); !errors.Is(err, engine.ErrReadOnly) {
		t.Fatalf("Sync on a read-only engine: %v, want ErrReadOnly", err)
	}
	if res, err := e.Sync(ctx, "ro", engine.SyncOptions{DryRun: true}); err != nil || len(res.Objects) != 1 {
		t.Fatalf("dry-run Sync on a read-only engine: %+v %v, want the plan", res.Objects, err)
	}
	runEngine(t, e)
	eventually(t, "drift seen by the read-only Run", func() bool {
		a, _ := e.App("ro")
		return a.Sync == status.SyncOutOfSync
	})
	time.Sleep(500 * time.Millisecond) // time a wrongful heal would have had
	after, err := enginetest.Clientset(t).AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion || len(after.ManagedFields) != len(before.ManagedFields) || *after.Spec.Replicas != 5 {
		t.Fatalf("a read-only engine wrote: resourceVersion %s -> %s, managedFields %d -> %d, replicas %d",
			before.ResourceVersion, after.ResourceVersion, len(before.ManagedFields), len(after.ManagedFields), *after.Spec.Replicas)
	}
}

// upstreamRepos is a bare remote with two clones: mine (the engine's
// working copy) and theirs (a colleague's).
type upstreamRepos struct {
	remote, mine, theirs *gittest.Repo
}

func newUpstream(t *testing.T, files map[string]string) upstreamRepos {
	t.Helper()
	u := upstreamRepos{remote: gittest.InitBare(t), mine: gittest.Init(t)}
	u.mine.Commit("first", files)
	u.mine.Git("remote", "add", "origin", u.remote.Dir)
	u.mine.Git("push", "-q", "-u", "origin", "main")
	u.theirs = gittest.Init(t)
	u.theirs.Git("remote", "add", "origin", u.remote.Dir)
	u.theirs.Git("fetch", "-q", "origin")
	u.theirs.Git("reset", "-q", "--hard", "origin/main")
	u.theirs.Git("branch", "-q", "--set-upstream-to=origin/main")
	return u
}

// TestHealFromUpstreamOnly: the engine opened on a clone that is behind
// its upstream fetches first and applies the upstream's revision, without
// moving the clone's branch or files; a local commit not pushed is not
// applied, but a freeze in one is honoured; a force-pushed upstream older
// than what kdrift applied is reported, not applied; a remote that cannot
// be reached keeps the upstream as last fetched, never the local branch.
func TestHealFromUpstreamOnly(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "upstream")
	u := newUpstream(t, map[string]string{
		".kdrift/apps.yaml":   appYAML("up", "deploy/app", ns, true, false, ""),
		"deploy/app/dep.yaml": deploymentYAML("web", 2),
	})
	first := u.mine.Git("rev-parse", "HEAD")
	second := u.theirs.Commit("three replicas", map[string]string{"deploy/app/dep.yaml": deploymentYAML("web", 3)})
	u.theirs.Git("push", "-q", "origin", "main")

	e := newEngine(t, u.mine, nil)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a := appStatus(t, e, "up")
	if a.Revision != second || a.RevisionRef != "origin/main" || a.NoUpstream {
		t.Fatalf("compared %s from %q (noUpstream %v), want the upstream's %s from origin/main", a.Revision, a.RevisionRef, a.NoUpstream, second)
	}
	if got := replicasOf(t, ns, "web"); got != 3 {
		t.Fatalf("replicas %d, want the upstream's 3", got)
	}
	if head := u.mine.Git("rev-parse", "main"); head != first {
		t.Fatalf("the person's branch moved to %s", head)
	}
	if st := u.mine.Git("status", "--porcelain"); st != "" {
		t.Fatalf("the person's files changed:\n%s", st)
	}

	// A local commit that is not pushed is never applied.
	u.mine.Git("pull", "-q", "--ff-only")
	u.mine.Commit("local five", map[string]string{"deploy/app/dep.yaml": deploymentYAML("web", 5)})
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := replicasOf(t, ns, "web"); got != 3 {
		t.Fatalf("replicas %d: an unpushed commit was applied", got)
	}

	// A freeze in an unpushed commit counts at once.
	u.mine.Commit("local freeze", map[string]string{".kdrift/apps.yaml": appYAML("up", "deploy/app", ns, true, false, frozenYAML)})
	scaleAs(t, ns, "web", "kubectl", 9)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a = appStatus(t, e, "up")
	if got := replicasOf(t, ns, "web"); got != 9 || a.SelfHeal != status.SelfHealFrozen || !a.LocalFreeze || a.Revision != second {
		t.Fatalf("replicas %d selfHeal %s localFreeze %v revision %s: the local freeze must stop healing while the upstream stays the truth", got, a.SelfHeal, a.LocalFreeze, a.Revision)
	}

	// The upstream is reset to an older commit: kdrift says so and does
	// not move the cluster back.
	u.mine.Git("reset", "-q", "--hard", second)
	u.theirs.Git("reset", "-q", "--hard", first)
	u.theirs.Git("push", "-q", "--force", "origin", "main")
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a = appStatus(t, e, "up")
	if got := replicasOf(t, ns, "web"); got != 9 || a.Revision != first || !strings.Contains(a.Error, "moved back") {
		t.Fatalf("replicas %d revision %s error %q: a force-pushed older upstream must be reported, not applied", got, a.Revision, a.Error)
	}

	// The remote goes away: the upstream as last fetched stays the truth.
	if err := renameAway(u.remote.Dir); err != nil {
		t.Fatal(err)
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a = appStatus(t, e, "up")
	if a.Revision != first || !strings.HasPrefix(a.Error, "Git unreachable since ") {
		t.Fatalf("revision %s error %q: want the last fetched %s and Git unreachable", a.Revision, a.Error, first)
	}
}

// TestNoUpstreamIsLocalTruth: a branch with no upstream is read as is, and
// the status says so.
func TestNoUpstreamIsLocalTruth(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "noupstream")
	repo := gittest.Init(t)
	head := repo.Commit("app", map[string]string{
		".kdrift/apps.yaml":   appYAML("local", "deploy/app", ns, false, false, ""),
		"deploy/app/dep.yaml": deploymentYAML("web", 1),
	})
	e := newEngine(t, repo, nil)
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a := appStatus(t, e, "local")
	if !a.NoUpstream || a.RevisionRef != "main" || a.Revision != head {
		t.Fatalf("noUpstream %v ref %q revision %s, want the local branch main at %s", a.NoUpstream, a.RevisionRef, a.Revision, head)
	}
}

// TestPersonOverridesAreHealedAndReported: four kubectl scales in a row
// are each healed, no fight is declared, and one Override event says so
// for the burst.
func TestPersonOverridesAreHealedAndReported(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "override")
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/apps.yaml":   appYAML("override", "deploy/app", ns, true, false, ""),
		"deploy/app/dep.yaml": deploymentYAML("web", 2),
	})
	e := newEngine(t, repo, func(o *engine.Options) { o.Fight = fight.Options{Rewrites: 3, Window: 10 * time.Minute} })
	if _, err := e.Sync(ctx, "override", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	rec := record(t, e)
	runEngine(t, e)
	eventually(t, "first pass", func() bool { a, _ := e.App("override"); return a.Sync == status.SyncSynced })
	healed := func() int {
		return rec.count(func(ev status.Event) bool { h, ok := ev.(status.Healed); return ok && h.Ref.Name == "web" })
	}
	for i := 1; i <= 4; i++ {
		scaleAs(t, ns, "web", "kubectl", 7)
		eventually(t, "kubectl write healed", func() bool { return healed() >= i && replicasOf(t, ns, "web") == 2 })
	}
	eventually(t, "app Synced", func() bool { a, _ := e.App("override"); return a.Sync == status.SyncSynced })
	overrides := rec.count(func(ev status.Event) bool {
		o, ok := ev.(status.Override)
		return ok && o.Manager == "kubectl" && o.Field == "/spec/replicas" && o.Ref.Name == "web" && o.Rewrites == 3
	})
	if overrides != 1 {
		t.Fatalf("%d Override events, want one for the burst", overrides)
	}
	if n := rec.count(func(ev status.Event) bool { _, ok := ev.(status.Fight); return ok }); n != 0 {
		t.Fatalf("%d Fight events: a person's overrides must never make a fight", n)
	}
	if a, _ := e.App("override"); len(a.Fights) != 0 {
		t.Fatalf("fights %+v", a.Fights)
	}
}

// TestContextSelects: --context runs only the Apps whose destination is
// that context (no destination is the current context) and never points
// another App at it; a context no App uses is a clear error.
func TestContextSelects(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "ctxsel")
	kc := kubeconfigWithDeadContext(t)
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	current := cfg.CurrentContext
	repo := gittest.Init(t)
	repo.Commit("apps", map[string]string{
		".kdrift/here.yaml":    appYAML("here", "deploy/here", ns, true, false, ""),
		".kdrift/there.yaml":   strings.Replace(appYAML("there", "deploy/there", ns, true, false, ""), "  destination:\n", "  destination:\n    context: dead\n", 1),
		"deploy/here/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: here\n",
		"deploy/there/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: there\n",
	})
	e := newEngine(t, repo, func(o *engine.Options) { o.Kubeconfig = kc; o.Context = current })
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.App("there"); ok {
		t.Fatal("--context of the current context ran the App whose destination is dead")
	}
	if a := appStatus(t, e, "here"); a.Sync != status.SyncSynced {
		t.Fatalf("here: %s", describe(a))
	}
	cms := enginetest.Clientset(t).CoreV1().ConfigMaps(ns)
	if _, err := cms.Get(ctx, "there", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the App of context dead was applied to %s: %v", current, err)
	}
	if _, err := e.Sync(ctx, "there", engine.SyncOptions{}); err == nil || !strings.Contains(err.Error(), "destination is context dead") {
		t.Fatalf("Sync of an App outside --context: %v", err)
	}

	none := newEngine(t, repo, func(o *engine.Options) { o.Kubeconfig = kc; o.Context = "prod" })
	err = none.Reconcile(ctx)
	var nac *engine.NoAppsInContextError
	if !errors.As(err, &nac) || !strings.Contains(err.Error(), "dead") || !strings.Contains(err.Error(), current) {
		t.Fatalf("--context prod: %v, want NoAppsInContextError naming the contexts used", err)
	}
}

// TestUnreadableObjectIsErrorNotApplied: when the live object cannot be
// read (403 on list and get), the resource is Error with the cause and
// nothing is applied, even though the credentials could apply it.
func TestUnreadableObjectIsErrorNotApplied(t *testing.T) {
	for _, run := range []bool{false, true} {
		name := "one-shot"
		if run {
			name = "run"
		}
		t.Run(name, func(t *testing.T) { unreadableNotApplied(t, run) })
	}
}

// unreadableNotApplied checks one pass (Reconcile, or Run with informers
// whose list is refused) over an object the credentials can write but not
// read.
func unreadableNotApplied(t *testing.T, run bool) {
	ctx := context.Background()
	ns := namespace(t, map[bool]string{false: "blind", true: "blind-run"}[run])
	cs := enginetest.Clientset(t)
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "writer"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "write-only"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "patch", "update"}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "writer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "write-only"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "writer", Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kc := enginetest.TokenKubeconfig(t, ns, "writer")
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/apps.yaml":  appYAML("blind", "deploy/app", ns, true, false, ""),
		"deploy/app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: conf\ndata:\n  a: \"1\"\n",
	})
	e := newEngine(t, repo, func(o *engine.Options) { o.Kubeconfig = kc })
	if run {
		runEngine(t, e)
		eventually(t, "the app compared", func() bool { a, ok := e.App("blind"); return ok && a.Sync != status.SyncUnknown })
	} else if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a := appStatus(t, e, "blind")
	r, ok := resource(a, "ConfigMap", "conf")
	if !ok || r.Status != status.ResourceError || !strings.Contains(r.Message, "forbidden") || !strings.Contains(r.Message, "nothing applied") {
		t.Fatalf("want the ConfigMap Error with the 403, got:\n%s", describe(a))
	}
	if a.Sync != status.SyncError {
		t.Fatalf("sync %s, want Error", a.Sync)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "conf", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("an object that could not be read was applied: %v", err)
	}
	if n := e.Stats().Applies; n != 0 {
		t.Fatalf("%d applies", n)
	}
}

// TestFightEndsWhenRenderChanges: a controller that keeps rewriting a
// healed field makes a fight; a commit that changes nothing the app
// renders leaves it, and one that changes what the app renders ends it
// (healing resumes).
func TestFightEndsWhenRenderChanges(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "fightreset")
	repo := gittest.Init(t)
	cm := func(v string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: conf\ndata:\n  v: \"" + v + "\"\n"
	}
	repo.Commit("app", map[string]string{
		".kdrift/apps.yaml":   appYAML("fr", "deploy/app", ns, true, false, ""),
		"deploy/app/dep.yaml": deploymentYAML("tug", 2),
		"deploy/app/cm.yaml":  cm("1"),
	})
	e := newEngine(t, repo, func(o *engine.Options) { o.Fight = fight.Options{Rewrites: 3, Window: 10 * time.Minute} })
	if _, err := e.Sync(ctx, "fr", engine.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	// The first write is plain drift; three more, each after a heal, make
	// the fight.
	for i := 0; i < 4; i++ {
		scaleAs(t, ns, "tug", "autoscaler-x", 7)
		if err := e.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if a := appStatus(t, e, "fr"); len(a.Fights) != 1 || replicasOf(t, ns, "tug") != 7 {
		t.Fatalf("fights %+v replicas %d, want a fight and the controller's 7", a.Fights, replicasOf(t, ns, "tug"))
	}
	repo.Commit("notes", map[string]string{"docs/notes.md": "nothing the app renders\n"})
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if a := appStatus(t, e, "fr"); len(a.Fights) != 1 || replicasOf(t, ns, "tug") != 7 {
		t.Fatalf("a commit outside the app ended the fight: fights %+v replicas %d", a.Fights, replicasOf(t, ns, "tug"))
	}
	repo.Commit("config", map[string]string{"deploy/app/cm.yaml": cm("2")})
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if a := appStatus(t, e, "fr"); len(a.Fights) != 0 || replicasOf(t, ns, "tug") != 2 {
		t.Fatalf("a change to what the app renders must end the fight: fights %+v replicas %d", a.Fights, replicasOf(t, ns, "tug"))
	}
}
