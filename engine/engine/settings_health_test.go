package engine_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/gittest"
)

// settingsHealth gives every App a ConfigMap check: Degraded when
// data.ready is "broken", Healthy when it is "yes".
const settingsHealth = `apiVersion: kdrift.dev/v1alpha1
kind: Settings
spec:
  health:
    checks:
    - apiVersion: v1
      kind: ConfigMap
      current: has(self.data) && self.data.ready == 'yes'
      failed: has(self.data) && self.data.ready == 'broken'
`

func readyConfigMap(name, ready string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\ndata: {ready: \"" + ready + "\"}\n"
}

// TestSettingsHealthChecks: the repository's settings judge every App's
// objects of their kind, an App's own check for the kind wins, and a
// settings file that cannot be read makes every App an Error naming it
// (nothing healed on rules kdrift could not read) until it is fixed.
func TestSettingsHealthChecks(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "settings-health")
	repo := gittest.Init(t)
	own := "  health:\n    checks:\n    - apiVersion: v1\n      kind: ConfigMap\n      current: \"true\"\n"
	repo.Commit("apps", map[string]string{
		".kdrift/settings.yaml": settingsHealth,
		".kdrift/apps.yaml": appYAML("plain", "deploy/plain", ns, true, false, "") + "---\n" +
			appYAML("own", "deploy/own", ns, true, false, own),
		"deploy/plain/cm.yaml": readyConfigMap("plain", "broken"),
		"deploy/own/cm.yaml":   readyConfigMap("own", "broken"),
	})
	e := newEngine(t, repo, nil)
	for _, n := range []string{"plain", "own"} {
		if res, err := e.Sync(ctx, n, engine.SyncOptions{}); err != nil {
			t.Fatalf("sync %s: %v\n%s", n, err, describe(res.Status))
		}
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	r, ok := resource(appStatus(t, e, "plain"), "ConfigMap", "plain")
	if !ok || r.Health != status.HealthDegraded || r.HealthDetail == nil || r.HealthDetail.Rule != diff.RuleCEL || !strings.HasPrefix(r.HealthDetail.Message, "failed:") {
		t.Fatalf("plain: want Degraded by the settings' CEL check:\n%s", describe(appStatus(t, e, "plain")))
	}
	r, ok = resource(appStatus(t, e, "own"), "ConfigMap", "own")
	if !ok || r.Health != status.HealthHealthy || r.HealthDetail == nil || r.HealthDetail.Rule != diff.RuleCEL {
		t.Fatalf("own: want Healthy by the App's own check:\n%s", describe(appStatus(t, e, "own")))
	}

	// A broken expression in the settings: every App is an Error naming
	// the file and the field; nothing is applied.
	broken := strings.Replace(settingsHealth, "self.data.ready == 'yes'", "self.data.ready ==", 1)
	repo.Commit("break the settings", map[string]string{
		".kdrift/settings.yaml": broken,
		"deploy/plain/cm.yaml":  readyConfigMap("plain", "yes"),
	})
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"plain", "own"} {
		a := appStatus(t, e, n)
		if a.Sync != status.SyncError || !strings.Contains(a.Error, ".kdrift/settings.yaml") || !strings.Contains(a.Error, "spec.health.checks[0].current") {
			t.Fatalf("%s: want an Error naming the settings file and field:\n%s", n, describe(a))
		}
	}
	cm, err := enginetest.Clientset(t).CoreV1().ConfigMaps(ns).Get(ctx, "plain", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["ready"] != "broken" {
		t.Fatalf("an App was synced while the settings were invalid: data.ready=%q", cm.Data["ready"])
	}

	repo.Commit("fix the settings", map[string]string{".kdrift/settings.yaml": settingsHealth})
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	r, ok = resource(appStatus(t, e, "plain"), "ConfigMap", "plain")
	if !ok || r.Health != status.HealthHealthy {
		t.Fatalf("plain after the fix: want Healthy once healed to ready=yes:\n%s", describe(appStatus(t, e, "plain")))
	}
}
