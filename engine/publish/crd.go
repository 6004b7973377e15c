// Package publish shares what the healer knows through the cluster: the
// AppStatus custom resource (appstatuses.kdrift.dev), one object per App,
// written by the holder of the repository's Lease only when its content
// changes, watched by every attached viewer, and annotated by a person's
// action to have the leader fetch Git at once.
//
// The package never prints; errors name the object first.
package publish

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"kdrift.dev/kdrift/engine/leader"
)

// CRDYAML is the AppStatus CustomResourceDefinition; deploy/crd-appstatus.yaml
// is the same file.
//
//go:embed crd.yaml
var CRDYAML []byte

// Group, Version and Resource of AppStatus.
const (
	Group    = "kdrift.dev"
	Version  = "v1alpha1"
	Resource = "appstatuses"
	Kind     = "AppStatus"
	CRDName  = Resource + "." + Group
)

// GVR is AppStatus's resource.
var GVR = schema.GroupVersionResource{Group: Group, Version: Version, Resource: Resource}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// FieldManager is the manager of everything the leader writes.
const FieldManager = "kdrift"

// SetupError says what a cluster lacks for leader election and published
// statuses, and what an administrator must apply; kdrift could not create
// it with its credentials.
type SetupError struct {
	// Missing lists what is missing ("namespace kdrift", "CRD appstatuses.kdrift.dev").
	Missing []string
	// Files are the deploy/ files that create them.
	Files []string
	// Command is the one kubectl command to run as an administrator.
	Command string
	// Err is the apiserver's refusal.
	Err error
}

// Error names what is missing and the command that creates it.
func (e *SetupError) Error() string {
	return fmt.Sprintf("%s missing and these credentials may not create it (%v); as a cluster administrator run: %s (the files are in kdrift's deploy/ folder), then start kdrift again",
		strings.Join(e.Missing, " and "), e.Err, e.Command)
}

// Unwrap is the apiserver's refusal.
func (e *SetupError) Unwrap() error { return e.Err }

// Ensure makes sure the namespace and the AppStatus CRD exist: it creates
// the namespace when missing and installs or upgrades the CRD (Server-Side
// Apply), when the credentials allow. A CRD already served is fine even
// when kdrift may not upgrade it. What it may not create is a *SetupError
// naming what to apply. It waits (up to a minute) for a new CRD to be
// served.
func Ensure(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, namespace string) error {
	setup := &SetupError{}
	_, err := cs.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{leader.LabelManagedBy: "kdrift"}}}
		_, err = cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{FieldManager: FieldManager})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		if !apierrors.IsForbidden(err) {
			return fmt.Errorf("namespace %s: %w", namespace, err)
		}
		setup.Missing = append(setup.Missing, "namespace "+namespace)
		setup.Err = err
		if namespace == leader.DefaultNamespace {
			setup.Files = append(setup.Files, "deploy/namespace.yaml")
		}
	}
	served, err := crdServed(cs.Discovery())
	if err != nil {
		return err
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(CRDYAML, &crd.Object); err != nil {
		return fmt.Errorf("CRD %s: the built-in definition does not parse: %w", CRDName, err)
	}
	body, err := crd.MarshalJSON()
	if err != nil {
		return fmt.Errorf("CRD %s: %w", CRDName, err)
	}
	force := true
	_, err = dyn.Resource(crdGVR).Patch(ctx, CRDName, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
	switch {
	case err == nil:
	case (apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err)) && served:
		// Installed by an administrator; kdrift may not upgrade it.
	case apierrors.IsForbidden(err):
		setup.Missing = append(setup.Missing, "CRD "+CRDName)
		setup.Files = append(setup.Files, "deploy/crd-appstatus.yaml")
		if setup.Err == nil {
			setup.Err = err
		}
	default:
		return fmt.Errorf("CRD %s: install failed: %w", CRDName, err)
	}
	if len(setup.Missing) > 0 {
		var parts []string
		if len(setup.Files) > 0 {
			parts = append(parts, "kubectl apply -f "+strings.Join(setup.Files, " -f "))
		}
		if namespace != leader.DefaultNamespace && setup.Missing[0] == "namespace "+namespace {
			parts = append([]string{"kubectl create namespace " + namespace}, parts...)
		}
		setup.Command = strings.Join(parts, " && ")
		return setup
	}
	if served {
		return nil
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if ok, err := crdServed(cs.Discovery()); err == nil && ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CRD %s: installed but not served after a minute; see `kubectl get crd %s -o yaml`", CRDName, CRDName)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// crdServed reports whether the apiserver serves appstatuses.kdrift.dev
// (discovery, which every authenticated user may read).
func crdServed(d discovery.DiscoveryInterface) (bool, error) {
	list, err := d.ServerResourcesForGroupVersion(Group + "/" + Version)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovery of %s/%s: %w", Group, Version, err)
	}
	for _, r := range list.APIResources {
		if r.Name == Resource {
			return true, nil
		}
	}
	return false, nil
}

// Served reports whether the cluster serves AppStatus; false, not an
// error, when it does not.
func Served(cs kubernetes.Interface) (bool, error) {
	return crdServed(cs.Discovery())
}

// IsSetupError reports whether err is a *SetupError.
func IsSetupError(err error) bool {
	var s *SetupError
	return errors.As(err, &s)
}
