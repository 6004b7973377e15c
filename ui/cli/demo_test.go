package cli

import (
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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/internal/controlplane"
	"kdrift.dev/kdrift/internal/demo"
	"kdrift.dev/kdrift/internal/enginetest"
)

// What the slow tier (the end-to-end and README tests) shares: the real
// kdrift binary, built once per package run and removed after the tests.
var (
	binaryOnce sync.Once
	binaryDir  string
	binaryPath string
	binaryErr  error
)

// removeBinary is TestMain's AfterTests hook.
func removeBinary() {
	if binaryDir != "" {
		_ = os.RemoveAll(binaryDir)
	}
}

// skipSlow skips the slow tier under -short, and only there.
func skipSlow(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("slow tier: -short (builds the kdrift binary and stages the demo on the control plane)")
	}
}

// kdriftBinary builds the real kdrift binary, once per package run, the
// way README.md says (`go build .` at the repository root).
func kdriftBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		root, err := controlplane.RepoRoot()
		if err != nil {
			binaryErr = err
			return
		}
		if binaryDir, binaryErr = os.MkdirTemp("", "kdrift-bin-"); binaryErr != nil {
			return
		}
		binaryPath = filepath.Join(binaryDir, "kdrift")
		cmd := exec.Command("go", "build", "-o", binaryPath, ".")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binaryErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatalf("building kdrift: %v", binaryErr)
	}
	return binaryPath
}

// testAuthor is who the slow tier's actions are recorded as.
const (
	testAuthorName  = "Erin Oncall"
	testAuthorEmail = "erin.oncall@example.com"
)

// stageTestDemo stages a fresh demo (repository, synced apps, staging's
// freeze, the staged incident, the cloud controller) on the package's
// shared control plane and returns its repository. The cloud controller
// stops when the test ends; t.TempDir removes the repository.
//
// The demo's namespaces and App names are fixed (digital-human-*), and
// prefixing them would make the demo differ from what `kdrift demo` shows
// and README.md describes. So the tests that use it take turns instead of
// owning a namespace each: they do not run in parallel, each stops all it
// started (kdrift, tmux, the controller) before it returns, and each stages
// its own fresh repository. Staging syncs every app from Git first (a
// forced Server-Side Apply), which puts back whatever an earlier test
// changed, then stages the incident again; so each test sees the demo
// exactly as `kdrift demo` sets it up, whatever ran before it. The
// package's other tests use namespaces of their own.
func stageTestDemo(t *testing.T) *demo.Repo {
	t.Helper()
	start := time.Now()
	step := func(format string, a ...any) {
		t.Logf("demo [%5.1fs] %s", time.Since(start).Seconds(), fmt.Sprintf(format, a...))
	}
	handOverDemo(t)
	// No deadline: the cloud controller runs on this context until the
	// cleanup stops it; go test's -timeout bounds a stuck setup.
	s, err := stageDemo(context.Background(), t.TempDir(), enginetest.Kubeconfig(), enginetest.Clientset(t), step)
	t.Cleanup(s.stop)
	if err != nil {
		t.Fatalf("staging the demo: %v", err)
	}
	return s.repo
}

// handOverDemo removes the repository annotation from the demo objects an
// earlier test's demo applied: each staging is a new repository (a new
// folder), and kdrift never takes over another repository's objects until
// they are handed over this way (README "The App").
func handOverDemo(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	dyn := enginetest.Dynamic(t)
	patch := []byte(`[{"op":"remove","path":"/metadata/annotations/kdrift.dev~1repo"}]`)
	for _, name := range demo.Apps {
		for _, gvr := range []schema.GroupVersionResource{
			{Version: "v1", Resource: "namespaces"}, {Version: "v1", Resource: "configmaps"}, {Version: "v1", Resource: "services"}, {Version: "v1", Resource: "secrets"},
			{Group: "apps", Version: "v1", Resource: "deployments"}, {Group: "apps", Version: "v1", Resource: "statefulsets"},
		} {
			var ri dynamic.ResourceInterface = dyn.Resource(gvr)
			if gvr.Resource != "namespaces" {
				ri = dyn.Resource(gvr).Namespace(name)
			}
			l, err := ri.List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=kdrift"})
			if err != nil {
				t.Fatalf("hand over the demo's %s: %v", gvr.Resource, err)
			}
			for _, o := range l.Items {
				if _, ok := o.GetAnnotations()[apply.AnnotationRepo]; !ok || o.GetAnnotations()[apply.AnnotationApp] != name {
					continue
				}
				if _, err := ri.Patch(ctx, o.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
					t.Fatalf("hand over %s %s: %v", gvr.Resource, o.GetName(), err)
				}
			}
		}
	}
}

