package diff

import (
	"testing"

	"kdrift.dev/kdrift/engine/status"
)

func TestAppStatus(t *testing.T) {
	t.Parallel()
	rs := func(pairs ...string) []status.ResourceStatus {
		var out []status.ResourceStatus
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, status.ResourceStatus{Status: status.Resource(pairs[i]), Health: status.Health(pairs[i+1])})
		}
		return out
	}
	cases := []struct {
		in     []status.ResourceStatus
		sync   status.Sync
		health status.Health
	}{
		{nil, status.SyncSynced, status.HealthHealthy},
		{rs("Synced", "Healthy", "Ignored", "Progressing"), status.SyncSynced, status.HealthProgressing},
		{rs("Synced", "Healthy", "Missing", "Missing"), status.SyncOutOfSync, status.HealthMissing},
		{rs("Extraneous", "Degraded", "Synced", "Healthy"), status.SyncOutOfSync, status.HealthHealthy},
		{rs("RequiresReplace", "Healthy", "OutOfSync", "Degraded"), status.SyncOutOfSync, status.HealthDegraded},
		{rs("OutOfSync", "Healthy", "Error", "Unknown"), status.SyncError, status.HealthUnknown},
	}
	for i, tc := range cases {
		if got := AppSync(tc.in); got != tc.sync {
			t.Errorf("%d: AppSync = %s, want %s", i, got, tc.sync)
		}
		if got := AppHealth(tc.in); got != tc.health {
			t.Errorf("%d: AppHealth = %s, want %s", i, got, tc.health)
		}
	}
}
