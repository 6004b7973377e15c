package diff

import (
	"testing"

	"kdrift.dev/kdrift/engine/status"
)

// A port Git names by containerPort alone, applied by another manager
// with Server-Side Apply: the set keys it with protocol TCP; it is Git's
// port, not an extra field.
func TestPortKeyedWithDefaultProtocolIsDeclared(t *testing.T) {
	desired := obj(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: gb, namespace: prod}
spec:
  template:
    spec:
      containers:
      - name: web
        ports: [{containerPort: 80}]
`)
	live := obj(t, `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: gb
  namespace: prod
  managedFields:
  - manager: argocd-controller
    operation: Apply
    apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1: {"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}}}
spec:
  template:
    spec:
      containers:
      - name: web
        ports: [{containerPort: 80, protocol: TCP}]
`)
	res := Compare(Input{Desired: desired, DryRun: live, Live: live, Options: DefaultOptions()})
	if len(res.Fields) != 0 || res.Status != status.ResourceSynced {
		t.Fatalf("want Synced with no field, got %s %+v", res.Status, res.Fields)
	}
	// A UDP port Git does not name is still an extra field.
	udp := live.DeepCopy()
	udp.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["ports"] = []any{map[string]any{"containerPort": int64(80), "protocol": "UDP"}}
	udp.SetManagedFields(nil)
	mf := live.GetManagedFields()
	mf[0].FieldsV1.SetRawBytes([]byte(`{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"UDP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}}}}}}}}`))
	mf[0].Manager = "kubectl"
	udp.SetManagedFields(mf)
	res = Compare(Input{Desired: desired, DryRun: udp, Live: udp, Options: DefaultOptions()})
	if f, ok := fieldAt(res, "/spec/template/spec/containers/0/ports/0"); !ok || !f.Extra {
		t.Fatalf("a UDP port Git does not name: want an extra field, got %+v", res.Fields)
	}
}

// The Namespace name label is the apiserver's, whoever's entry holds it.
func TestNamespaceNameLabelIsNotDrift(t *testing.T) {
	desired := obj(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n")
	live := obj(t, `
apiVersion: v1
kind: Namespace
metadata:
  name: team
  labels: {kubernetes.io/metadata.name: team}
  managedFields:
  - manager: argocd-controller
    operation: Update
    apiVersion: v1
    fieldsType: FieldsV1
    fieldsV1: {"f:metadata":{"f:labels":{".":{},"f:kubernetes.io/metadata.name":{}}}}
`)
	res := Compare(Input{Desired: desired, DryRun: live, Live: live, Options: DefaultOptions()})
	if len(res.Fields) != 0 {
		t.Fatalf("want no field, got %+v", res.Fields)
	}
	live.SetLabels(map[string]string{"kubernetes.io/metadata.name": "other"})
	res = Compare(Input{Desired: desired, DryRun: live, Live: live, Options: DefaultOptions()})
	if len(res.Fields) != 1 {
		t.Fatalf("a label that is not the name: want it listed, got %+v", res.Fields)
	}
}

// A subject removed from a RoleBinding's atomic subjects is owned by
// whoever wrote the list last.
func TestRemovedItemOwnedByTheListsWriter(t *testing.T) {
	desired := obj(t, `
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: rb, namespace: prod}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
- {kind: User, name: a, apiGroup: rbac.authorization.k8s.io}
- {kind: ServiceAccount, name: b}
`)
	live := obj(t, `
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: rb
  namespace: prod
  managedFields:
  - manager: kdrift
    operation: Apply
    apiVersion: rbac.authorization.k8s.io/v1
    fieldsType: FieldsV1
    fieldsV1: {"f:roleRef":{}}
  - manager: kubectl-patch
    operation: Update
    apiVersion: rbac.authorization.k8s.io/v1
    fieldsType: FieldsV1
    fieldsV1: {"f:subjects":{}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
- {kind: User, name: a, apiGroup: rbac.authorization.k8s.io}
`)
	res := Compare(Input{Desired: desired, DryRun: desired, Live: live, Options: DefaultOptions()})
	if res.Drifted() != 1 {
		t.Fatalf("want one drifted field, got %+v", res.Fields)
	}
	for _, f := range res.Fields {
		if f.IsDrift() && (f.Class != status.OwnerPerson || len(f.Owners) != 1 || f.Owners[0].Manager != "kubectl-patch") {
			t.Fatalf("want the removed subject owned by kubectl-patch, got %+v", f)
		}
	}
}

func fieldAt(r status.ResourceStatus, ptr string) (status.FieldChange, bool) {
	for _, f := range r.Fields {
		if f.Path == ptr {
			return f, true
		}
	}
	return status.FieldChange{}, false
}
