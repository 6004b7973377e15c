package cli

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"kdrift.dev/kdrift/internal/enginetest"
)

// TestDeploySOPSDecryption: components/sops-decryption runs the
// controller with --decryption-secret and lets its ServiceAccount get
// that one Secret, and no other, nor list any.
func TestDeploySOPSDecryption(t *testing.T) {
	ctx := context.Background()
	root, err := enginetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	objs := kustomizeBuild(t, kustomization(t, filepath.Join(root, "deploy"), "components/sops-decryption"), true)
	admin := newAdminApplier(t)
	cs := enginetest.Clientset(t)
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
				t.Fatal(err)
			}
			if args := d.Spec.Template.Spec.Containers[0].Args; args[0] != "controller" || !slices.Contains(args, "--decryption-secret=kdrift/sops-age") {
				t.Fatalf("the controller's args are %q", args)
			}
		case "Namespace", "ServiceAccount", "Role", "RoleBinding":
			admin.apply(t, o)
		}
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().RoleBindings("kdrift").Delete(context.Background(), "kdrift-decryption", metav1.DeleteOptions{})
		_ = cs.RbacV1().Roles("kdrift").Delete(context.Background(), "kdrift-decryption", metav1.DeleteOptions{})
	})
	may := func(verb, name string) bool {
		r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:kdrift:kdrift",
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:kdrift", "system:authenticated"},
			ResourceAttributes: &authzv1.ResourceAttributes{Verb: verb, Resource: "secrets", Namespace: "kdrift", Name: name},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status.Allowed
	}
	eventually(t, nil, "get on Secret kdrift/sops-age", 10*time.Second, func() bool { return may("get", "sops-age") })
	for _, c := range []struct{ verb, name string }{{"get", "kdrift-git"}, {"list", ""}, {"watch", ""}, {"update", "sops-age"}} {
		if may(c.verb, c.name) {
			t.Fatalf("the ServiceAccount may %s secrets %q in kdrift", c.verb, c.name)
		}
	}
}
