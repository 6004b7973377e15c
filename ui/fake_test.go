package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/keymap"
	"kdrift.dev/kdrift/ui/backend"
)

// fakeBackend is a Backend built by hand: canned answers, and a log of
// the mutating calls made.
type fakeBackend struct {
	mu        sync.Mutex
	events    chan status.Event
	apps      []status.AppStatus
	details   map[status.ObjectRef]status.ObjectDetail
	plan      backend.SyncPlan
	history   []status.Commit
	owners    diff.OwnerMap
	preview   string
	fail      error
	calls     []string
	refreshed int
	// lastSync and lastSeen are what the last Sync and Unfreeze carried.
	lastSync backend.SyncRequest
	lastSeen map[string]*app.Freeze
}

func (f *fakeBackend) record(format string, a ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, a...))
}

func (f *fakeBackend) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeBackend) Events() <-chan status.Event {
	if f.events == nil {
		return nil
	}
	return f.events
}
func (f *fakeBackend) Apps() []status.AppStatus { return f.apps }
func (f *fakeBackend) Refresh()                 { f.mu.Lock(); f.refreshed++; f.mu.Unlock() }

// fakeObjectError is an error that names its object first, as the
// engine's Detail errors do (engine.ObjectError).
type fakeObjectError struct {
	ref status.ObjectRef
	msg string
}

func (e *fakeObjectError) Error() string            { return e.msg }
func (e *fakeObjectError) Object() status.ObjectRef { return e.ref }

func (f *fakeBackend) Detail(_ context.Context, a string, ref status.ObjectRef) (status.ObjectDetail, error) {
	d, ok := f.details[ref]
	if !ok {
		return d, &fakeObjectError{ref: ref, msg: fmt.Sprintf("%s: not found in app %s", ref, a)}
	}
	return d, nil
}
func (f *fakeBackend) PlanSync(_ context.Context, a string) (backend.SyncPlan, error) {
	p := f.plan
	p.App = a
	return p, f.fail
}
func (f *fakeBackend) Sync(_ context.Context, a string, req backend.SyncRequest) error {
	f.record("sync %s", a)
	f.lastSync = req
	return f.fail
}
func (f *fakeBackend) Freeze(_ context.Context, apps []string, reason string, d time.Duration) (backend.CommitResult, error) {
	f.record("freeze %s reason=%q for=%s", strings.Join(apps, ","), reason, d)
	return backend.CommitResult{Hash: "f00dfeed1234", Pushed: true}, f.fail
}
func (f *fakeBackend) Unfreeze(_ context.Context, apps []string, reason string, seen map[string]*app.Freeze) (backend.CommitResult, error) {
	f.record("unfreeze %s reason=%q", strings.Join(apps, ","), reason)
	f.lastSeen = seen
	return backend.CommitResult{Hash: "0ff1ce", Pushed: true}, f.fail
}
func (f *fakeBackend) FreezeResource(_ context.Context, a string, refs []app.ResourceRef, fields []string, reason string, d time.Duration) (backend.CommitResult, error) {
	var names []string
	for _, r := range refs {
		names = append(names, r.String())
	}
	f.record("freeze %s %s %v reason=%q for=%s", a, strings.Join(names, ","), fields, reason, d)
	return backend.CommitResult{Hash: "f00dfeed1234", Pushed: true}, f.fail
}
func (f *fakeBackend) UnfreezeResource(_ context.Context, a string, ref app.ResourceRef, fields []string, reason string, seen *app.Freeze) (backend.CommitResult, error) {
	f.record("unfreeze %s %s %v reason=%q seen=%v", a, ref, fields, reason, seen != nil)
	return backend.CommitResult{Hash: "0ff1ce", Pushed: true}, f.fail
}
func (f *fakeBackend) Ignore(_ context.Context, a string, rule app.IgnoreRule, reason string) (backend.CommitResult, error) {
	f.record("ignore %s %s/%s %v reason=%q", a, rule.Kind, rule.Name, rule.JSONPointers, reason)
	return backend.CommitResult{Hash: "1bad1dea", Pushed: false, Warning: "remote unreachable; retried on next fetch"}, f.fail
}
func (f *fakeBackend) Owners(_ context.Context, opts diff.OwnerMapOptions) (diff.OwnerMap, error) {
	f.record("owners %d kinds", len(opts.Kinds))
	return f.owners, f.fail
}
func (f *fakeBackend) History(_ context.Context, a string) ([]status.Commit, error) {
	f.record("history %s", a)
	return f.history, f.fail
}
func (f *fakeBackend) RevertPreview(_ context.Context, sha string) (string, error) {
	return f.preview, f.fail
}
func (f *fakeBackend) Revert(_ context.Context, sha, reason string) (backend.CommitResult, error) {
	f.record("revert %s reason=%q", sha, reason)
	return backend.CommitResult{Hash: "5eed", Pushed: true}, f.fail
}

var errBoom = errors.New("git push: remote rejected")

// testNow is the fixed clock of every test: 2026-12-02 16:00 UTC.
var testNow = time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)

