package diff

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/app"
)

// app20 is a 20-object app: Deployments synced, scaled by hand and edited
// by hand, and ConfigMaps with a key added by hand, with ignore rules.
func app20(b testing.TB) []Input {
	rules := []app.IgnoreRule{{Kind: "Deployment", Name: "other", JSONPointers: []string{"/spec/replicas"}}, {ManagedFieldsManagers: []string{"cloud-controller"}}}
	var out []Input
	for i := 0; len(out) < 20; i++ {
		var live, dry *unstructured.Unstructured
		desired := obj(b, desiredDeploy)
		switch i % 4 {
		case 0:
			live = obj(b, liveWith(b, "1", "3", `"f:replicas":{},`, "", ""))
			dry = obj(b, liveWith(b, "2", "3", `"f:replicas":{},`, "", ""))
		case 1:
			live = obj(b, liveWith(b, "1", "6", "", scaleEntry, ""))
			dry = obj(b, liveWith(b, "2", "3", `"f:replicas":{},`, "", ""))
		case 2:
			live = obj(b, liveWith(b, "1", "3", `"f:replicas":{},`, editEnvEntry, debugEnv))
			dry = obj(b, liveWith(b, "2", "3", `"f:replicas":{},`, editEnvEntry, debugEnv))
		case 3:
			desired = obj(b, desiredCM)
			live = obj(b, liveCM)
			dry = live.DeepCopy()
		}
		out = append(out, Input{Desired: desired, DryRun: dry, Live: live, Ignore: rules, Options: DefaultOptions()})
	}
	return out
}

// BenchmarkCompareApp20 is the pure Compare of a 20-object app.
func BenchmarkCompareApp20(b *testing.B) {
	inputs := app20(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, in := range inputs {
			Compare(in)
		}
	}
}

// BenchmarkDetailDeployment renders one drifted Deployment line by line.
func BenchmarkDetailDeployment(b *testing.B) {
	in := app20(b)[1]
	res := Compare(in)
	b.ReportAllocs()
	for b.Loop() {
		Detail("a", in.Desired, in.Live, res)
	}
}
