package ui

import (
	"bytes"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/ui/report"
)

// Golden snapshots run the real Bubble Tea program at 120×30 with colours
// off. They wait for visible text in the program's output only where the
// Backend answers asynchronously (the apps, an object); keys and Quit are
// then handled in the order sent, so the final model is deterministic.
// The final screen (ANSI stripped) is compared with testdata/<test>.golden;
// `go test ./ui -run Golden -update` rewrites them.

func startProgram(t *testing.T, be *fakeBackend) *teatest.TestModel {
	t.Helper()
	return startProgramAt(t, be, 120, 30)
}

// startProgramAt is startProgram on a w×h terminal.
func startProgramAt(t *testing.T, be *fakeBackend, w, h int) *teatest.TestModel {
	t.Helper()
	m := NewModel(t.Context(), be, testConfig())
	return teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.NoTTY)))
}

func waitText(t *testing.T, tm *teatest.TestModel, text string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains(b, []byte(text))
	}, teatest.WithDuration(30*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
}

func finish(t *testing.T, tm *teatest.TestModel) *Model {
	t.Helper()
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	m := tm.FinalModel(t, teatest.WithFinalTimeout(30*time.Second)).(*Model)
	golden.RequireEqual(t, ansi.Strip(m.render()))
	return m
}

func keyPress(tm *teatest.TestModel, keys ...string) {
	for _, k := range keys {
		tm.Send(press(k))
	}
}

func TestGoldenAppsView(t *testing.T) {
	tm := startProgram(t, newFake())
	waitText(t, tm, "web-staging")
	keyPress(tm, "j")
	m := finish(t, tm)
	if m.State() != "ready" || m.Breadcrumb() != "apps" {
		t.Errorf("state %s, views %s", m.State(), m.Breadcrumb())
	}
}

// At 80×24 the apps view keeps every app's freeze in sight: the revision,
// destination and out-of-sync age give way first.
func TestGoldenAppsViewAt80(t *testing.T) {
	tm := startProgramAt(t, frozenFleet(), 80, 24)
	waitText(t, tm, "web-staging")
	keyPress(tm, "j")
	finish(t, tm)
}

// Apps another GitOps engine owns name it in SELF-HEAL within the same
// 80-column priorities.
func TestGoldenAppsViewOwnersAt80(t *testing.T) {
	tm := startProgramAt(t, ownedFleet(), 80, 24)
	waitText(t, tm, "guestbook")
	finish(t, tm)
}

func TestGoldenDiffView(t *testing.T) {
	tm := startProgram(t, newFake())
	waitText(t, tm, "web-staging")
	keyPress(tm, "j", "enter")
	waitText(t, tm, "Deployment (1)")
	keyPress(tm, "j", "enter")
	waitText(t, tm, "kubectl Update/scale")
	keyPress(tm, "n")
	m := finish(t, tm)
	if m.Breadcrumb() != "apps › app render-prod › diff Deployment/prod/render" {
		t.Errorf("views %s", m.Breadcrumb())
	}
}

func TestGoldenOwnershipView(t *testing.T) {
	tm := startProgram(t, newFake())
	waitText(t, tm, "web-staging")
	keyPress(tm, "j", "enter")
	waitText(t, tm, "Deployment (1)")
	keyPress(tm, "j", "o")
	waitText(t, tm, "Git sets it too")
	finish(t, tm)
}

func TestGoldenFreezeDialog(t *testing.T) {
	be := newFake()
	tm := startProgram(t, be)
	waitText(t, tm, "web-staging")
	keyPress(tm, "G", "space", "k", "space", "f")
	tm.Type("INC-77 payments")
	keyPress(tm, "tab")
	tm.Type("2h")
	m := finish(t, tm)
	if m.dialog == nil {
		t.Fatal("the dialog closed")
	}
	if len(be.Calls()) != 0 {
		t.Errorf("calls before enter: %v", be.Calls())
	}
}

func TestGoldenReadonlyAndBanner(t *testing.T) {
	cfg := testConfig()
	cfg.Readonly = true
	be := newFake()
	m := NewModel(t.Context(), be, cfg)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 30),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.NoTTY)))
	waitText(t, tm, "web-staging")
	tm.Send(ReachabilityMsg{Event: reach(false)})
	keyPress(tm, "s")
	finish(t, tm)
}

// The revert dialog shows, under the Git diff, what the cluster would
// change: the Deployment an overlay's images: tag names, with the image
// live and after the revert, and an object the revert removes from Git.
func TestGoldenRevertDialog(t *testing.T) {
	be := newFake()
	be.preview = revertPreviewText(t)
	tm := startProgram(t, be)
	waitText(t, tm, "web-staging")
	keyPress(tm, "j", "h")
	waitText(t, tm, "bump image")
	keyPress(tm, "j", "r")
	waitText(t, tm, "Revert aaaaaaa")
	m := finish(t, tm)
	if m.dialog == nil {
		t.Fatal("the dialog closed")
	}
	if len(be.Calls()) != 1 {
		t.Errorf("calls before enter: %v", be.Calls())
	}
}

// revertPreviewText is a revert preview as backend.Engine writes it:
// an overlay's images: tag and a ConfigMap the commit added.
func revertPreviewText(t *testing.T) string {
	t.Helper()
	p := report.RevertPreview{
		Files: []actions.FileDiff{{Path: "deploy/render/prod/kustomization.yaml", Status: "modified", Diff: "--- a/deploy/render/prod/kustomization.yaml\n+++ b/deploy/render/prod/kustomization.yaml\n@@ -1,5 +1,4 @@\n resources:\n - ../base\n-- limits.yaml\n images:\n - name: render\n-  newTag: \"2.4\"\n+  newTag: \"2.3\"\n"}},
		Cluster: engine.TreePreview{Apps: []engine.AppPreview{{App: "render-prod", SelfHeal: true, Prune: true, Objects: []engine.ObjectPreview{
			{Ref: status.ObjectRef{Group: "", Version: "v1", Kind: "ConfigMap", Namespace: "prod", Name: "render-limits"}, Change: engine.PreviewPrune},
			{Ref: status.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "prod", Name: "render"}, Change: engine.PreviewUpdate, Fields: []status.FieldChange{
				{Path: "/spec/template/spec/containers/0/image", Live: "registry.example/render:2.4", Desired: "registry.example/render:2.3", Class: status.OwnerKdrift},
			}},
		}}}},
	}
	var b strings.Builder
	if err := report.WriteRevertPreview(&b, p); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