func at(h, m int) *time.Time {
	t := time.Date(2026, 12, 2, h, m, 0, 0, time.UTC)
	return &t
}

var (
	deployRef = status.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "prod", Name: "render"}
	svcRef    = status.ObjectRef{Version: "v1", Kind: "Service", Namespace: "prod", Name: "render"}
	cmRef     = status.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "prod", Name: "render-old"}
	kubectl   = status.Owner{Manager: "kubectl", Operation: "Update", Subresource: "scale", Class: status.OwnerPerson}
	kdriftOwn = status.Owner{Manager: "kdrift", Operation: "Apply", Time: at(14, 0), Class: status.OwnerKdrift}
	hpa       = status.Owner{Manager: "kube-controller-manager", Operation: "Update", Time: at(15, 50), Class: status.OwnerController}
)

func deployStatus() status.ResourceStatus {
	return status.ResourceStatus{Ref: deployRef, Status: status.ResourceOutOfSync, Health: status.HealthHealthy,
		Fields: []status.FieldChange{
			{Path: "/spec/replicas", Desired: 6, Live: 12, Owners: []status.Owner{kubectl}, Class: status.OwnerPerson},
			{Path: "/metadata/annotations/note", Live: "hotfix", Owners: []status.Owner{{Manager: "kubectl-edit", Operation: "Update", Time: at(15, 0), Class: status.OwnerPerson}}, Class: status.OwnerPerson, Extra: true},
			{Path: "/spec/template/spec/containers/0/resources", Ignored: true, Owners: []status.Owner{hpa}, Class: status.OwnerController},
		}}
}

func testApps() []status.AppStatus {
	return []status.AppStatus{
		{Name: "api-prod", File: ".kdrift/apps.yaml", Path: "deploy/api/prod", Destination: app.Destination{Context: "prod", Namespace: "prod"},
			Sync: status.SyncSynced, Health: status.HealthHealthy, SelfHeal: status.SelfHealOn, Revision: "a1b2c3d4e5f6", RevisionAuthor: "Mia Chen <mia@example.com>", ComparedAt: testNow},
		{Name: "render-prod", File: ".kdrift/apps.yaml", Path: "deploy/render/prod", Destination: app.Destination{Context: "prod", Namespace: "prod"},
			Sync: status.SyncOutOfSync, Health: status.HealthProgressing, SelfHeal: status.SelfHealFrozen,
			Freeze:         &app.Freeze{Reason: "INC-1234 render workers 6->12", By: "Lao Li <lao.li@example.com>", At: *at(15, 0), Until: at(19, 0)},
			OutOfSyncSince: at(14, 30), Revision: "b2c3d4e5f6a7", RevisionAuthor: "Lao Li <lao.li@example.com>", ComparedAt: testNow,
			Resources: []status.ResourceStatus{deployStatus(),
				{Ref: svcRef, Status: status.ResourceSynced, Health: status.HealthHealthy},
				{Ref: cmRef, Status: status.ResourceExtraneous, Health: status.HealthUnknown}}},
		{Name: "batch-staging", Path: "deploy/batch/staging", Destination: app.Destination{Context: "staging", Namespace: "batch"},
			Sync: status.SyncError, Health: status.HealthUnknown, SelfHeal: status.SelfHealOff, Error: "render failed: kustomization.yaml not found", ComparedAt: testNow},
		{Name: "web-staging", Path: "deploy/web/staging", Destination: app.Destination{Context: "staging", Namespace: "web"},
			Sync: status.SyncOutOfSync, Health: status.HealthHealthy, SelfHeal: status.SelfHealOn, OutOfSyncSince: at(13, 45), Revision: "c3d4e5f6", ComparedAt: testNow},
	}
}

func deployDetail() status.ObjectDetail {
	ann := []status.Owner{{Manager: "kubectl-edit", Operation: "Update", Time: at(15, 0), Class: status.OwnerPerson}}
	k := []status.Owner{kdriftOwn}
	return status.ObjectDetail{App: "render-prod", Resource: deployStatus(),
		Desired: []status.Line{
			{Text: "apiVersion: apps/v1", Path: "/apiVersion"},
			{Text: "kind: Deployment", Path: "/kind"},
			{Text: "metadata:", Path: "/metadata"},
			{Text: "  name: render", Path: "/metadata/name"},
			{Text: "spec:", Path: "/spec", Parent: true},
			{Text: "  replicas: 6", Path: "/spec/replicas"},
			{Text: "  template:", Path: "/spec/template"},
		},
		Live: []status.Line{
			{Text: "apiVersion: apps/v1", Path: "/apiVersion"},
			{Text: "kind: Deployment", Path: "/kind"},
			{Text: "metadata:", Path: "/metadata", Parent: true},
			{Text: "  annotations:", Path: "/metadata/annotations", Owners: ann, Parent: true},
			{Text: "    note: hotfix", Path: "/metadata/annotations/note", Owners: ann},
			{Text: "  name: render", Path: "/metadata/name", Owners: k},
			{Text: "spec:", Path: "/spec", Parent: true},
			{Text: "  progressDeadlineSeconds: 600", Path: "/spec/progressDeadlineSeconds"},
			{Text: "  replicas: 12", Path: "/spec/replicas", Owners: []status.Owner{kubectl}},
			{Text: "  template:", Path: "/spec/template", Owners: k, Parent: true},
		},
	}
}

