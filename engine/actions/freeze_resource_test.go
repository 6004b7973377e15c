package actions

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/app"
)

func TestFreezeResourceFieldsRoundTrip(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	dir := cloneOf(t, remote)
	clock := newClock()
	r := openRepo(t, dir, clock)
	ctx := context.Background()
	original := readFile(t, dir, ".kdrift/apps.yaml")
	web := app.ResourceRef{Group: "apps", Kind: "Deployment", Namespace: "prod", Name: "render"}

	res, err := r.FreezeResource(ctx, ResourceFreezeRequest{App: "render-prod", Resources: []app.ResourceRef{web}, Fields: []string{"/spec/replicas"}, Reason: "INC-1234 hand-scaled to 12", For: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Pushed {
		t.Fatalf("result %+v", res)
	}
	log := gitRun(t, remote, "log", "-1", "--format=%s|%(trailers:key=Kdrift-Action,valueonly,separator=%x2C)|%(trailers:key=Kdrift-Resource,valueonly,separator=%x2C)|%(trailers:key=Kdrift-Field,valueonly,separator=%x2C)|%(trailers:key=Kdrift-Until,valueonly,separator=%x2C)")
	if want := "freeze(render-prod): INC-1234 hand-scaled to 12|freeze|Deployment.apps/prod/render|/spec/replicas|2026-12-02T17:00:00Z"; log != want {
		t.Fatalf("git log:\n%s\nwant\n%s", log, want)
	}
	text := readFile(t, dir, ".kdrift/apps.yaml")
	apps, errs := app.Parse(".kdrift/apps.yaml", []byte(text))
	if len(errs) > 0 {
		t.Fatalf("the frozen file does not parse: %v\n%s", errs, text)
	}
	var got app.App
	for _, a := range apps {
		if a.Metadata.Name == "render-prod" {
			got = a
		}
	}
	if len(got.Spec.Freezes) != 1 || got.Spec.Freezes[0].Resource != web || got.Spec.Freezes[0].By != testAuthor || got.Spec.Freezes[0].Until == nil {
		t.Fatalf("spec.freezes: %+v\n%s", got.Spec.Freezes, text)
	}
	if errs := validateFreezes(got, dir); len(errs) > 0 {
		t.Fatalf("the written freeze is invalid: %v", errs)
	}

	// The same field again is refused, naming the freeze; another field of
	// the same object is a second entry.
	_, err = r.FreezeResource(ctx, ResourceFreezeRequest{App: "render-prod", Resources: []app.ResourceRef{web}, Fields: []string{"/spec/replicas"}, Reason: "again"})
	if err == nil || !strings.Contains(err.Error(), "already frozen") || !strings.Contains(err.Error(), "INC-1234") {
		t.Fatalf("second freeze of the field: %v", err)
	}
	if _, err := r.FreezeResource(ctx, ResourceFreezeRequest{App: "render-prod", Resources: []app.ResourceRef{web}, Fields: []string{"/spec/template/spec/containers/0/image"}, Reason: "INC-1235 pinned image"}); err != nil {
		t.Fatal(err)
	}
	if apps, errs := app.Parse(".kdrift/apps.yaml", []byte(readFile(t, dir, ".kdrift/apps.yaml"))); len(errs) > 0 {
		t.Fatal(errs)
	} else {
		for _, a := range apps {
			if a.Metadata.Name == "render-prod" {
				if errs := validateFreezes(a, dir); len(errs) > 0 {
					t.Fatalf("two field freezes of one object are invalid: %v", errs)
				}
			}
		}
	}
	// Lifting a field that is not frozen commits nothing.
	head := gitRun(t, remote, "rev-parse", "main")
	_, err = r.UnfreezeResource(ctx, ResourceUnfreezeRequest{App: "render-prod", Resource: web, Fields: []string{"/spec/paused"}, Reason: "x"})
	if err == nil || !strings.Contains(err.Error(), "/spec/paused is not frozen") {
		t.Fatalf("unfreeze of a field not frozen: %v", err)
	}
	if gitRun(t, remote, "rev-parse", "main") != head {
		t.Fatal("a refused unfreeze committed")
	}
	// A seen freeze that is not the one at the head is refused, typed.
	var changed *FreezeChangedError
	_, err = r.UnfreezeResource(ctx, ResourceUnfreezeRequest{App: "render-prod", Resource: web, Reason: "x", Seen: &app.Freeze{By: "someone", Reason: "other", At: clock.t}})
	if !errors.As(err, &changed) {
		t.Fatalf("unfreeze of another freeze: %v", err)
	}
	// Lifting one field keeps the other entry's lines; lifting the rest
	// gives the original bytes back.
	if _, err := r.UnfreezeResource(ctx, ResourceUnfreezeRequest{App: "render-prod", Resource: web, Fields: []string{"/spec/replicas"}, Reason: "INC-1234 over"}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, ".kdrift/apps.yaml"); strings.Contains(got, "/spec/replicas") || !strings.Contains(got, "INC-1235") {
		t.Fatalf("after lifting one field:\n%s", got)
	}
	if _, err := r.UnfreezeResource(ctx, ResourceUnfreezeRequest{App: "render-prod", Resource: web, Reason: "INC-1235 over"}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, ".kdrift/apps.yaml"); got != original {
		t.Fatalf("round trip changed the file:\n%s\nwant\n%s", got, original)
	}
	_, err = r.UnfreezeResource(ctx, ResourceUnfreezeRequest{App: "render-prod", Resource: web, Reason: "x"})
	if err == nil || !strings.Contains(err.Error(), "is not frozen") {
		t.Fatalf("unfreeze of nothing: %v", err)
	}
}

func TestFreezeResourceRefusesBadInput(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	dir := cloneOf(t, remote)
	r := openRepo(t, dir, newClock())
	ctx := context.Background()
	web := app.ResourceRef{Group: "apps", Kind: "Deployment", Name: "render"}
	for _, tc := range []struct {
		req  ResourceFreezeRequest
		want string
	}{
		{ResourceFreezeRequest{App: "render-prod", Resources: []app.ResourceRef{web}}, "reason is required"},
		{ResourceFreezeRequest{App: "render-prod", Reason: "r"}, "--resource is required"},
		{ResourceFreezeRequest{App: "render-prod", Resources: []app.ResourceRef{web}, Fields: []string{"spec/replicas"}, Reason: "r"}, `must start with "/"`},
		{ResourceFreezeRequest{App: "render-prod", Resources: []app.ResourceRef{web}, Fields: []string{"/metadata/name"}, Reason: "r"}, "cannot be frozen"},
		{ResourceFreezeRequest{App: "render-prod", Resources: []app.ResourceRef{web}, Fields: []string{"/a~2"}, Reason: "r"}, "~0"},
		{ResourceFreezeRequest{App: "render-prod", Resources: []app.ResourceRef{web}, Reason: "r", For: time.Hour, Until: &time.Time{}}, "not both"},
		{ResourceFreezeRequest{App: "nope", Resources: []app.ResourceRef{web}, Reason: "r"}, "nope"},
	} {
		if _, err := r.FreezeResource(ctx, tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.req, err, tc.want)
		}
	}
	for _, s := range []string{"Deployment", "Deployment/", "Deployment/a/b", "/web", "Deployment./web"} {
		if _, err := app.ParseResourceQuery(s, ""); err == nil {
			t.Errorf("ParseResourceQuery(%q) accepted it", s)
		}
	}
	for in, want := range map[string]app.ResourceQuery{
		"Deployment.apps/web":           {Kind: "Deployment", Group: "apps", GroupGiven: true, Namespace: "prod", Name: "web"},
		"deploy/web":                    {Kind: "deploy", Namespace: "prod", Name: "web"},
		"deployments.v1.apps/web":       {Kind: "deployments", Group: "apps", GroupGiven: true, Namespace: "prod", Name: "web"},
		"configmaps.v1/web":             {Kind: "configmaps", GroupGiven: true, Namespace: "prod", Name: "web"},
		"Ingress.networking.k8s.io/web": {Kind: "Ingress", Group: "networking.k8s.io", GroupGiven: true, Namespace: "prod", Name: "web"},
	} {
		if q, err := app.ParseResourceQuery(in, "prod"); err != nil || q != want {
			t.Errorf("ParseResourceQuery(%q) = %+v %v, want %+v", in, q, err, want)
		}
	}
}

// validateFreezes runs app.Validate's checks of spec.freezes only.
func validateFreezes(a app.App, dir string) []error {
	var out []error
	for _, err := range app.Validate(a, os.DirFS(dir)) {
		if strings.Contains(err.Error(), "spec.freezes") {
			out = append(out, err)
		}
	}
	return out
}

// TestFreezeResourceReplacesAnEndedFreeze: freezing a field again after its
// freeze ended drops the ended entry in the same commit, so the App never
// holds one field frozen twice.
func TestFreezeResourceReplacesAnEndedFreeze(t *testing.T) {
	isolate(t)
	remote := newRemote(t)
	dir := cloneOf(t, remote)
	clock := newClock()
	r := openRepo(t, dir, clock)
	ctx := context.Background()
	web := app.ResourceRef{Group: "apps", Kind: "Deployment", Name: "render"}
	req := ResourceFreezeRequest{App: "render-prod", Resources: []app.ResourceRef{web}, Fields: []string{"/spec/replicas"}, Reason: "INC-1 first", For: time.Hour}
	if _, err := r.FreezeResource(ctx, req); err != nil {
		t.Fatal(err)
	}
	clock.t = clock.t.Add(2 * time.Hour)
	req.Reason = "INC-2 again"
	if _, err := r.FreezeResource(ctx, req); err != nil {
		t.Fatal(err)
	}
	text := readFile(t, dir, ".kdrift/apps.yaml")
	if strings.Contains(text, "INC-1 first") || strings.Count(text, "/spec/replicas") != 1 {
		t.Fatalf("the ended freeze stayed:\n%s", text)
	}
	apps, errs := app.Parse(".kdrift/apps.yaml", []byte(text))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, a := range apps {
		if errs := validateFreezes(a, dir); len(errs) > 0 {
			t.Fatalf("invalid after freezing again: %v", errs)
		}
	}
}
