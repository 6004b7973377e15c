package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http/cgi"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"

	"kdrift.dev/kdrift/engine/publish"
	"kdrift.dev/kdrift/internal/enginetest"
)

// proxyMode is what a faultProxy does with connections.
type proxyMode int

const (
	// proxyPass forwards every connection to the target.
	proxyPass proxyMode = iota
	// proxyBlackHole accepts every connection and never answers.
	proxyBlackHole
	// proxyRefuse closes the listener: connections are refused.
	proxyRefuse
)

func (m proxyMode) String() string {
	return [...]string{"pass", "black hole", "refuse"}[m]
}

// faultProxy is a TCP proxy on a fixed loopback port in front of a real
// server (a Git remote, the apiserver) that a test switches between
// passing, black-holing and refusing. Every switch cuts the connections
// open at the time, as a restarted or unplugged server does.
type faultProxy struct {
	t      testing.TB
	target string
	addr   string

	mu    sync.Mutex
	mode  proxyMode
	l     net.Listener
	conns map[net.Conn]bool
}

func newFaultProxy(t testing.TB, target string) *faultProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{t: t, target: target, addr: l.Addr().String(), l: l, conns: map[net.Conn]bool{}}
	go p.serve(l)
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.l != nil {
			_ = p.l.Close()
			p.l = nil
		}
		p.cutLocked()
	})
	return p
}

func (p *faultProxy) serve(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		mode := p.mode
		p.conns[c] = true
		p.mu.Unlock()
		if mode != proxyPass {
			continue // held open, never read, never answered
		}
		go p.forward(c)
	}
}

func (p *faultProxy) forward(c net.Conn) {
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.conns[up] = true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	_ = c.Close()
	_ = up.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

func (p *faultProxy) cutLocked() {
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

// set switches the proxy to mode, cutting every open connection.
func (p *faultProxy) set(mode proxyMode) {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutLocked()
	p.mode = mode
	switch {
	case mode == proxyRefuse && p.l != nil:
		_ = p.l.Close()
		p.l = nil
	case mode != proxyRefuse && p.l == nil:
		var err error
		for i := 0; i < 50; i++ {
			if p.l, err = net.Listen("tcp", p.addr); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			p.t.Fatalf("listen again on %s: %v", p.addr, err)
		}
		go p.serve(p.l)
	}
}

// pass switches the proxy back to passing unless it passes already.
func (p *faultProxy) pass() {
	p.mu.Lock()
	mode := p.mode
	p.mu.Unlock()
	if mode != proxyPass {
		p.set(proxyPass)
	}
}

// fleet is the fault campaign's fixture: a remote of n self-healing,
// pruning Apps (app-00 … each one ConfigMap of the same name in one
// namespace, data gen = the generation Git holds), served over HTTP by
// the real `git http-backend` behind a faultProxy; the apiserver behind
// another; the kdrift controller's token (a ServiceAccount bound to
// cluster-admin, so a FlowSchema can match it) and a cache folder kept
// across its restarts (as the Pod's emptyDir is).
type fleet struct {
	n                 int
	ns, kdriftNS, sa  string
	bare, work, clone string
	url               string
	git, api          *faultProxy
	kubeconfig        string
	cache, home, bin  string

	// uids are the ConfigMaps' UIDs at the first sync: a changed UID is
	// an object deleted and made again.
	uids map[string]types.UID
	// gen is the generation Git holds for the Apps; frozen the Apps a
	// freeze holds at the value in frozenAt.
	gen      int
	frozen   map[string]bool
	frozenAt map[string]string
	nudges   int
}

func appName(i int) string { return fmt.Sprintf("app-%02d", i) }

func newFleet(t *testing.T, name string, n int) *fleet {
	t.Helper()
	ctx := context.Background()
	cs := enginetest.Clientset(t)
	f := &fleet{n: n, ns: name, kdriftNS: name + "-kdrift", sa: "kdrift", bin: kdriftBinary(t),
		cache: t.TempDir(), home: t.TempDir(), frozen: map[string]bool{}, frozenAt: map[string]string{}}
	for _, ns := range []string{f.ns, f.kdriftNS} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// An object nobody declared: no prune may take it.
	if _, err := cs.CoreV1().ConfigMaps(f.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bystander"}, Data: map[string]string{"owner": "a person"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(f.kdriftNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: f.sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-kdrift-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: f.sa, Namespace: f.kdriftNS}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
	})

	files := map[string]string{}
	for i := 0; i < n; i++ {
		a := appName(i)
		files[".kdrift/"+a+".yaml"] = fmt.Sprintf("apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: %s\nspec:\n  path: apps/%s\n  destination:\n    namespace: %s\n  syncPolicy:\n    selfHeal: true\n    prune: true\n", a, a, f.ns)
	}
	f.gen = 1
	for k, v := range f.genFiles(1) {
		files[k] = v
	}
	seed := gitRepo(t, files)
	dir := t.TempDir()
	f.bare, f.work = filepath.Join(dir, "remote.git"), filepath.Join(dir, "work")
	git(t, dir, "clone", "-q", "--bare", seed, f.bare)
	git(t, f.bare, "config", "http.receivepack", "true")
	git(t, dir, "clone", "-q", f.bare, f.work)

	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	srv := httptest.NewServer(&cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + dir, "GIT_HTTP_EXPORT_ALL=1"},
	})
	t.Cleanup(srv.Close)
	f.git = newFaultProxy(t, strings.TrimPrefix(srv.URL, "http://"))
	f.url = "http://" + f.git.addr + "/remote.git"
	// A person's clone, from the same address the controller reads.
	f.clone = filepath.Join(dir, "clone")
	git(t, dir, "clone", "-q", f.url, f.clone)

	// The controller's kubeconfig: the ServiceAccount's token, the
	// apiserver reached through a proxy the test can cut.
	kc := enginetest.TokenKubeconfig(t, f.kdriftNS, f.sa)
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			t.Fatal(err)
		}
		if f.api == nil {
			f.api = newFaultProxy(t, u.Host)
		}
		u.Host = f.api.addr
		c.Server = u.String()
	}
	f.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, f.kubeconfig); err != nil {
		t.Fatal(err)
	}
	return f
}