func newFake() *fakeBackend {
	return &fakeBackend{
		apps:    testApps(),
		details: map[status.ObjectRef]status.ObjectDetail{deployRef: deployDetail()},
		plan: backend.SyncPlan{Steps: []backend.PlanStep{
			{Ref: deployRef, Action: "apply", Fields: []string{"/spec/replicas"}},
			{Ref: cmRef, Action: "prune"},
		}},
		history: []status.Commit{
			{Hash: "aaaaaaa111", Author: "Mia Chen", Email: "mia@example.com", Time: *at(10, 0), Subject: "render: bump image to 2.4"},
			{Hash: "bbbbbbb222", Author: "Lao Li", Email: "lao.li@example.com", Time: *at(15, 0), Subject: "freeze(render-prod): INC-1234", Action: "freeze", Apps: []string{"render-prod"}, Reason: "INC-1234 render workers 6->12"},
		},
		owners:  ownerMapFixture(),
		preview: "deploy/render/prod/deployment.yaml\n-  image: render:2.4\n+  image: render:2.3",
	}
}

// testConfig is a deterministic Config: default keys, UTC, fixed clock,
// no colours.
func testConfig() Config {
	return Config{Keys: keymap.DefaultKeyMap(), NoColor: true, Now: func() time.Time { return testNow }, Location: time.UTC}
}

// harness drives a Model by hand: it runs every command synchronously and
// feeds the messages back, the way the Bubble Tea loop would.
type harness struct {
	t    *testing.T
	m    *Model
	be   *fakeBackend
	quit bool
}

func newHarness(t *testing.T, be *fakeBackend, cfg Config) *harness {
	t.Helper()
	h := &harness{t: t, m: NewModel(context.Background(), be, cfg), be: be}
	h.m.Update(tea.WindowSizeMsg{Width: 140, Height: 30})
	h.drain(h.m.Init())
	if h.m.State() != "ready" {
		t.Fatalf("state after Init = %s, want ready", h.m.State())
	}
	return h
}

// drain runs cmd and everything it leads to. Spinner ticks are dropped
// (they only animate), so nothing sleeps.
func (h *harness) drain(cmd tea.Cmd) {
	queue := []tea.Cmd{cmd}
	for steps := 0; len(queue) > 0; steps++ {
		if steps > 10000 {
			h.t.Fatal("commands never settle")
		}
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		switch msg := c().(type) {
		case nil, spinner.TickMsg:
		case tea.BatchMsg:
			queue = append(queue, msg...)
		case tea.QuitMsg:
			h.quit = true
		default:
			_, next := h.m.Update(msg)
			queue = append(queue, next)
		}
	}
}

func (h *harness) send(msgs ...tea.Msg) *harness {
	for _, msg := range msgs {
		_, cmd := h.m.Update(msg)
		h.drain(cmd)
	}
	return h
}

// keys presses each key in turn: names like "enter", "esc", "ctrl+r",
// "space", "tab", or single characters.
func (h *harness) keys(ks ...string) *harness {
	for _, k := range ks {
		h.send(press(k))
	}
	return h
}

// typeText types s character by character.
func (h *harness) typeText(s string) *harness {
	for _, r := range s {
		h.send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	return h
}

func press(k string) tea.KeyPressMsg {
	named := map[string]rune{"enter": tea.KeyEnter, "esc": tea.KeyEscape, "tab": tea.KeyTab, "space": tea.KeySpace,
		"up": tea.KeyUp, "down": tea.KeyDown, "pgdown": tea.KeyPgDown, "pgup": tea.KeyPgUp, "backspace": tea.KeyBackspace}
	if c, ok := named[k]; ok {
		if k == "space" {
			return tea.KeyPressMsg{Code: c, Text: " "}
		}
		return tea.KeyPressMsg{Code: c}
	}
	if rest, ok := strings.CutPrefix(k, "ctrl+"); ok {
		return tea.KeyPressMsg{Code: []rune(rest)[0], Mod: tea.ModCtrl}
	}
	r := []rune(k)[0]
	return tea.KeyPressMsg{Code: r, Text: k}
}

// screen is the rendered screen as plain text.
func (h *harness) screen() string { return ansi.Strip(h.m.render()) }

func (h *harness) wantScreen(subs ...string) {
	h.t.Helper()
	s := h.screen()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			h.t.Errorf("screen lacks %q:\n%s", sub, s)
		}
	}
}

func (h *harness) wantCalls(want ...string) {
	h.t.Helper()
	got := h.be.Calls()
	var mut []string
	for _, c := range got {
		if !strings.HasPrefix(c, "history ") {
			mut = append(mut, c)
		}
	}
	if strings.Join(mut, "\n") != strings.Join(want, "\n") {
		h.t.Errorf("backend calls:\n%s\nwant:\n%s", strings.Join(mut, "\n"), strings.Join(want, "\n"))
	}
}

func windowSize(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }
