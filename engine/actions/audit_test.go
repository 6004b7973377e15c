package actions

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/app"
)

func TestAuditReadsActionsBackWithFreezeStates(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	dir := cloneOf(t, remote)
	clock := newClock()
	r := openRepo(t, dir, clock)
	ctx := context.Background()
	step := func() { clock.t = clock.t.Add(10 * time.Minute) }

	freezeOne(t, r, "render-prod", "INC-1 first freeze")
	step()
	if _, err := r.Unfreeze(ctx, UnfreezeRequest{Selection: Selection{Apps: []string{"render-prod"}}, Reason: "INC-1 done"}); err != nil {
		t.Fatal(err)
	}
	step()
	if _, err := r.Freeze(ctx, FreezeRequest{Selection: Selection{Apps: []string{"api-prod", "render-prod"}}, Reason: "INC-2 both", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	step()
	if _, err := r.Extend(ctx, ExtendRequest{Apps: []string{"render-prod"}, By: 3 * time.Hour, Reason: "INC-2 render needs longer"}); err != nil {
		t.Fatal(err)
	}
	step()
	if _, err := r.Ignore(ctx, IgnoreRequest{App: "render-prod", Rule: app.IgnoreRule{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}, Reason: "HPA owns replicas"}); err != nil {
		t.Fatal(err)
	}
	// Two hours later: api-prod's one-hour freeze has expired, render-prod's
	// extended one holds.
	clock.t = clock.t.Add(2 * time.Hour)
	entries, err := r.Audit(ctx, AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		s := e.Action + " " + strings.Join(e.Apps, ",") + " " + e.Reason
		for _, a := range e.Apps {
			if st, ok := e.FreezeState[a]; ok {
				s += " " + a + "=" + st
			}
		}
		got = append(got, s)
	}
	want := []string{
		"ignore render-prod HPA owns replicas",
		"extend render-prod INC-2 render needs longer render-prod=active",
		"freeze api-prod,render-prod INC-2 both api-prod=expired render-prod=active",
		"unfreeze render-prod INC-1 done",
		"freeze render-prod INC-1 first freeze render-prod=lifted",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if entries[0].Author != testAuthor || len(entries[0].Commit) != 40 {
		t.Fatalf("entry %+v", entries[0])
	}
	// Filtering by app, and the JSON field names.
	only, err := r.Audit(ctx, AuditOptions{App: "api-prod"})
	if err != nil || len(only) != 1 {
		t.Fatalf("api-prod audit: %v %v", only, err)
	}
	js, err := json.Marshal(only[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"time":`, `"author":"Lao Li \u003clao.li@example.com\u003e"`, `"action":"freeze"`, `"apps":["api-prod","render-prod"]`, `"reason":"INC-2 both"`, `"commit":`, `"until":"2026-12-02T16:20:00Z"`, `"freezeState":{"api-prod":"expired"}`} {
		if !strings.Contains(string(js), k) {
			t.Fatalf("JSON %s lacks %s", js, k)
		}
	}

	// Refusals of ignore: bad pointer, duplicate.
	if _, err := r.Ignore(ctx, IgnoreRequest{App: "render-prod", Rule: app.IgnoreRule{Kind: "Deployment", JSONPointers: []string{"spec/replicas"}}, Reason: "x"}); err == nil || !strings.Contains(err.Error(), "must start with") {
		t.Fatalf("bad pointer: %v", err)
	}
	if _, err := r.Ignore(ctx, IgnoreRequest{App: "render-prod", Rule: app.IgnoreRule{Kind: "Deployment", JSONPointers: []string{"/a~2b"}}, Reason: "x"}); err == nil || !strings.Contains(err.Error(), "RFC 6901") {
		t.Fatalf("bad escape: %v", err)
	}
	if _, err := r.Ignore(ctx, IgnoreRequest{App: "render-prod", Rule: app.IgnoreRule{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}, Reason: "again"}); err == nil || !strings.Contains(err.Error(), "already ignores") {
		t.Fatalf("duplicate: %v", err)
	}
	// The ignore commit's diff only adds lines.
	if ns := gitRun(t, remote, "log", "-1", "--skip=0", "--format=", "--numstat", "--grep=HPA owns"); ns != "4\t0\t.kdrift/apps.yaml" {
		t.Fatalf("ignore numstat %q", ns)
	}
}

func TestHistoryListsCommitsOfTheApp(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	dir := cloneOf(t, remote)
	r := openRepo(t, dir, newClock())
	writeFile(t, dir, "deploy/prod/deployment.yaml", "kind: Deployment\nmetadata:\n  name: render\nspec:\n  replicas: 8\n")
	commitAll(t, dir, "render: 8 replicas")
	writeFile(t, dir, "deploy/api/deployment.yaml", "kind: Deployment\nmetadata:\n  name: api2\n")
	commitAll(t, dir, "api only")
	freezeOne(t, r, "render-prod", "INC-10 hold")
	freezeOne(t, r, "api-prod", "INC-11 api hold")

	hist, err := History(context.Background(), r, "render-prod", 0)
	if err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for _, c := range hist {
		subjects = append(subjects, c.Subject)
	}
	want := "freeze(render-prod): INC-10 hold|render: 8 replicas|initial layout"
	if strings.Join(subjects, "|") != want {
		t.Fatalf("history %q, want %q", strings.Join(subjects, "|"), want)
	}
	if hist[0].Action != "freeze" || hist[0].Reason != "INC-10 hold" || strings.Join(hist[0].Apps, ",") != "render-prod" || hist[0].Email != "lao.li@example.com" {
		t.Fatalf("first %+v", hist[0])
	}
	if hist[1].Action != "" {
		t.Fatalf("plain commit got an action: %+v", hist[1])
	}
	limited, err := History(context.Background(), r, "render-prod", 1)
	if err != nil || len(limited) != 1 {
		t.Fatalf("limit: %v %v", limited, err)
	}
	// With its render's inputs (a base it reads), the base's commits too.
	hist, err = History(context.Background(), r, "render-prod", 0, "deploy/prod", "deploy/api")
	if err != nil {
		t.Fatal(err)
	}
	subjects = nil
	for _, c := range hist {
		subjects = append(subjects, c.Subject)
	}
	want = "freeze(render-prod): INC-10 hold|api only|render: 8 replicas|initial layout"
	if strings.Join(subjects, "|") != want {
		t.Fatalf("history with inputs %q, want %q", strings.Join(subjects, "|"), want)
	}
}
