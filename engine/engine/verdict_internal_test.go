package engine

import (
	"testing"

	"kdrift.dev/kdrift/engine/status"
)

func TestFollowsOther(t *testing.T) {
	const head = "13b3b73a1b2c3d4e5f60718293a4b5c6d7e8f901"
	for _, tt := range []struct {
		follows string
		other   bool
	}{
		{"", false}, {"HEAD", false}, {"main", false}, {"refs/heads/main", false},
		{"13b3b73", false}, {head, false},
		{"v1.2.0", true}, {"staging", true}, {"c99a92c", true}, {"13b", true},
	} {
		if got := followsOther(tt.follows, "main", head); got != tt.other {
			t.Errorf("followsOther(%q) = %v, want %v", tt.follows, got, tt.other)
		}
	}
}

// TestClassifyDifferences: the owner's fields take the owner's kind, a
// person's stay drift, fields that are not drift stay unmarked, and the
// fields a cached result shares are not written.
func TestClassifyDifferences(t *testing.T) {
	gitops := []status.Owner{{Manager: "argocd-controller", Operation: "Apply", Class: status.OwnerGitOps}}
	person := []status.Owner{{Manager: "kubectl-edit", Operation: "Update", Class: status.OwnerPerson}}
	shared := []status.FieldChange{
		{Path: "/spec/template/spec/containers/0/image", Owners: gitops, Class: status.OwnerGitOps},
		{Path: "/spec/replicas", Owners: person, Class: status.OwnerPerson},
		{Path: "/metadata/labels/x", Owners: gitops, Class: status.OwnerGitOps, Extra: true},
	}
	for _, tt := range []struct {
		name  string
		ow    *status.OwnerRevision
		owner status.Difference
		app   status.Difference
	}{
		{"behind", &status.OwnerRevision{Behind: true}, status.DifferenceWaiting, status.DifferenceDrift},
		{"same revision", &status.OwnerRevision{}, status.DifferenceRender, status.DifferenceDrift},
		{"owner silent", nil, "", status.DifferenceDrift},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rs := []status.ResourceStatus{
				{Status: status.ResourceOutOfSync, Fields: shared},
				{Status: status.ResourceMissing},
			}
			classifyDifferences(rs, tt.ow)
			f := rs[0].Fields
			if f[0].Difference != tt.owner || f[1].Difference != status.DifferenceDrift || f[2].Difference != "" || rs[1].Difference != tt.owner {
				t.Fatalf("kinds %q %q %q, missing %q", f[0].Difference, f[1].Difference, f[2].Difference, rs[1].Difference)
			}
			if shared[0].Difference != "" {
				t.Fatal("classify wrote into shared fields")
			}
			if got := status.AppDifference(rs); got != tt.app {
				t.Fatalf("app difference %q, want %q", got, tt.app)
			}
			rs[0].Fields = rs[0].Fields[:1]
			if got := status.AppDifference(rs); tt.ow != nil && got != tt.owner {
				t.Fatalf("without the person: app difference %q, want %q", got, tt.owner)
			}
		})
	}
}
