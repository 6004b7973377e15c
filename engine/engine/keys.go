package engine

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path"
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
func (e *core) LoadDecryptionSecret(ctx context.Context, namespace, name string) (string, error) {
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

// LoadFluxDecryptionKeys scopes decryption keys as Flux's
// kustomize-controller does: each Flux Kustomization at the branch head
// whose spec.decryption.secretRef names a Secret gets the age identities
// of that Secret, read from the Kustomization's own namespace, and they
// decrypt that Kustomization's files only (its App's spec.path); every
// other App keeps the engine's keys. Each scoped keyring also holds the
// identities of the environment (see sops.LoadKeyring). A Secret that
// cannot be read is reported in warnings and its App keeps the engine's
// keys (its SOPS files stay Encrypted). id identifies every scoped
// keyring, so that a caller polling for rotation can tell a change.
func (e *core) LoadFluxDecryptionKeys(ctx context.Context) (id string, warnings []error, err error) {
	if err := e.loadHead(ctx, false); err != nil {
		return "", nil, err
	}
	type ref struct{ app, kust, path, ns, name string }
	var refs []ref
	e.mu.Lock()
	for _, a := range e.apps.Apps {
		if a.Origin == nil || a.Origin.Decryption == nil || a.Origin.Decryption.SecretRef == "" {
			continue
		}
		ns, name, _ := strings.Cut(a.Origin.Decryption.SecretRef, "/")
		if ns != a.Origin.Namespace {
			// Flux reads a secretRef in the Kustomization's namespace
			// only; app.ParseFlux writes it so, and nothing else may.
			continue
		}
		refs = append(refs, ref{app: a.Metadata.Name, kust: a.Origin.Name, path: path.Clean(strings.TrimPrefix(a.Spec.Path, "./")), ns: ns, name: name})
	}
	e.mu.Unlock()
	cs, err := e.clients.For(e.opts.Context)
	if err != nil {
		return "", nil, err
	}
	byPath := map[string]*sops.Keyring{}
	secretOf := map[string]string{}
	var ids []string
	for _, r := range refs {
		secret := r.ns + "/" + r.name
		if other, ok := secretOf[r.path]; ok {
			if other != secret {
				warnings = append(warnings, fmt.Errorf("app %s: its folder %s is also another Flux Kustomization's, which names Secret %s for decryption; kdrift scopes keys by folder, so neither Secret is used for it: give each Kustomization its own folder", r.app, r.path, other))
				delete(byPath, r.path)
			}
			continue
		}
		secretOf[r.path] = secret
		ref := "Secret " + secret
		if err := liveDecryptionRef(ctx, cs, r.ns, r.kust, r.name, r.path); err != nil {
			warnings = append(warnings, fmt.Errorf("app %s: Flux's %w", r.app, err))
			continue
		}
		obj, err := cs.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(r.ns).Get(ctx, r.name, metav1.GetOptions{})
		if err == nil {
			keys, lerr := sops.LoadKeyring(os.Getenv)
			if lerr == nil {
				lerr = addSecretKeys(keys, ref, obj)
			}
			if lerr == nil {
				byPath[r.path] = keys
				ids = append(ids, r.path+"="+keys.ID())
				continue
			}
			err = lerr
		}
		switch {
		case apierrors.IsNotFound(err):
			err = fmt.Errorf("%s not found: create it with `kubectl -n %s create secret generic %s --from-file=identity.agekey=keys.txt`", ref, r.ns, r.name)
		case apierrors.IsForbidden(err):
			err = fmt.Errorf("%s: kdrift may not read it: grant get on it by resourceNames (see deploy/components/sops-decryption): %v", ref, err)
		}
		warnings = append(warnings, fmt.Errorf("app %s: Flux's decryption %w", r.app, err))
	}
	e.renderer.SetAppKeys(byPath)
	slices.Sort(ids)
	return strings.Join(ids, ","), warnings, nil
}
