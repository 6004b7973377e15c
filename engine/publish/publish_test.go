package publish

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/leader"
	"kdrift.dev/kdrift/engine/status"
)

// TestCRDInDeploy: deploy/crd-appstatus.yaml is the CRD the controller
// installs.
func TestCRDInDeploy(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "crd-appstatus.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, CRDYAML) {
		t.Fatal("deploy/crd-appstatus.yaml differs from engine/publish/crd.yaml; copy one to the other")
	}
}

// TestBound: drifted resources first within the bound, fields and values
// cut, Secret values masked, credentials redacted, the comparison time
// dropped, and the content hash stable across passes.
func TestBound(t *testing.T) {
	st := status.AppStatus{Name: "web", Error: "fetch https://user:hunter2@git.example/x.git failed"}
	for i := 0; i < MaxResources+10; i++ {
		r := status.ResourceStatus{Ref: status.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprintf("c%03d", i)}, Status: status.ResourceSynced}
		st.Resources = append(st.Resources, r)
	}
	drifted := status.ResourceStatus{Ref: status.ObjectRef{Version: "v1", Kind: "Secret", Namespace: "ns", Name: "zz-last"}, Status: status.ResourceOutOfSync}
	for i := 0; i < MaxFields+3; i++ {
		drifted.Fields = append(drifted.Fields, status.FieldChange{Path: fmt.Sprintf("/data/k%d", i), Desired: "plain-secret", Live: strings.Repeat("x", 10)})
	}
	drifted.Fields[0].Desired = strings.Repeat("y", MaxValueBytes*2)
	st.Resources = append(st.Resources, drifted)
	p := Bound("git.example/x#main", st)
	if len(p.Resources) != MaxResources || p.ResourcesOmitted != 11 || p.FieldsOmitted != 3 || p.DriftedObjects != 1 {
		t.Fatalf("bound: %d resources, %d omitted, %d fields omitted, %d drifted", len(p.Resources), p.ResourcesOmitted, p.FieldsOmitted, p.DriftedObjects)
	}
	var sec *status.ResourceStatus
	for i := range p.Resources {
		if p.Resources[i].Ref.Name == "zz-last" {
			sec = &p.Resources[i]
		}
	}
	if sec == nil {
		t.Fatal("the drifted Secret was not kept within the bound")
	}
	for _, f := range sec.Fields {
		if f.Desired != diff.MaskedValue || f.Live != diff.MaskedValue || !f.Masked {
			t.Fatalf("Secret field not masked: %+v", f)
		}
	}
	if strings.Contains(p.Error, "hunter2") {
		t.Fatalf("credentials published: %s", p.Error)
	}
	if p.Complete() {
		t.Fatal("a bounded status says it is complete")
	}
	h1, _, _ := contentHash(p)
	st.ComparedAt = st.ComparedAt.Add(1e9)
	h2, _, _ := contentHash(Bound("git.example/x#main", st))
	if h1 != h2 {
		t.Fatal("a new comparison time changes the published content: every pass would write")
	}
	long := strings.Repeat("a", 300)
	if n := ObjectName("id", long); len(n) > 253 || !strings.HasSuffix(n, "-"+leader.Hash("id")) {
		t.Fatalf("object name %q", n)
	}
}
