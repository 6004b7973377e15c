package engine

import (
	"context"
	"fmt"
	"path"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/live"
)

// liveDecryptionRef checks, before kdrift reads a decryption Secret that
// a Flux Kustomization in Git names, that the live Kustomization of that
// name and namespace names the same Secret for the same folder: the keys
// are read as kustomize-controller reads them, for the object it
// reconciles, so a commit cannot choose which Secret's keys kdrift loads
// or which folder they open. nil when it does.
func liveDecryptionRef(ctx context.Context, cs *live.ClientSet, ns, name, secret, dir string) error {
	gvr := schema.GroupVersionResource{Group: fluxKustomizationGVK.Group, Version: fluxKustomizationGVK.Version, Resource: "kustomizations"}
	obj, err := cs.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("decryption Secret %s/%s not read: Kustomization %s/%s is not in the cluster, and kdrift reads decryption keys only for a live Kustomization that names them, as kustomize-controller does (let Flux apply it)", ns, secret, ns, name)
	case err != nil:
		return fmt.Errorf("decryption Secret %s/%s not read: the live Kustomization %s/%s cannot be read: %w", ns, secret, ns, name, err)
	}
	liveSecret, _, _ := unstructured.NestedString(obj.Object, "spec", "decryption", "secretRef", "name")
	livePath, _, _ := unstructured.NestedString(obj.Object, "spec", "path")
	if liveSecret != secret || path.Clean(strings.TrimPrefix(livePath, "./")) != dir {
		return fmt.Errorf("decryption Secret %s/%s not read: the live Kustomization %s/%s names Secret %q for folder %q, Git names %q for %q; kdrift reads only what the live object names (let Flux apply the change)", ns, secret, ns, name, liveSecret, livePath, secret, dir)
	}
	return nil
}
