package actions

import (
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/app"
)

// TestCheckEditableLive: an app read from a live declaration has no
// document to commit to; the refusal names the tool that changes it.
func TestCheckEditableLive(t *testing.T) {
	for _, c := range []struct {
		engine     app.Engine
		kind, want string
	}{
		{app.EngineFlux, "Kustomization", "commit the Kustomization to this repository, or change it with flux"},
		{app.EngineArgoCD, "Application", "commit the Application to this repository, or change it with argocd"},
	} {
		a := app.App{Origin: &app.Origin{Engine: c.engine, Kind: c.kind, Namespace: "flux-system", Name: "web", Live: true, LiveContext: "prod"}}
		a.Metadata.Name = "web"
		err := checkEditable(a)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "live in the cluster of context prod (not in Git)") {
			t.Fatalf("%s: %v", c.kind, err)
		}
	}
}
