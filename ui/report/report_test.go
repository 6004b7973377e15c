package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
)

func TestDiffAndStatus(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	a := status.AppStatus{Name: "render-prod", Sync: status.SyncOutOfSync, Health: status.HealthHealthy, SelfHeal: status.SelfHealOn, OutOfSyncSince: &since,
		Resources: []status.ResourceStatus{
			{Ref: status.ObjectRef{Kind: "ConfigMap", Namespace: "prod", Name: "ok"}, Status: status.ResourceSynced},
			{Ref: status.ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "prod", Name: "render"}, Status: status.ResourceOutOfSync, Fields: []status.FieldChange{
				{Path: "/spec/replicas", Desired: 6, Live: 12, Class: status.OwnerPerson, Owners: []status.Owner{{Manager: "kubectl", Operation: "Update", Subresource: "scale", Class: status.OwnerPerson}}},
				{Path: "/metadata/labels/x", Ignored: true},
			}},
		}}
	var b bytes.Buffer
	if err := Diff(&b, a); err != nil {
		t.Fatal(err)
	}
	want := "Deployment/prod/render  OutOfSync\n  /spec/replicas\n    desired: 6\n    live:    12\n    owner:   kubectl (Update/scale, person)\n"
	if b.String() != want {
		t.Fatalf("Diff =\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	// Which tier compared the object follows its status.
	a.Resources[1].Decided = status.DecidedDryRun
	if err := Diff(&b, a); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "Deployment/prod/render  OutOfSync  (dry-run)\n") {
		t.Fatalf("Diff with the tier =\n%s", b.String())
	}
	a.Resources[1].Decided = ""
	b.Reset()
	if err := Status(&b, []status.AppStatus{a}, since.Add(90*time.Second)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "render-prod  OutOfSync  Healthy  on         1        1m ") {
		t.Fatalf("Status =\n%s", b.String())
	}
	// A frozen app says since when and until when, so that "40m" cannot be
	// read as how long the freeze lasts.
	until := since.Add(4 * time.Hour)
	frozen := a
	frozen.SelfHeal = status.SelfHealFrozen
	frozen.Freeze = &app.Freeze{Reason: "INC-1", By: "Lao Li <lao.li@example.com>", At: since, Until: &until}
	b.Reset()
	if err := Status(&b, []status.AppStatus{frozen}, since.Add(40*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "frozen by Lao Li <lao.li@example.com> 40m ago, until 2026-12-02 19:00 UTC") {
		t.Fatalf("Status of a frozen app =\n%s", b.String())
	}
	b.Reset()
	if err := StatusJSON(&b, []status.AppStatus{a}); err != nil {
		t.Fatal(err)
	}
	var doc StatusDoc
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Apps) != 1 || doc.Apps[0].DriftedObjects != 1 || len(doc.Apps[0].Drifted) != 1 || doc.Apps[0].Drifted[0].Ref.Name != "render" {
		t.Fatalf("StatusJSON = %s", b.String())
	}
}

// TestStatusNamesTheOwner: an owned app's self-heal names its owner, and a
// Kustomization suspended in Git (not by kdrift) says so, with its reason.
func TestStatusNamesTheOwner(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	apps := []status.AppStatus{
		{Name: "guestbook", Sync: status.SyncSynced, Health: status.HealthHealthy, SelfHeal: status.SelfHealOn, Owner: "Argo CD Application argocd/guestbook", OwnerEngine: "Argo CD"},
		{Name: "infra", Sync: status.SyncOutOfSync, Health: status.HealthHealthy, SelfHeal: status.SelfHealOff, Owner: "Flux Kustomization flux-system/infra", OwnerEngine: "Flux", OwnerPaused: "suspended in Git: CHG-981"},
	}
	var b bytes.Buffer
	if err := Status(&b, apps, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"on (Argo CD Application argocd/guestbook)", "suspended in Git: CHG-981 (Flux Kustomization flux-system/infra)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, b.String())
		}
	}
}
