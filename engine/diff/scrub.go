package diff

import (
	"encoding/base64"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/sops"
)

// ScrubSecrets replaces in msg every value of the Secrets among objs
// (data, decoded and as stored, and stringData) with a mask: an
// apiserver error may quote the object it refused.
func ScrubSecrets(msg string, objs ...*unstructured.Unstructured) string {
	var values []string
	for _, o := range objs {
		if o == nil || o.GetAPIVersion() != "v1" || o.GetKind() != "Secret" {
			continue
		}
		data, _, _ := unstructured.NestedStringMap(o.Object, "data")
		for _, v := range data {
			values = append(values, v)
			if raw, err := base64.StdEncoding.DecodeString(v); err == nil {
				values = append(values, string(raw))
			}
		}
		sd, _, _ := unstructured.NestedStringMap(o.Object, "stringData")
		for _, v := range sd {
			values = append(values, v)
		}
	}
	return sops.Scrub(msg, values)
}
