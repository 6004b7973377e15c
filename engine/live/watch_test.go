package live

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func decodeU(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestMeaningfulChange(t *testing.T) {
	base := `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
  resourceVersion: "RV"
  generation: GEN
  managedFields:
  - {manager: kdrift, operation: Apply, apiVersion: apps/v1, time: "TIME", fieldsType: FieldsV1, fieldsV1: {"f:spec":{"f:replicas":{}}}}
  - {manager: kube-controller-manager, operation: Update, subresource: status, apiVersion: apps/v1, time: "TIME", fieldsType: FieldsV1, fieldsV1: {"f:status":{"OWNEDSF":{}}}}
spec: {replicas: REPLICAS}
status: {replicas: STREP}
`
	mk := func(rv, gen, time, statusField, replicas, st string) *unstructured.Unstructured {
		r := map[string]string{"RV": rv, "GEN": gen, "TIME": time, "OWNEDSF": statusField, "REPLICAS": replicas, "STREP": st}
		doc := base
		for k, v := range r {
			doc = strings.ReplaceAll(doc, k, v)
		}
		return decodeU(t, doc)
	}
	old := mk("1", "1", "2026-12-02T10:00:00Z", "f:replicas", "3", "1")
	cases := []struct {
		name string
		new  *unstructured.Unstructured
		want bool
	}{
		{"resync, same version", mk("1", "1", "2026-12-02T10:00:00Z", "f:replicas", "3", "1"), false},
		{"status only", mk("2", "1", "2026-12-02T10:05:00Z", "f:availableReplicas", "3", "2"), false},
		{"spec change", mk("2", "2", "2026-12-02T10:05:00Z", "f:replicas", "6", "1"), true},
	}
	for _, tc := range cases {
		if got := meaningfulChange(old, tc.new); got != tc.want {
			t.Errorf("%s: meaningfulChange = %v, want %v", tc.name, got, tc.want)
		}
	}
	// Same values, new owner: a person's Update taking a field.
	owner := old.DeepCopy()
	owner.SetResourceVersion("3")
	mf := owner.GetManagedFields()
	mf[0].Manager = "kubectl-edit"
	owner.SetManagedFields(mf)
	if !meaningfulChange(old, owner) {
		t.Error("an ownership change must count")
	}
}
