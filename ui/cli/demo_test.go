package cli

import (
	"context"
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
