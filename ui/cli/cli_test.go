package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/internal/enginetest"
)

func TestMain(m *testing.M) {
	// Commands keep discovery under the user's cache folder: the tests'
	// go to a folder of their own.
	cache, err := os.MkdirTemp("", "kdrift-cli-cache-")
	if err != nil {
		panic(err)
	}
	// The local control plane's binary stays in the real cache: it is
	// found through the cache folder, which XDG_CACHE_HOME moves.
	if os.Getenv("KDRIFT_CACHE_DIR") == "" {
		if d, err := os.UserCacheDir(); err == nil {
			os.Setenv("KDRIFT_CACHE_DIR", filepath.Join(d, "kdrift"))
		}
	}
	// The go command finds its build cache through XDG_CACHE_HOME too:
	// pin it first, or every build of the kdrift binary here compiles
	// everything again (the standard library included) into the empty
	// folder.
	if os.Getenv("GOCACHE") == "" {
		if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
			os.Setenv("GOCACHE", strings.TrimSpace(string(out)))
		}
	}
	os.Setenv("XDG_CACHE_HOME", cache)
	// The fault campaign (faults_test.go) throttles kdrift through a
	// FlowSchema, restarts the apiserver and slows etcd.
	enginetest.Main(m, enginetest.Options{PriorityAndFairness: true, Faults: true, AfterTests: func() {
		removeBinary()
		os.RemoveAll(cache)
	}})
}

// syncBuffer is a bytes.Buffer safe to read while a command writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func kdrift(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut syncBuffer
	code := run(ctx, args, &cliEnv{stdout: &out, stderr: &errOut})
	return code, out.String(), errOut.String()
}

// gitRepo makes a Git repository in a temporary folder and commits files
// with the git command.
func gitRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=Test", "-c", "user.email=test@example.com", "commit", "-qm", "app"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

