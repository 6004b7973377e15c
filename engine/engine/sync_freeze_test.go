package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/internal/gittest"
)

// TestSyncCarriesTheSeenFreeze: a sync of a frozen app that carries the
// freeze the person confirmed is refused, showing the new freeze, when
// the head holds another one; with the freeze at the head it syncs.
func TestSyncCarriesTheSeenFreeze(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "sync-seen")
	frozen := func(reason string) string {
		return "  freeze:\n    reason: " + reason + "\n    by: Lao Li <lao.li@example.com>\n    at: \"2026-01-01T00:00:00Z\"\n"
	}
	repo := gittest.Init(t)
	repo.Commit("app", map[string]string{
		".kdrift/app.yaml":  appYAML("seen", "deploy/app", ns, false, false, frozen("INC-20 first")),
		"deploy/app/c.yaml": cmYAML("seen"),
	})
	e := newEngine(t, repo, nil)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	seen := &app.Freeze{Reason: "INC-20 first", By: "Lao Li <lao.li@example.com>", At: at}
	repo.Commit("another freeze", map[string]string{".kdrift/app.yaml": appYAML("seen", "deploy/app", ns, false, false, frozen("INC-21 second"))})

	_, err := e.Sync(ctx, "seen", engine.SyncOptions{AllowFrozen: true, SeenFreeze: seen})
	var changed *app.FreezeChangedError
	if !errors.As(err, &changed) || changed.Now == nil || changed.Now.Reason != "INC-21 second" || !strings.Contains(err.Error(), "INC-21 second") {
		t.Fatalf("sync over a freeze that changed: err = %v, want a *FreezeChangedError showing INC-21", err)
	}
	if trackedApp(t, ns, "seen") != "" {
		t.Fatal("a refused sync applied")
	}
	now := &app.Freeze{Reason: "INC-21 second", By: "Lao Li <lao.li@example.com>", At: at}
	if _, err := e.Sync(ctx, "seen", engine.SyncOptions{AllowFrozen: true, SeenFreeze: now}); err != nil {
		t.Fatal(err)
	}
	if trackedApp(t, ns, "seen") != "seen" {
		t.Fatal("the confirmed sync did not apply")
	}
}