// isolatedEnv is the environment the slow tier runs kdrift, git and bash
// in: the process's own, with HOME and the XDG folders in temporary
// folders, no system or global Git config, a fixed Git and kdrift identity,
// no colour, and the kdrift binary's folder first on PATH.
func isolatedEnv(t *testing.T, bin string) []string {
	t.Helper()
	home := t.TempDir()
	env := []string{}
	for _, kv := range os.Environ() {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "KUBECONFIG",
			"PATH", "TMUX", "TMUX_PANE", "GIT_DIR", "GIT_WORK_TREE", "KDRIFT_AUTHOR", "NO_COLOR", "TERM",
			"SOPS_AGE_KEY", "SOPS_AGE_KEY_FILE":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		"KUBECONFIG="+enginetest.Kubeconfig(),
		"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME="+testAuthorName, "GIT_AUTHOR_EMAIL="+testAuthorEmail,
		"GIT_COMMITTER_NAME="+testAuthorName, "GIT_COMMITTER_EMAIL="+testAuthorEmail,
		"KDRIFT_AUTHOR="+testAuthorName+" <"+testAuthorEmail+">",
		"NO_COLOR=1",
		"TERM=xterm-256color",
	)
}

// TestDemoHealthy runs `kdrift demo --no-ui` (the real binary, its own
// control plane with hollow nodes, as `make demo` does): the Pods of the
// demo run, so prod becomes Healthy, and staging is Healthy with the 12
// render workers its on-call scaled to while it stays frozen. The time
// from "up" to prod Healthy is logged (the target is a minute; the
// deadline here is generous because the machine may be busy).
func TestDemoHealthy(t *testing.T) {
	skipSlow(t)
	bin := kdriftBinary(t)
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cacheDir, err := controlplane.DefaultCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, "demo", "--no-ui", "--dir", dir)
	cmd.Dir = root
	// The demo reuses the control plane binary the package's TestMain
	// built, in the cache a person's `make demo` uses.
	cmd.Env = append(isolatedEnv(t, bin), "KDRIFT_CACHE_DIR="+filepath.Dir(cacheDir))
	var out, errOut syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("kdrift demo exited with %v after ctrl-c\n%s", err, errOut.String())
			}
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("kdrift demo did not stop within 60s of ctrl-c\n%s", errOut.String())
		}
	}
	t.Cleanup(stop)

	deadline := time.Now().Add(5 * time.Minute)
	for !strings.Contains(out.String(), "kdrift demo is up.") {
		select {
		case err := <-exited:
			stopped = true
			t.Fatalf("kdrift demo exited (%v) before it was up\n%s\n%s", err, out.String(), errOut.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("kdrift demo not up within 5 minutes\n%s\n%s", out.String(), errOut.String())
		}
	}
	up := time.Now()
	t.Logf("kdrift demo up in %s", up.Sub(started).Round(100*time.Millisecond))
	if !strings.Contains(errOut.String(), "hollow nodes") {
		t.Fatalf("kdrift demo did not say it starts nodes:\n%s", errOut.String())
	}

	ctx := context.Background()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	g := []string{"--repo", filepath.Join(dir, "digital-human"), "--kubeconfig", kubeconfig}
	type appDoc struct {
		Name     string `json:"name"`
		Health   string `json:"health"`
		SelfHeal string `json:"selfHeal"`
	}
	health := func() map[string]appDoc {
		code, o, e := kdrift(t, ctx, append([]string{"status", "-o", "json"}, g...)...)
		var doc struct {
			Apps []appDoc `json:"apps"`
		}
		if err := json.Unmarshal([]byte(o), &doc); err != nil || code != exitOK {
			t.Fatalf("status -o json: code %d err %v\n%s\n%s", code, err, o, e)
		}
		m := map[string]appDoc{}
		for _, a := range doc.Apps {
			m[a.Name] = a
		}
		return m
	}
	var last map[string]appDoc
	for {
		last = health()
		if last[demo.AppProd].Health == "Healthy" && last[demo.AppStaging].Health == "Healthy" {
			break
		}
		if time.Since(up) > 3*time.Minute {
			t.Fatalf("not Healthy within 3 minutes of the demo being up: %+v\n%s", last, errOut.String())
		}
		time.Sleep(time.Second)
	}
	t.Logf("prod and staging Healthy %s after the demo was up", time.Since(up).Round(100*time.Millisecond))
	if s := last[demo.AppStaging]; s.SelfHeal != "frozen" {
		t.Fatalf("staging is Healthy but not frozen: %+v", s)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := cs.AppsV1().Deployments(demo.Namespace("staging")).Get(ctx, "render-worker", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != demo.StagingReplicas || d.Status.AvailableReplicas != demo.StagingReplicas {
		t.Fatalf("staging's render-worker: spec %d, available %d; want %d of both", *d.Spec.Replicas, d.Status.AvailableReplicas, demo.StagingReplicas)
	}
	stop()
	if _, err := os.Stat(kubeconfig); !os.IsNotExist(err) {
		t.Fatalf("the demo's kubeconfig is still there after it stopped (%v)", err)
	}
}
