package apply_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/internal/enginetest"
)

// TestGuardRefusesCiphertext: an object that still carries a SOPS value
// or SOPS metadata is never sent to the apiserver, dry run or not, and
// the error names the object, the field and the file.
func TestGuardRefusesCiphertext(t *testing.T) {
	const ct = "ENC[AES256_GCM,data:q83vAQ==,iv:MyIDYbT718JRr11QtBkcj3Dwm4k1aCGZBVeZf0EyV8o=,tag:t5z2Z023Up0kxwCgw1gNxg==,type:str]"
	a := apply.New(enginetest.Dynamic(t), newApplierMapper(t), apply.Options{Origin: func(c string) string {
		if c == ct {
			return "apps/db/secret.enc.yaml"
		}
		return ""
	}})
	cases := map[string]struct {
		js   string
		path string
	}{
		"guard-string-data": {`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"guard-string-data","namespace":"default"},"stringData":{"DB_PASSWORD":"` + ct + `"}}`, "/stringData/DB_PASSWORD"},
		"guard-generated":   {`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"guard-generated","namespace":"default"},"data":{"DB_PASSWORD":"` + base64.StdEncoding.EncodeToString([]byte(ct)) + `"}}`, "/data/DB_PASSWORD"},
		"guard-configmap":   {`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"guard-configmap","namespace":"default"},"data":{"url":"` + ct + `"}}`, "/data/url"},
		"guard-sops-map":    {`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"guard-sops-map","namespace":"default"},"data":{"a":"b"},"sops":{"mac":"x","version":"3.13.3"}}`, "/sops"},
	}
	ctx := context.Background()
	for name, c := range cases {
		o := obj(t, c.js)
		for _, dry := range []bool{true, false} {
			_, err := a.Apply(ctx, o, dry)
			var ce *apply.CiphertextError
			if !errors.As(err, &ce) {
				t.Fatalf("%s (dry run %v): Apply = %v; want a CiphertextError", name, dry, err)
			}
			if ce.Path != c.path || !strings.Contains(err.Error(), o.GetKind()+"/default/"+name) {
				t.Fatalf("%s: error %q, path %q; want path %q", name, err, ce.Path, c.path)
			}
			if c.path != "/sops" && !strings.Contains(err.Error(), "apps/db/secret.enc.yaml") {
				t.Fatalf("%s: the error does not name the file: %v", name, err)
			}
		}
		res := schema.GroupVersionResource{Version: "v1", Resource: strings.ToLower(o.GetKind()) + "s"}
		if _, err := enginetest.Dynamic(t).Resource(res).Namespace("default").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("%s reached the apiserver: %v", name, err)
		}
	}
}
