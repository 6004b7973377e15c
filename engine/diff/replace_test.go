package diff

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestIsRequiresReplace: the apiserver's refusals of an immutable-field
// change, in the words of current and older releases, wrapped or not, are
// RequiresReplace; other refusals are not.
func TestIsRequiresReplace(t *testing.T) {
	invalid := func(kind string, errs ...*field.Error) error {
		return apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: kind}, "db", errs)
	}
	spec := field.NewPath("spec")
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"deployment selector", invalid("Deployment", field.Invalid(spec.Child("selector"), "x", "field is immutable")), true},
		{"statefulset volumeClaimTemplates", invalid("StatefulSet", field.Invalid(spec.Child("volumeClaimTemplates"), "x", "field is immutable")), true},
		// Older apiservers refuse a change to any StatefulSet field but a few
		// with one Forbidden cause that never says "immutable".
		{"statefulset, older apiserver", invalid("StatefulSet", field.Forbidden(spec, "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")), true},
		{"job template", invalid("Job", field.Invalid(spec.Child("template"), "x", "field is immutable")), true},
		{"wrapped", fmt.Errorf("StatefulSet/prod/db: dry-run apply failed: %w", invalid("StatefulSet", field.Forbidden(spec, "updates to statefulset spec for fields other than 'replicas' are forbidden"))), true},
		{"other invalid", invalid("Deployment", field.Required(spec.Child("template"), "")), false},
		{"conflict", apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "db", errors.New("field is immutable")), false},
		{"plain text", errors.New("field is immutable"), false},
		{"nil", nil, false},
	} {
		if got := IsRequiresReplace(c.err); got != c.want {
			t.Errorf("%s: IsRequiresReplace(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
