package apply

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/status"
)

// TestForbiddenSaysWhatGrantsIt: an apply the apiserver refused for want
// of permission says, on the object, how kdrift's controller gets it: the
// namespace in the settings and kdrift rbac, or the cluster-wide binding
// for a cluster-scoped kind.
func TestForbiddenSaysWhatGrantsIt(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", nil)
	e := &ObjectError{Ref: status.ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}, Op: "apply", Err: forbidden}
	if msg := e.Error(); !strings.Contains(msg, "may not write Deployment.apps in namespace shop") || !strings.Contains(msg, "kdrift rbac") || !strings.Contains(msg, "spec.namespaces") {
		t.Fatalf("namespaced: %s", msg)
	}
	ns := &ObjectError{Ref: status.ObjectRef{Kind: "Namespace", Name: "shop"}, Op: "apply", Err: apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "shop", nil)}
	if msg := ns.Error(); !strings.Contains(msg, "cluster-scoped kind") || !strings.Contains(msg, "components/cluster-wide") {
		t.Fatalf("cluster-scoped: %s", msg)
	}
	other := &ObjectError{Ref: e.Ref, Op: "apply", Err: apierrors.NewConflict(schema.GroupResource{Resource: "deployments"}, "web", nil)}
	if strings.Contains(other.Error(), "kdrift rbac") {
		t.Fatalf("a conflict is no permission problem: %s", other.Error())
	}
}
