package ui

import (
	"strings"
	"testing"
)

func TestViewTransitions(t *testing.T) {
	tests := []struct {
		name   string
		keys   []string
		crumb  string
		screen []string
		quit   bool
	}{
		{"enter opens the app", []string{"j", "enter"}, "apps › app render-prod", []string{"Deployment (1)", "ConfigMap (1)", "- Extraneous", "2 fields"}, false},
		{"enter on a resource opens its diff", []string{"j", "enter", "j", "enter"}, "apps › app render-prod › diff Deployment/prod/render", []string{"GIT (desired)", "LIVE", "kubectl Update/scale · person"}, false},
		{"d opens the diff", []string{"j", "enter", "j", "d"}, "apps › app render-prod › diff Deployment/prod/render", nil, false},
		{"o opens ownership", []string{"j", "enter", "j", "o"}, "apps › app render-prod › owners Deployment/prod/render", []string{"kubectl Update/scale", "⚑"}, false},
		{"o from the diff", []string{"j", "enter", "j", "enter", "o"}, "apps › app render-prod › diff Deployment/prod/render › owners Deployment/prod/render", nil, false},
		{"d from ownership", []string{"j", "enter", "j", "o", "d"}, "apps › app render-prod › owners Deployment/prod/render › diff Deployment/prod/render", nil, false},
		{"h from the app", []string{"j", "enter", "h"}, "apps › app render-prod › history render-prod", []string{"◆ freeze", "render: bump image to 2.4"}, false},
		{"h from the apps", []string{"j", "h"}, "apps › history render-prod", nil, false},
		{"esc goes back", []string{"j", "enter", "j", "enter", "esc"}, "apps › app render-prod", nil, false},
		{"esc at the root stays", []string{"esc"}, "apps", nil, false},
		{":apps goes home", []string{"j", "enter", "j", "enter", ":", "a", "p", "p", "s", "enter"}, "apps", nil, false},
		{":ctx filters by context", []string{":", "c", "t", "x", " ", "s", "t", "a", "g", "i", "n", "g", "enter"}, "apps · ctx staging", []string{"web-staging", "batch-staging"}, false},
		{":q quits", []string{":", "q", "enter"}, "apps", nil, true},
		{"q quits", []string{"j", "enter", "q"}, "apps › app render-prod", nil, true},
		{"ctrl+c quits", []string{"ctrl+c"}, "apps", nil, true},
		{"? shows the apps view's keys", []string{"?"}, "apps", []string{"keys (any key closes)", "sort by next column", "unfreeze"}, false},
		{"unknown command", []string{":", "x", "enter"}, "apps", []string{`unknown command "x"`}, false},
		{":ctx with a context no App names", []string{":", "c", "t", "x", " ", "p", "r", "d", "enter"}, "apps", []string{`no App deploys to context "prd"; contexts named by Apps: prod, staging`, "render-prod", "web-staging"}, false},
		{"esc closes the command line", []string{":", "q", "esc"}, "apps", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, newFake(), testConfig())
			h.keys(tt.keys...)
			if got := h.m.Breadcrumb(); got != tt.crumb {
				t.Errorf("views = %q, want %q", got, tt.crumb)
			}
			if h.quit != tt.quit {
				t.Errorf("quit = %v, want %v", h.quit, tt.quit)
			}
			h.wantScreen(tt.screen...)
		})
	}
}

func TestHelpClosesOnAnyKey(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.keys("?", "j")
	if h.m.showHelp {
		t.Fatal("help stayed open")
	}
	if av := h.m.stack[0].(*appsView); av.cursor != 0 {
		t.Errorf("the key that closed help also moved the cursor")
	}
}

func TestCtxCommandThenApps(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.keys(":").typeText("ctx prod").keys("enter")
	if got := strings.Join(appNames(h.m), " "); got != "render-prod api-prod" {
		t.Fatalf(":ctx prod shows %s", got)
	}
	h.keys(":").typeText("apps").keys("enter")
	if len(appNames(h.m)) != 4 {
		t.Fatalf(":apps shows %v", appNames(h.m))
	}
}

func TestInitialContextOption(t *testing.T) {
	cfg := testConfig()
	cfg.Context = "staging"
	h := newHarness(t, newFake(), cfg)
	if got := strings.Join(appNames(h.m), " "); got != "batch-staging web-staging" {
		t.Fatalf("initial context shows %s", got)
	}
}
