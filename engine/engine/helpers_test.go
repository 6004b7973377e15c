package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

func TestMain(m *testing.M) {
	enginetest.Main(m, enginetest.Options{AfterTests: func() {
		// The benchmarks' fleet repository is shared by all of them.
		if fleet.dir != "" {
			_ = os.RemoveAll(fleet.dir)
		}
	}})
}

// appYAML declares an App.
func appYAML(name, path, ns string, selfHeal, prune bool, extra string) string {
	return fmt.Sprintf(`apiVersion: kdrift.dev/v1alpha1
kind: App
metadata:
  name: %s
spec:
  path: %s
  destination:
    namespace: %s
  syncPolicy:
    selfHeal: %v
    prune: %v
%s`, name, path, ns, selfHeal, prune, extra)
}

func deploymentYAML(name string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: %[2]d
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      containers:
      - name: main
        image: registry.example/%[1]s:1.0
        ports:
        - containerPort: 8080
`, name, replicas)
}

// appNames is the names of e's apps, in its order, separated by spaces.
func appNames(e *engine.Engine) string {
	var names []string
	for _, a := range e.Apps() {
		names = append(names, a.Name)
	}
	return strings.Join(names, " ")
}

// namespace makes a fresh namespace for one test.
func namespace(t *testing.T, name string) string {
	t.Helper()
	cs := enginetest.Clientset(t)
	_, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// newEngine opens an engine on repo with the test cluster.
func newEngine(t *testing.T, repo *gittest.Repo, mod func(*engine.Options)) *engine.Engine {
	t.Helper()
	opts := engine.Options{Repo: repo.Dir, Kubeconfig: enginetest.Kubeconfig(), CacheDir: t.TempDir()}
	if mod != nil {
		mod(&opts)
	}
	e, err := engine.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func appStatus(t *testing.T, e *engine.Engine, name string) status.AppStatus {
	t.Helper()
	a, ok := e.App(name)
	if !ok {
		t.Fatalf("app %s has no status; apps: %+v", name, e.Apps())
	}
	return a
}

func resource(a status.AppStatus, kind, name string) (status.ResourceStatus, bool) {
	for _, r := range a.Resources {
		if r.Ref.Kind == kind && r.Ref.Name == name {
			return r, true
		}
	}
	return status.ResourceStatus{}, false
}

func field(r status.ResourceStatus, path string) (status.FieldChange, bool) {
	for _, f := range r.Fields {
		if f.Path == path {
			return f, true
		}
	}
	return status.FieldChange{}, false
}

// eventually polls cond with a generous timeout; never a timing assertion.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// kubeconfigWithDeadContext writes a copy of the test kubeconfig with one
// more context, "dead", whose apiserver does not answer.
func kubeconfigWithDeadContext(t *testing.T) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(enginetest.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	dead := cfg.Clusters[cur.Cluster].DeepCopy()
	dead.Server = "https://127.0.0.1:1"
	cfg.Clusters["dead"] = dead
	ctx := cur.DeepCopy()
	ctx.Cluster = "dead"
	cfg.Contexts["dead"] = ctx
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func describe(a status.AppStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s sync=%s health=%s err=%q\n", a.Name, a.Sync, a.Health, a.Error)
	for _, r := range a.Resources {
		fmt.Fprintf(&b, "  %s %s %s\n", r.Ref, r.Status, r.Message)
		for _, f := range r.Fields {
			fmt.Fprintf(&b, "    %s desired=%v live=%v class=%s owners=%v extra=%v ignored=%v\n", f.Path, f.Desired, f.Live, f.Class, f.Owners, f.Extra, f.Ignored)
		}
	}
	return b.String()
}

// renameAway moves a folder so that a file:// remote pointing at it no
// longer answers.
func renameAway(dir string) error {
	return os.Rename(dir, dir+".gone")
}
