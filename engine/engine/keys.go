package engine

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/sops"
)

// AgeKeySuffix ends the keys of a decryption Secret that hold age
// identities, as in Flux's spec.decryption.secretRef.
const AgeKeySuffix = ".agekey"

// LoadDecryptionSecret reads age identities from the Secret
// namespace/name in the current context's cluster (every key ending in
// .agekey; other keys are ignored), adds those from the environment (see
// sops.LoadKeyring) and makes them the engine's keys. It returns the
// keyring's ID, so that a caller polling for rotation can tell a change.
// Errors name the Secret and say what to do; they never quote a key.
func (e *Engine) LoadDecryptionSecret(ctx context.Context, namespace, name string) (string, error) {
	ref := "Secret " + namespace + "/" + name
	cs, err := e.clients.For(e.opts.Context)
	if err != nil {
		return "", fmt.Errorf("%s: %w", ref, err)
	}
	obj, err := cs.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", fmt.Errorf("%s not found: create it with `kubectl -n %s create secret generic %s --from-file=identity.agekey=keys.txt`", ref, namespace, name)
	case apierrors.IsForbidden(err):
		return "", fmt.Errorf("%s: kdrift may not read it: grant get on it by resourceNames (see deploy/components/sops-decryption): %v", ref, err)
	case err != nil:
		return "", fmt.Errorf("%s: %w", ref, err)
	}
	keys, err := sops.LoadKeyring(os.Getenv)
	if err != nil {
		return "", err
	}
	if err := addSecretKeys(keys, ref, obj); err != nil {
		return "", err
	}
	e.renderer.SetKeys(keys)
	return keys.ID(), nil
}

// addSecretKeys adds the identities of a Secret's .agekey keys.
func addSecretKeys(keys *sops.Keyring, ref string, obj *unstructured.Unstructured) error {
	data, _, _ := unstructured.NestedStringMap(obj.Object, "data")
	var names []string
	for k := range data {
		if strings.HasSuffix(k, AgeKeySuffix) {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("%s has no key ending in %s: put the age identities (keys.txt) under a key such as identity.agekey", ref, AgeKeySuffix)
	}
	slices.Sort(names)
	for _, k := range names {
		raw, err := base64.StdEncoding.DecodeString(data[k])
		if err != nil {
			return fmt.Errorf("%s key %s is not base64: %v", ref, k, err)
		}
		if err := keys.Add(ref+" key "+k, raw); err != nil {
			return err
		}
	}
	return nil
}