func cliRepo(t *testing.T, ns string) string {
	t.Helper()
	if _, err := enginetest.Clientset(t).CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return gitRepo(t, map[string]string{
		".kdrift/app.yaml": fmt.Sprintf("apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: %[1]s\nspec:\n  path: deploy\n  destination:\n    namespace: %[1]s\n  syncPolicy:\n    selfHeal: false\n", ns),
		"deploy/dep.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: render
spec:
  replicas: 6
  selector:
    matchLabels: {app: render}
  template:
    metadata:
      labels: {app: render}
    spec:
      containers:
      - name: main
        image: registry.example/render:1.0
`,
	})
}

// TestDiffSyncStatusCLI: diff exits 1 on drift and 0 in sync, sync
// applies, a scale shows with its owner, status -o json parses, and an
// unknown app exits 2.
func TestDiffSyncStatusCLI(t *testing.T) {
	ctx := context.Background()
	repo := cliRepo(t, "cli")
	g := []string{"--repo", repo, "--kubeconfig", enginetest.Kubeconfig()}

	if code, out, errOut := kdrift(t, ctx, append([]string{"diff", "cli"}, g...)...); code != exitDrift || !strings.Contains(out, "Deployment/cli/render  Missing") {
		t.Fatalf("diff before sync: code %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := kdrift(t, ctx, append([]string{"sync", "cli", "--dry-run"}, g...)...); code != exitOK || !strings.Contains(out, "create Deployment/cli/render") {
		t.Fatalf("sync --dry-run: code %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := kdrift(t, ctx, append([]string{"sync", "cli"}, g...)...); code != exitOK {
		t.Fatalf("sync: code %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := kdrift(t, ctx, append([]string{"diff", "cli"}, g...)...); code != exitOK || out != "" {
		t.Fatalf("diff after sync: code %d\n%q\n%s", code, out, errOut)
	}
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "render", Namespace: "cli"}, Spec: autoscalingv1.ScaleSpec{Replicas: 12}}
	if _, err := enginetest.Clientset(t).AppsV1().Deployments("cli").UpdateScale(ctx, "render", s, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := kdrift(t, ctx, append([]string{"diff", "cli"}, g...)...)
	for _, want := range []string{"Deployment/cli/render  OutOfSync", "/spec/replicas", "desired: 6", "live:    12", "owner:   kubectl (Update/scale, person)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("diff after scale lacks %q: code %d\n%s\n%s", want, code, out, errOut)
		}
	}
	if code != exitDrift {
		t.Fatalf("diff after scale: code %d, want 1", code)
	}

	code, out, errOut = kdrift(t, ctx, append([]string{"status", "-o", "json"}, g...)...)
	var doc struct {
		Apps []struct {
			Name           string `json:"name"`
			Sync           string `json:"sync"`
			SelfHeal       string `json:"selfHeal"`
			DriftedObjects int    `json:"driftedObjects"`
			Drifted        []struct {
				Fields []struct {
					Path  string `json:"path"`
					Class string `json:"class"`
				} `json:"fields"`
			} `json:"drifted"`
		} `json:"apps"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitOK {
		t.Fatalf("status -o json: code %d err %v\n%s\n%s", code, err, out, errOut)
	}
	if len(doc.Apps) != 1 || doc.Apps[0].Sync != "OutOfSync" || doc.Apps[0].SelfHeal != "off" || doc.Apps[0].DriftedObjects != 1 ||
		doc.Apps[0].Drifted[0].Fields[0].Path != "/spec/replicas" || doc.Apps[0].Drifted[0].Fields[0].Class != "person" {
		t.Fatalf("status json: %s", out)
	}
	if code, out, _ := kdrift(t, ctx, append([]string{"status"}, g...)...); code != exitOK || !strings.Contains(out, "OutOfSync") {
		t.Fatalf("status: %d %s", code, out)
	}
	if code, _, errOut := kdrift(t, ctx, append([]string{"diff", "nope"}, g...)...); code != exitError || !strings.Contains(errOut, `"nope"`) {
		t.Fatalf("diff of an unknown app: code %d %s", code, errOut)
	}
}

// TestControllerJSONLines: the controller writes one JSON object per line
// with time, type and app, and stops on cancel.
func TestControllerJSONLines(t *testing.T) {
	repo := cliRepo(t, "ctl")
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"controller", "--repo", repo, "--kubeconfig", enginetest.Kubeconfig()}, &cliEnv{stdout: &out, stderr: &errOut})
	}()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(out.String(), `"type":"DriftDetected"`) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("controller exit %d: %s", code, errOut.String())
	}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	types := map[string]bool{}
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", sc.Text(), err)
		}
		if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(m["time"])); err != nil || m["app"] != "ctl" {
			t.Fatalf("line lacks time or app: %s", sc.Text())
		}
		types[fmt.Sprint(m["type"])] = true
	}
	if !types["DriftDetected"] || !types["AppStatusChanged"] {
		t.Fatalf("want DriftDetected and AppStatusChanged lines, got %v:\n%s", types, out.String())
	}
}

// TestDiffRenderCacheFollowsCommits: one-shot commands keep renders on
// disk, and a commit that changes what an App renders is never answered
// from the kept render.
func TestDiffRenderCacheFollowsCommits(t *testing.T) {
	ctx := context.Background()
	repo := cliRepo(t, "cli-rcache")
	g := []string{"--repo", repo, "--kubeconfig", enginetest.Kubeconfig()}
	if code, out, errOut := kdrift(t, ctx, append([]string{"sync", "cli-rcache"}, g...)...); code != exitOK {
		t.Fatalf("sync: code %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := kdrift(t, ctx, append([]string{"diff", "cli-rcache", "--live"}, g...)...); code != exitOK {
		t.Fatalf("diff after sync: code %d\n%s\n%s", code, out, errOut)
	}
	kept, err := filepath.Glob(filepath.Join(render.DefaultCacheDir(), "*.json"))
	if err != nil || len(kept) == 0 {
		t.Fatalf("no render kept in %s (%v)", render.DefaultCacheDir(), err)
	}
	dep := filepath.Join(repo, "deploy", "dep.yaml")
	raw, err := os.ReadFile(dep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dep, []byte(strings.Replace(string(raw), "replicas: 6", "replicas: 3", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", "-A"}, {"-c", "user.name=Test", "-c", "user.email=test@example.com", "commit", "-qm", "scale down"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	code, out, errOut := kdrift(t, ctx, append([]string{"diff", "cli-rcache", "--live"}, g...)...)
	if code != exitDrift || !strings.Contains(out, "desired: 3") || !strings.Contains(out, "live:    6") {
		t.Fatalf("diff after the commit: code %d\n%s\n%s", code, out, errOut)
	}
}