// genFiles are the Apps' manifests at generation g.
func (f *fleet) genFiles(g int) map[string]string {
	files := map[string]string{}
	for i := 0; i < f.n; i++ {
		a := appName(i)
		files["apps/"+a+"/cm.yaml"] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  app: %s\n  gen: \"%d\"\n", a, a, g)
	}
	return files
}

// commitGen commits generation g of every App (and extra files) in the
// work clone and pushes it to the remote on disk, past the proxy;
// it returns the commit.
func (f *fleet) commitGen(t *testing.T, g int, extra map[string]string) string {
	t.Helper()
	files := f.genFiles(g)
	for k, v := range extra {
		files[k] = v
	}
	git(t, f.work, "pull", "-q", "--ff-only")
	for name, body := range files {
		p := filepath.Join(f.work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, f.work, "add", "-A")
	git(t, f.work, "commit", "-qm", fmt.Sprintf("generation %d", g))
	git(t, f.work, "push", "-q", "origin", "main")
	f.gen = g
	return git(t, f.work, "rev-parse", "HEAD")
}

// start runs `kdrift controller` on the fleet, through wrap (a command
// and its arguments put before the binary) when given.
func (f *fleet) start(t *testing.T, wrap ...string) *controller {
	t.Helper()
	args := []string{"controller", "--repo", f.url, "--kubeconfig", f.kubeconfig, "--namespace", f.kdriftNS,
		"--lease-duration", "3s", "--lease-renew-deadline", "2s", "--lease-retry-period", "250ms",
		"--log-format", "json", "--metrics-addr", "127.0.0.1:0"}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + f.home, "XDG_CACHE_HOME=" + f.cache, "KDRIFT_GIT_TIMEOUT=5s"}
	bin := f.bin
	if len(wrap) > 0 {
		bin = wrap[0]
		args = append(append(wrap[1:], f.bin), args...)
	}
	return startController(t, bin, args, env)
}

// kill SIGKILLs c, as the kernel's OOM killer or a node loss does.
func kill(t *testing.T, c *controller) {
	t.Helper()
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatalf("SIGKILL the controller: %v (it had exited: %v)\nstderr:\n%s", err, c.cmd.ProcessState, tail(c.errOut.String(), 30))
	}
	<-c.done
}

