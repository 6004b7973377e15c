package render_test

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/engine/sops"
	"kdrift.dev/kdrift/internal/hostile"
	"kdrift.dev/kdrift/internal/sopstest"
)

// TestSOPSPlaintextOnlyInSecrets: with the key present and without it,
// every render that asks for a SOPS file's plaintext outside a Secret
// (Jsonnet, Helm's .Files, a configMapGenerator, a file shared with a
// secretGenerator, a replacement out of a Secret, an encrypted
// ConfigMap) is a *SOPSUseError naming the file, and no form of the
// plaintext is in its message or objects; a Secret manifest and a
// secretGenerator beside them still decrypt.
func TestSOPSPlaintextOnlyInSecrets(t *testing.T) {
	id := sopstest.Identity(t)
	files := sopstest.AppFiles(t, "deploy/good", id)
	cases := hostile.SOPSCases(t, id)
	for _, c := range cases {
		for f, body := range c.Files {
			files[f] = body
		}
	}
	_, snap := repo(t, files)
	s := snap()
	keys := &sops.Keyring{}
	if err := keys.Add("test", []byte(id.String())); err != nil {
		t.Fatal(err)
	}
	for _, withKey := range []bool{true, false} {
		r := render.NewRenderer()
		if withKey {
			r.SetKeys(keys)
		}
		for _, c := range cases {
			objs, err := r.Render(s, "deploy/"+c.Name)
			var ue *render.SOPSUseError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.Want) || !strings.Contains(err.Error(), "only ever becomes the data of a Secret") {
				t.Errorf("key %v: %s: error = %v, want a SOPSUseError containing %q", withKey, c.Name, err, c.Want)
				continue
			}
			if leak := hostile.Leak(err.Error()); leak != "" {
				t.Errorf("key %v: %s: the error holds %q: %v", withKey, c.Name, leak, err)
			}
			for _, o := range objs {
				js, _ := o.MarshalJSON()
				if leak := hostile.Leak(string(js)); leak != "" {
					t.Errorf("key %v: %s: %s holds %q", withKey, c.Name, o.GetName(), leak)
				}
			}
		}
		objs, err := r.Render(s, "deploy/good")
		if err != nil {
			t.Fatalf("key %v: good: %v", withKey, err)
		}
		for _, o := range objs {
			_, sealed := sops.Find(o.Object)
			if o.GetKind() == "Secret" && sealed == withKey {
				t.Errorf("key %v: %s decrypted %v", withKey, o.GetName(), !sealed)
			}
			if o.GetKind() == "Secret" && o.GetName() == "db-credentials" && withKey {
				if pw, _, _ := unstructured.NestedString(o.Object, "stringData", "password"); pw != sopstest.DBPassword {
					t.Errorf("db-credentials password = %q", pw)
				}
			}
		}
	}
}
