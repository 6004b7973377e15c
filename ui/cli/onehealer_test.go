package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/publish"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/ui/backend"
)

// healerFixture is a shared remote with one self-healing App (a
// Deployment of 2 replicas in its own namespace), a person's clone of it,
// and the kdrift namespace the controllers elect and publish in.
type healerFixture struct {
	app, ns, kdriftNS string
	remote, clone     string
	bin, kubeconfig   string
}

func newHealerFixture(t *testing.T, name string) *healerFixture {
	t.Helper()
	f := &healerFixture{app: name, ns: name, kdriftNS: name + "-kdrift", bin: kdriftBinary(t), kubeconfig: enginetest.Kubeconfig()}
	if _, err := enginetest.Clientset(t).CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	work := gitRepo(t, map[string]string{
		".kdrift/app.yaml": fmt.Sprintf("apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: %s\nspec:\n  path: deploy\n  destination:\n    namespace: %s\n  syncPolicy:\n    selfHeal: true\n", f.app, f.ns),
		"deploy/web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: main
        image: registry.example/web:1.0
`,
	})
	dir := t.TempDir()
	f.remote, f.clone = filepath.Join(dir, "remote.git"), filepath.Join(dir, "clone")
	git(t, dir, "clone", "-q", "--bare", work, f.remote)
	git(t, dir, "clone", "-q", f.remote, f.clone)
	return f
}

// controller starts `kdrift controller` on the remote with short Lease
// timings (a standby takes over 3 s after the leader died).
func (f *healerFixture) controller(t *testing.T) *controller {
	t.Helper()
	args := []string{"controller", "--repo", "file://" + f.remote, "--kubeconfig", f.kubeconfig, "--namespace", f.kdriftNS,
		"--lease-duration", "3s", "--lease-renew-deadline", "2s", "--lease-retry-period", "250ms",
		"--log-format", "json", "--metrics-addr", "127.0.0.1:0"}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_CACHE_HOME=" + t.TempDir()}
	return startController(t, f.bin, args, env)
}

// action runs a kdrift action in the person's clone and returns its
// output.
func (f *healerFixture) action(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(f.bin, append(args, "--kubeconfig", f.kubeconfig, "--kdrift-namespace", f.kdriftNS, "--author", "Erin Oncall <erin@example.com>")...)
	cmd.Dir = f.clone
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kdrift %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// run runs kdrift in the person's clone and returns its exit code and
// outputs.
func (f *healerFixture) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(f.bin, append(args, "--kubeconfig", f.kubeconfig, "--kdrift-namespace", f.kdriftNS)...)
	cmd.Dir = f.clone
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return code, out.String(), errOut.String()
}

func (f *healerFixture) resourceVersion(t *testing.T) string {
	t.Helper()
	d, err := enginetest.Clientset(t).AppsV1().Deployments(f.ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.ResourceVersion
}

func (f *healerFixture) replicas(t *testing.T) int32 {
	t.Helper()
	d, err := enginetest.Clientset(t).AppsV1().Deployments(f.ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		return -1
	}
	return *d.Spec.Replicas
}

func (f *healerFixture) scale(t *testing.T, n int32) {
	t.Helper()
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.ns}, Spec: autoscalingv1.ScaleSpec{Replicas: n}}
	if _, err := enginetest.Clientset(t).AppsV1().Deployments(f.ns).UpdateScale(context.Background(), "web", s, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
}

// published is the App's AppStatus's status, nil until there is one.
func (f *healerFixture) published(t *testing.T) map[string]any {
	t.Helper()
	list, err := enginetest.Dynamic(t).Resource(publish.GVR).Namespace(f.kdriftNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil
	}
	for _, o := range list.Items {
		if name, _, _ := unstructured.NestedString(o.Object, "status", "name"); name == f.app {
			st, _, _ := unstructured.NestedMap(o.Object, "status")
			return st
		}
	}
	return nil
}

// count is how many events of type typ c wrote.
func (c *controller) count(t *testing.T, typ string) int {
	n := 0
	for _, ev := range c.events(t) {
		if ev["type"] == typ {
			n++
		}
	}
	return n
}

// leading says whether c logged that it took the Lease.
func (c *controller) leading() bool {
	return strings.Contains(c.errOut.String(), "leading: this kdrift heals and publishes")
}

// TestOneHealer: two controllers on one repository and cluster, only the
// Lease's holder heals; it publishes the App's status (kubectl get
// appstatuses shows it); a freeze pushed from a person's clone tells the
// leader, which honours it within seconds, and the unfreeze as well; when
// the leader is killed, the standby heals the next drift.
func TestOneHealer(t *testing.T) {
	skipSlow(t)
	f := newHealerFixture(t, "one-healer")
	c1 := f.controller(t)
	eventually(t, c1, "the first controller to take the Lease", 60*time.Second, c1.leading)
	eventually(t, c1, "the App synced and its status published", 60*time.Second, func() bool {
		st := f.published(t)
		return f.replicas(t) == 2 && st != nil && st["sync"] == "Synced"
	})
	c2 := f.controller(t)
	eventually(t, c2, "the standby to compare the App", 60*time.Second, func() bool { return c2.count(t, "AppStatusChanged") > 0 })

	// Only the leader heals.
	for _, n := range []int32{5, 6} {
		f.scale(t, n)
		eventually(t, c1, fmt.Sprintf("the leader to heal the scale to %d", n), 30*time.Second, func() bool { return f.replicas(t) == 2 && c1.count(t, "Healed") > 0 })
	}
	if c2.leading() || c2.count(t, "Healed") != 0 {
		t.Fatalf("the standby healed or led:\n%s\n%s", c2.out.String(), c2.errOut.String())
	}

	// kubectl sees the published status.
	out, err := exec.Command("kubectl", "--kubeconfig", f.kubeconfig, "-n", f.kdriftNS, "get", "appstatuses").CombinedOutput()
	if err != nil || !strings.Contains(string(out), f.app) || !strings.Contains(string(out), "Synced") {
		t.Fatalf("kubectl get appstatuses: %v\n%s", err, out)
	}

	// A freeze pushed from the clone: the leader is told, fetches and
	// honours it within seconds.
	pushed := time.Now()
	out2 := f.action(t, "freeze", f.app, "--reason", "INC-42 hold web at 7")
	if !strings.Contains(out2, "leader: told "+f.kdriftNS+"/") {
		t.Fatalf("freeze did not tell the leader:\n%s", out2)
	}
	eventually(t, c1, "the leader to publish the freeze", 10*time.Second, func() bool {
		st := f.published(t)
		return st != nil && st["selfHeal"] == "frozen"
	})
	t.Logf("freeze pushed to honoured: %s", time.Since(pushed).Round(time.Millisecond))
	out, err = exec.Command("kubectl", "--kubeconfig", f.kubeconfig, "-n", f.kdriftNS, "get", "appstatuses").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "INC-42 hold web at 7") || !strings.Contains(string(out), "frozen") || !strings.Contains(string(out), "Erin Oncall") {
		t.Fatalf("kubectl get appstatuses does not show the freeze: %v\n%s", err, out)
	}
	healed := c1.count(t, "Healed")
	f.scale(t, 7)
	time.Sleep(2 * time.Second)
	if r := f.replicas(t); r != 7 || c1.count(t, "Healed") != healed {
		t.Fatalf("the frozen app was healed: replicas %d", r)
	}
	// kdrift status and diff follow the leader (no compare of their own);
	// --live compares from here.
	code, stdout, stderr := f.run(t, "diff", f.app)
	if code != exitDrift || !strings.Contains(stderr, "following "+f.kdriftNS+"/") || !strings.Contains(stdout, "replicas") {
		t.Fatalf("diff from the published status: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = f.run(t, "status", "--live")
	if code != exitOK || strings.Contains(stderr, "following") || !strings.Contains(stdout, "frozen by Erin Oncall") {
		t.Fatalf("status --live: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = f.run(t, "status")
	if code != exitOK || !strings.Contains(stderr, "following "+f.kdriftNS+"/") || !strings.Contains(stdout, "frozen by Erin Oncall") {
		t.Fatalf("status from the published status: exit %d\n%s\n%s", code, stdout, stderr)
	}
	out2 = f.action(t, "unfreeze", f.app, "--reason", "INC-42 resolved")
	if !strings.Contains(out2, "leader: told") {
		t.Fatalf("unfreeze did not tell the leader:\n%s", out2)
	}
	eventually(t, c1, "the leader to heal once unfrozen", 15*time.Second, func() bool { return f.replicas(t) == 2 })

	// A terminal UI on the clone follows the leader: it shows the fleet
	// from the published statuses, says whom it follows, and writes
	// nothing.
	before := f.resourceVersion(t)
	u := startTmuxUI(t, f.bin, f.clone, "--kdrift-namespace", f.kdriftNS)
	u.waitFor("the UI to follow the leader and list the app", func(s string) bool {
		return strings.Contains(s, "following "+f.kdriftNS+"/") && strings.Contains(s, f.app) && strings.Contains(s, "Synced")
	})
	time.Sleep(time.Second)
	u.stop()
	if after := f.resourceVersion(t); after != before {
		t.Fatalf("the Deployment changed while a UI followed the leader (resourceVersion %s -> %s)", before, after)
	}
	// The same, in process: the attached backend lists the fleet from the
	// watch and compares one object only when its diff is opened.
	viewer, err := engine.New(engine.Options{Repo: f.clone, Kubeconfig: f.kubeconfig, CacheDir: t.TempDir(), MayWrite: func(string) bool { return false }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	be, err := backend.NewAttached(ctx, viewer, actions.RepoOptions{Repo: f.clone}, publish.NewWatcher(enginetest.Dynamic(t), f.kdriftNS, viewer.RepoIdentity()), func() string { return "" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	if apps := be.Apps(); len(apps) != 1 || apps[0].Name != f.app || len(apps[0].Resources) != 1 {
		t.Fatalf("attached apps: %+v", apps)
	}
	d, err := be.Detail(ctx, f.app, be.Apps()[0].Resources[0].Ref)
	if err != nil || len(d.Live) == 0 || len(d.Desired) == 0 {
		t.Fatalf("attached detail: %v %+v", err, d)
	}
	if st := viewer.Stats(); st.Passes != 0 || st.Applies != 0 || st.DryRuns > 2 {
		t.Fatalf("the attached engine compared or wrote: %+v", st)
	}

	// Kill the leader: the standby takes the Lease and heals the next
	// drift.
	if err := c1.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-c1.done
	killed := time.Now()
	f.scale(t, 4)
	eventually(t, c2, "the standby to take over and heal", 30*time.Second, func() bool {
		return c2.leading() && f.replicas(t) == 2 && c2.count(t, "Healed") > 0
	})
	t.Logf("leader killed to first heal by the standby: %s", time.Since(killed).Round(time.Millisecond))
	c2.stop(t)
	c2.noErrors(t)
}

// TestAttachedUITakesOver: a terminal UI follows the leader while a
// person types a freeze reason; the leader is killed (its Lease is not
// released, as with SIGKILL). The UI goes on with its own engine in place
// (the dialog and the half-typed reason stay), says on its top line that
// the leader is gone, takes the Lease and heals the next drift.
func TestAttachedUITakesOver(t *testing.T) {
	skipSlow(t)
	f := newHealerFixture(t, "handover")
	c1 := f.controller(t)
	eventually(t, c1, "the controller to take the Lease", 60*time.Second, c1.leading)
	eventually(t, c1, "the App synced and its status published", 60*time.Second, func() bool {
		st := f.published(t)
		return f.replicas(t) == 2 && st != nil && st["sync"] == "Synced"
	})
	u := startTmuxUI(t, f.bin, f.clone, "--kdrift-namespace", f.kdriftNS)
	u.waitFor("the UI to follow the leader", func(s string) bool {
		return strings.Contains(s, "following "+f.kdriftNS+"/") && strings.Contains(s, f.app) && strings.Contains(s, "Synced")
	})
	u.keys("f")
	u.waitFor("the freeze dialog", func(s string) bool { return strings.Contains(s, "Freeze") && strings.Contains(s, "reason") })
	u.typeText("INC-77 hold web at")
	u.waitFor("the typed reason", func(s string) bool { return strings.Contains(s, "INC-77 hold web at") })

	if err := c1.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-c1.done
	killed := time.Now()
	u.waitFor("the UI to take the Lease", func(s string) bool {
		return strings.Contains(s, "leader "+f.kdriftNS+"/") && strings.Contains(s, " gone at ") && strings.Contains(s, "comparing here; healing from this terminal")
	})
	t.Logf("leader killed to the terminal healing: %s", time.Since(killed).Round(time.Millisecond))
	if s := u.screen(); !strings.Contains(s, "INC-77 hold web at") {
		t.Fatalf("the half-typed reason is gone after the switch:\n%s", s)
	}
	u.keys("Escape")
	f.scale(t, 5)
	eventually(t, nil, "the terminal to heal the scale", 60*time.Second, func() bool { return f.replicas(t) == 2 })
	eventually(t, nil, "the terminal to publish the App's status", 30*time.Second, func() bool {
		st := f.published(t)
		return st != nil && st["sync"] == "Synced"
	})
}
