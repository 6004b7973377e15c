package cli

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/internal/enginetest"
)

// TestDeployFluxArtifacts: components/flux-artifacts lets the
// ServiceAccount GET through the service proxy of source-controller's
// port 80 in flux-system (the request kdrift makes for a chart artifact),
// and nothing else: not another Service or port, not another verb, not
// another namespace.
func TestDeployFluxArtifacts(t *testing.T) {
	ctx := context.Background()
	root, err := enginetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	objs := kustomizeBuild(t, kustomization(t, filepath.Join(root, "deploy"), "components/flux-artifacts"), true)
	cs := enginetest.Clientset(t)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	admin := newAdminApplier(t)
	roles := 0
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace", "ServiceAccount", "Role", "RoleBinding":
			admin.apply(t, o)
			if o.GetKind() == "Role" && o.GetNamespace() == "flux-system" {
				roles++
			}
		}
	}
	if roles != 1 {
		t.Fatalf("%d Roles in flux-system, want 1 (kdrift-flux-artifacts)", roles)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().RoleBindings("flux-system").Delete(context.Background(), "kdrift-flux-artifacts", metav1.DeleteOptions{})
		_ = cs.RbacV1().Roles("flux-system").Delete(context.Background(), "kdrift-flux-artifacts", metav1.DeleteOptions{})
	})
	may := func(verb, ns, name string) bool {
		r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User:   "system:serviceaccount:kdrift:kdrift",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kdrift", "system:authenticated"},
			ResourceAttributes: &authzv1.ResourceAttributes{Verb: verb, Resource: "services", Subresource: "proxy",
				Namespace: ns, Name: name},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status.Allowed
	}
	eventually(t, nil, "get on services/proxy flux-system/source-controller:80", 10*time.Second, func() bool { return may("get", "flux-system", "source-controller:80") })
	for _, c := range []struct{ verb, ns, name string }{
		{"get", "flux-system", "notification-controller:80"},
		{"get", "flux-system", "source-controller:9090"},
		{"get", "default", "source-controller:80"},
		{"create", "flux-system", "source-controller:80"},
		{"get", "flux-system", ""},
	} {
		if may(c.verb, c.ns, c.name) {
			t.Errorf("the ServiceAccount may %s services/proxy %s/%q", c.verb, c.ns, c.name)
		}
	}
}
