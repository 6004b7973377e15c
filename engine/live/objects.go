package live

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"kdrift.dev/kdrift/engine/sops"
	"kdrift.dev/kdrift/engine/status"
)

// DryRunApplier asks the apiserver what applying an object would produce.
type DryRunApplier interface {
	// DryRunApply server-side applies obj with dryRun=All, force and
	// field manager kdrift, and returns the object the apiserver would
	// store. Errors start with the object and wrap the apiserver's error,
	// so apierrors.IsInvalid and friends still work on them.
	DryRunApply(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error)
}

// Getter reads one live object.
type Getter interface {
	// Get returns the live object, or nil and no error when it does not
	// exist. The caller owns the returned object.
	Get(ctx context.Context, ref status.ObjectRef) (*unstructured.Unstructured, error)
}

// DryRunApply implements DryRunApplier against the apiserver.
func (s *ClientSet) DryRunApply(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ref := RefOf(obj)
	if err := refuseCiphertext(ref, obj); err != nil {
		return nil, err
	}
	ri, _, err := s.Resource(ctx, obj)
	if err != nil {
		return nil, err
	}
	body, err := ApplyBody(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot encode for apply: %w", ref, err)
	}
	force := true
	out, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{
		DryRun:       []string{metav1.DryRunAll},
		Force:        &force,
		FieldManager: FieldManager,
	})
	if err != nil {
		return nil, s.objectError(ref, "dry-run apply", err)
	}
	return out, nil
}

// DryRunCreate asks the apiserver, without storing anything, what it
// would create from obj: the object with every default filled in. It
// creates under a generated name so that an existing object of the same
// name does not stand in the way; compare values only, not names.
func (s *ClientSet) DryRunCreate(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ref := RefOf(obj)
	if err := refuseCiphertext(ref, obj); err != nil {
		return nil, err
	}
	ri, _, err := s.Resource(ctx, obj)
	if err != nil {
		return nil, err
	}
	c := obj.DeepCopy()
	for _, f := range []string{"managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "selfLink"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	c.SetGenerateName(obj.GetName() + "-")
	c.SetName("")
	out, err := ri.Create(ctx, c, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: FieldManager})
	if err != nil {
		return nil, s.objectError(ref, "dry-run create", err)
	}
	return out, nil
}

// Get implements Getter with a direct API read (no cache).
func (s *ClientSet) Get(ctx context.Context, ref status.ObjectRef) (*unstructured.Unstructured, error) {
	ri, _, err := s.resourceFor(ctx, s.Dynamic, GVK(ref), ref.Namespace, ref)
	if err != nil {
		return nil, err
	}
	out, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, s.objectError(ref, "get", err)
	}
	return out, nil
}

// objectError names the object first; an error that is not the apiserver
// speaking (connection refused, timeout) also names the context and server.
func (s *ClientSet) objectError(ref status.ObjectRef, op string, err error) error {
	if _, ok := err.(apierrors.APIStatus); ok {
		return fmt.Errorf("%s: %s failed: %w", ref, op, err)
	}
	return fmt.Errorf("%s: %w", ref, s.clusterError(op, err))
}

// ApplyBody encodes an object for a server-side apply request, without the
// bookkeeping fields an apply must not carry (managedFields,
// resourceVersion, uid, creationTimestamp, generation, status).
func ApplyBody(obj *unstructured.Unstructured) ([]byte, error) {
	c := obj.DeepCopy()
	for _, f := range []string{"managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "selfLink"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(c.Object, "status")
	return c.MarshalJSON()
}

// refuseCiphertext keeps SOPS ciphertext from reaching the apiserver, even
// in a dry run (apply.Guard does the same for real applies).
func refuseCiphertext(ref status.ObjectRef, obj *unstructured.Unstructured) error {
	if c, ok := sops.Find(obj.Object); ok {
		return fmt.Errorf("%s still holds SOPS-encrypted data at %s: kdrift never sends ciphertext to the apiserver", ref, c.Path)
	}
	return nil
}
