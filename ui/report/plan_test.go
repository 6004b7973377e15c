package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
)

// TestPlanFromDryRun: the typed plan names each object's action from the
// comparison (create, apply, hand over, prune, replace) and the text of
// `sync --dry-run` shows it, with the apiserver's refusals.
func TestPlanFromDryRun(t *testing.T) {
	t.Parallel()
	ref := func(kind, name string) status.ObjectRef {
		return status.ObjectRef{Kind: kind, Namespace: "prod", Name: name}
	}
	denied := errors.New("admission webhook denied the request")
	res := engine.SyncResult{
		App: "render-prod",
		Plan: []status.ResourceStatus{
			{Ref: ref("Deployment", "render"), Status: status.ResourceOutOfSync, Fields: []status.FieldChange{
				{Path: "/spec/replicas", Class: status.OwnerPerson},
				{Path: "/metadata/labels/x", Ignored: true},
			}},
			{Ref: ref("Service", "render"), Status: status.ResourceMissing},
			{Ref: ref("ConfigMap", "settings"), Status: status.ResourceIgnored},
			{Ref: ref("Job", "migrate"), Status: status.ResourceRequiresReplace},
			{Ref: ref("ConfigMap", "old"), Status: status.ResourceExtraneous},
		},
		Objects: []engine.ObjectResult{
			{Ref: ref("Service", "render"), Action: engine.ActionApply},
			{Ref: ref("Deployment", "render"), Action: engine.ActionApply, Fields: []string{"/spec/replicas"}, Error: denied.Error(), Cause: denied},
			{Ref: ref("ConfigMap", "settings"), Action: engine.ActionApply},
			{Ref: ref("ConfigMap", "old"), Action: engine.ActionPrune},
		},
	}
	p := engine.PlanOf(res)
	var got []string
	for _, st := range p.Steps {
		got = append(got, string(st.Action)+" "+st.Ref.String())
	}
	want := []string{"create Service/prod/render", "apply Deployment/prod/render", "hand over ConfigMap/prod/settings", "prune ConfigMap/prod/old", "replace Job/prod/migrate"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("plan = %q, want %q", got, want)
	}
	if !errors.Is(p.Steps[1].Err, denied) || strings.Join(p.Steps[1].Fields, ",") != "/spec/replicas" {
		t.Errorf("apply step = %+v", p.Steps[1])
	}
	var b bytes.Buffer
	if err := Plan(&b, p, nil); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"sync render-prod (dry run: nothing changed)\n",
		"  create Service/prod/render\n",
		"  apply  Deployment/prod/render [/spec/replicas]  FAILED: admission webhook denied the request\n",
		"  hand over ConfigMap/prod/settings\n",
		"  prune  ConfigMap/prod/old\n",
		"  replace Job/prod/migrate\n",
	} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("plan text lacks %q:\n%s", line, b.String())
		}
	}
	// The JSON of a result carries each error's message, not its type.
	js, err := json.Marshal(res.Objects[1])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"error":"admission webhook denied the request"`) || strings.Contains(string(js), "Cause") {
		t.Errorf("ObjectResult JSON = %s", js)
	}
}

func TestEmptyPlan(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := Plan(&b, engine.Plan{App: "a"}, nil); err != nil || !strings.Contains(b.String(), "nothing to do: in sync") {
		t.Fatalf("empty plan: %v\n%s", err, b.String())
	}
	b.Reset()
	if err := Plan(&b, engine.Plan{App: "a"}, errors.New("render failed")); err != nil || strings.Contains(b.String(), "in sync") {
		t.Fatalf("a failed dry run read as in sync:\n%s", b.String())
	}
}