// configMaps are the namespace's ConfigMaps by name.
func (f *fleet) configMaps(t *testing.T) map[string]corev1.ConfigMap {
	t.Helper()
	list, err := enginetest.Clientset(t).CoreV1().ConfigMaps(f.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.ConfigMap{}
	for _, cm := range list.Items {
		out[cm.Name] = cm
	}
	return out
}

// statuses are the published AppStatuses' status by App.
func (f *fleet) statuses(t *testing.T) map[string]map[string]any {
	t.Helper()
	list, err := enginetest.Dynamic(t).Resource(publish.GVR).Namespace(f.kdriftNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil
	}
	out := map[string]map[string]any{}
	for _, o := range list.Items {
		st, _, _ := unstructured.NestedMap(o.Object, "status")
		if name, _ := st["name"].(string); name != "" {
			out[name] = st
		}
	}
	return out
}

// identity is the repository identity the controller publishes.
func (f *fleet) identity(t *testing.T) string {
	t.Helper()
	for _, st := range f.statuses(t) {
		if id, _ := st["repository"].(string); id != "" {
			return id
		}
	}
	t.Fatal("no AppStatus published yet")
	return ""
}

// nudge tells the leader to fetch now, as an action does after a push
// (a value of its own each time: the leader fetches when it changes).
func (f *fleet) nudge(t *testing.T, commit string) {
	t.Helper()
	f.nudges++
	_ = publish.Nudge(context.Background(), enginetest.Clientset(t), enginetest.Dynamic(t), f.kdriftNS, f.identity(t), fmt.Sprintf("%s.%d", commit, f.nudges), nil)
}

// drift changes an App's ConfigMap as a person with kubectl would.
func (f *fleet) drift(t *testing.T, app, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"data":{"gen":%q}}`, value)
	if _, err := enginetest.Clientset(t).CoreV1().ConfigMaps(f.ns).Patch(context.Background(), app, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
}

// wrong lists what breaks the campaign's invariants now, whatever the
// fault: an App's object deleted (gone, or made again under a new UID),
// the bystander pruned, a frozen App's object changed from what the
// person set.
func (f *fleet) wrong(t *testing.T) []string {
	t.Helper()
	cms := f.configMaps(t)
	var bad []string
	if _, ok := cms["bystander"]; !ok {
		bad = append(bad, "the bystander ConfigMap nobody declared was deleted")
	}
	for i := 0; i < f.n; i++ {
		a := appName(i)
		cm, ok := cms[a]
		switch {
		case f.uids == nil:
			// Before the first sync: nothing to lose yet.
		case !ok:
			bad = append(bad, a+" deleted")
		case f.uids != nil && cm.UID != f.uids[a]:
			bad = append(bad, a+" deleted and made again")
		case f.frozen[a] && cm.Data["gen"] != f.frozenAt[a]:
			bad = append(bad, fmt.Sprintf("%s is frozen at gen %q but holds %q", a, f.frozenAt[a], cm.Data["gen"]))
		}
	}
	return bad
}

// lagging lists the Apps not yet converged on Git's generation at
// commit: the object not at gen, or the published status not Synced at
// commit without an error. Frozen Apps are left out.
func (f *fleet) lagging(t *testing.T, commit string) []string {
	t.Helper()
	cms, sts := f.configMaps(t), f.statuses(t)
	want := strconv.Itoa(f.gen)
	var out []string
	for i := 0; i < f.n; i++ {
		a := appName(i)
		if f.frozen[a] {
			continue
		}
		st := sts[a]
		switch {
		case cms[a].Data["gen"] != want:
			out = append(out, fmt.Sprintf("%s gen %q", a, cms[a].Data["gen"]))
		case st == nil:
			out = append(out, a+" not published")
		case st["sync"] != "Synced" || st["revision"] != commit || st["error"] != nil:
			out = append(out, fmt.Sprintf("%s %v at %.7v (%v)", a, st["sync"], st["revision"], st["error"]))
		}
	}
	sort.Strings(out)
	return out
}

// converge waits until every App is converged at commit, failing on any
// broken invariant on the way, and returns how long it took.
func (f *fleet) converge(t *testing.T, c *controller, what, commit string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		if bad := f.wrong(t); len(bad) > 0 {
			t.Fatalf("%s: %s", what, strings.Join(bad, "; "))
		}
		lag := f.lagging(t, commit)
		if len(lag) == 0 {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("%s: not converged at %.7s after %s: %d Apps lag: %s", what, commit, timeout, len(lag), strings.Join(lag[:min(len(lag), 8)], "; "))
			if c != nil {
				msg += "\nstderr:\n" + tail(c.errOut.String(), 40)
			}
			t.Fatal(msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// lockFiles lists the Git lock files under the controller's cache folder.
func (f *fleet) lockFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(f.cache, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".lock") {
			out = append(out, strings.TrimPrefix(p, f.cache+"/"))
		}
		return nil
	})
	return out
}

// cacheClones are the Git repositories in the controller's cache folder.
func (f *fleet) cacheClones(t *testing.T) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(f.cache, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && fileExists(filepath.Join(p, "HEAD")) && fileExists(filepath.Join(p, "objects")) {
			out = append(out, p)
			return filepath.SkipDir
		}
		return nil
	})
	return out
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// fsck runs `git fsck --full` on every cache clone.
func (f *fleet) fsck(t *testing.T) {
	t.Helper()
	clones := f.cacheClones(t)
	if len(clones) == 0 {
		t.Fatalf("no Git repository in the controller's cache folder %s", f.cache)
	}
	for _, c := range clones {
		cmd := exec.Command("git", "--git-dir", c, "fsck", "--full", "--no-dangling")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the cache clone %s is corrupt: git fsck: %v\n%s", c, err, out)
		}
	}
}

// figure logs one measured figure of the campaign in a fixed form
// (`go test -v -run TestFaultCampaign ./ui/cli | grep 'fault figure'`).
func figure(t *testing.T, fault, what string, d time.Duration) {
	t.Helper()
	t.Logf("fault figure | %s | %s | %s", fault, what, d.Round(10*time.Millisecond))
}

// showStatus runs `kdrift status` in the person's clone, as the on-call
// engineer would, fails unless it answers (exit 0, or the drift exit) and
// its output holds want, logs its first lines and returns its output.
func (f *fleet) showStatus(t *testing.T, when, want string) string {
	t.Helper()
	code, out, errOut := runIn(t, f.clone, f.bin, "status", "--kubeconfig", enginetest.Kubeconfig(), "--kdrift-namespace", f.kdriftNS)
	if code != exitOK && code != exitDrift || !strings.Contains(out, want) {
		t.Fatalf("kdrift status %s: exit %d, want output holding %q\n%s\n%s", when, code, want, out, errOut)
	}
	t.Logf("kdrift status %s:\n%s", when, firstLines(out, 4))
	return out
}
