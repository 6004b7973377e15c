package ui

import (
	"context"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"kdrift.dev/kdrift/engine/engine"
)

// noAppsFake is a fake backend that found no app and says why.
type noAppsFake struct {
	*fakeBackend
	n *engine.NoApps
}

func (f *noAppsFake) NoApps() *engine.NoApps { return f.n }

// TestEmptyAppsViewSaysWhy: with no app, the apps view says why (no App
// file, no declaration, the live Applications of other repositories,
// named) and what to do; a hostile URL reaches the screen escaped; a
// filter keeps its own message.
func TestEmptyAppsViewSaysWhy(t *testing.T) {
	fb := newFake()
	fb.apps = nil
	be := &noAppsFake{fakeBackend: fb, n: &engine.NoApps{Revision: "3f2a1c9",
		Applications: &engine.LiveElsewhere{Context: "prod", Total: 22, Others: 22, Named: []engine.LiveRef{
			{Name: "argocd/billing", URL: "https://git.example.com/billing.git", Path: "deploy"},
			{Name: "argocd/evil", URL: "https://x/\x1b[31mred"},
		}}}}
	h := &harness{t: t, m: NewModel(context.Background(), be, testConfig()), be: fb}
	h.m.Update(tea.WindowSizeMsg{Width: 200, Height: 40})
	h.drain(h.m.Init())
	h.wantScreen(
		"no App file: 3f2a1c9 has no .kdrift/ folder at the repository root",
		"no Argo CD Application or Flux Kustomization declared in Git",
		"context prod: 22 live Argo CD Applications of other repositories: argocd/billing (https://git.example.com/billing.git deploy), argocd/evil (https://x/\\e[31mred), and 20 more",
		"write an App file for each folder",
		"or run kdrift in a clone of the repository the live objects above read (--repo)",
	)
	if raw := h.m.render(); strings.Contains(raw, "\x1b[31mred") {
		t.Fatal("the hostile URL reached the terminal unescaped")
	}
	h.m.Update(tea.WindowSizeMsg{Width: 200, Height: 12})
	h.wantScreen("more lines (kdrift status prints them all)")
	h.typeText("/billing")
	h.wantScreen("no apps match the filter")
}
