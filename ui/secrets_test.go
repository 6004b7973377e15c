package ui

import (
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
)

// TestSecretsInViews: the apps view counts Encrypted objects; the app view
// marks them, shows why for the selected one, and lists a SealedSecret's
// Secret under its parent rather than among the Secrets.
func TestSecretsInViews(t *testing.T) {
	be := secretsFleet()
	h := newHarness(t, be, testConfig())
	h.wantScreen("vault-prod", "0 ⊘1")
	h.keys("enter")
	s := h.screen()
	lines := strings.Split(s, "\n")
	idx := func(sub string) int {
		for i, l := range lines {
			if strings.Contains(l, sub) {
				return i
			}
		}
		t.Fatalf("no line with %q:\n%s", sub, s)
		return -1
	}
	if p, c := idx("prod/db  "), idx("↳ Secret prod/db"); c != p+1 || !strings.Contains(lines[c], "Generated") {
		t.Fatalf("the generated Secret is not under its SealedSecret:\n%s", s)
	}
	if !strings.Contains(s, "Secret (1)") || !strings.Contains(lines[idx("prod/api")], "⊘ Encrypted") {
		t.Fatalf("the Secrets group:\n%s", s)
	}
	h.keys("j", "j", "j", "j")
	if !strings.Contains(h.screen(), "no matching identity in SOPS_AGE_KEY") {
		t.Fatalf("the status line does not say why it is Encrypted:\n%s", h.screen())
	}
}

// secretsFleet is one app with an Encrypted Secret, a SealedSecret and an
// ExternalSecret, and the Secrets their controllers made.
func secretsFleet() *fakeBackend {
	sealed := status.ObjectRef{Group: "bitnami.com", Version: "v1alpha1", Kind: "SealedSecret", Namespace: "prod", Name: "db"}
	external := status.ObjectRef{Group: "external-secrets.io", Version: "v1beta1", Kind: "ExternalSecret", Namespace: "prod", Name: "smtp"}
	be := newFake()
	be.apps = []status.AppStatus{{Name: "vault-prod", Path: "deploy/vault", Destination: app.Destination{Namespace: "prod"},
		Sync: status.SyncSynced, Health: status.HealthHealthy, SelfHeal: status.SelfHealOn, Revision: "abcdef12", ComparedAt: testNow,
		Resources: []status.ResourceStatus{
			{Ref: status.ObjectRef{Version: "v1", Kind: "Secret", Namespace: "prod", Name: "api"}, Status: status.ResourceEncrypted, Health: status.HealthHealthy,
				Message: "deploy/vault/api.enc.yaml: encrypted for age1xyz; no matching identity in SOPS_AGE_KEY (unset)"},
			{Ref: status.ObjectRef{Version: "v1", Kind: "Secret", Namespace: "prod", Name: "db"}, Status: status.ResourceGenerated, Health: status.HealthHealthy, Parent: &sealed},
			{Ref: status.ObjectRef{Version: "v1", Kind: "Secret", Namespace: "prod", Name: "smtp-credentials"}, Status: status.ResourceGenerated, Health: status.HealthHealthy, Parent: &external},
			{Ref: sealed, Status: status.ResourceSynced, Health: status.HealthHealthy},
			{Ref: external, Status: status.ResourceSynced, Health: status.HealthHealthy},
		}}}
	return be
}

// TestGoldenAppViewSecrets: in the real program, the app view lists each
// controller-made Secret under its SealedSecret or ExternalSecret, and
// only the Encrypted one among the Secrets.
func TestGoldenAppViewSecrets(t *testing.T) {
	tm := startProgram(t, secretsFleet())
	waitText(t, tm, "vault-prod")
	keyPress(tm, "enter")
	waitText(t, tm, "ExternalSecret")
	m := finish(t, tm)
	if m.Breadcrumb() != "apps › app vault-prod" {
		t.Errorf("views %s", m.Breadcrumb())
	}
}
