package diff

import "kdrift.dev/kdrift/engine/status"

// AppSync sums an app's resources into its sync status: Error when any
// resource could not be compared, OutOfSync when any is not Synced or
// Ignored (Missing, Extraneous and RequiresReplace included), Synced
// otherwise.
func AppSync(resources []status.ResourceStatus) status.Sync {
	out := status.SyncSynced
	for _, r := range resources {
		switch r.Status {
		case status.ResourceError:
			return status.SyncError
		case status.ResourceSynced, status.ResourceIgnored, status.ResourceEncrypted, status.ResourceGenerated:
		default:
			out = status.SyncOutOfSync
		}
	}
	return out
}

// healthRank orders healths from best to worst.
var healthRank = map[status.Health]int{
	status.HealthHealthy:     0,
	status.HealthUnknown:     1,
	status.HealthProgressing: 2,
	status.HealthMissing:     3,
	status.HealthDegraded:    4,
}

// AppHealth is the worst health among an app's resources, Extraneous ones
// left out since they are no longer part of the app; Healthy when there
// are none.
func AppHealth(resources []status.ResourceStatus) status.Health {
	out := status.HealthHealthy
	for _, r := range resources {
		if r.Status == status.ResourceExtraneous || r.Status == status.ResourceEncrypted || r.Health == "" {
			continue
		}
		if healthRank[r.Health] > healthRank[out] {
			out = r.Health
		}
	}
	return out
}
