package publish

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"kdrift.dev/kdrift/engine/leader"
	"kdrift.dev/kdrift/engine/status"
)

// StatusMarkField is the field of an AppStatus's status that holds the
// App's status.Mark: the newest revision kdrift applied to the App, read
// by every healer after a restart or a change of leader. It is written
// through the status subresource, which the viewers' role cannot patch.
const StatusMarkField = "appliedMark"

// MarkFieldManager is the field manager of AnnotationApplied, apart from
// the publisher's so that neither write removes the other's fields.
const MarkFieldManager = "kdrift-mark"

// MaxMarkBytes bounds the annotation kdrift reads back.
const MaxMarkBytes = 4096

// Marks keeps the Apps' applied revisions of repository identity on their
// AppStatuses in a namespace (engine.Marks).
type Marks struct {
	client   dynamic.ResourceInterface
	ns       string
	identity string
}

// NewMarks keeps repository identity's marks in namespace.
func NewMarks(dyn dynamic.Interface, namespace, identity string) *Marks {
	return &Marks{client: dyn.Resource(GVR).Namespace(namespace), ns: namespace, identity: identity}
}

// Mark reads the App's mark; the zero Mark when its AppStatus or the
// annotation does not exist.
func (m *Marks) Mark(ctx context.Context, app string) (status.Mark, error) {
	name := ObjectName(m.identity, app)
	obj, err := m.client.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return status.Mark{}, nil
	}
	if err != nil {
		return status.Mark{}, fmt.Errorf("AppStatus %s/%s: %w", m.ns, name, err)
	}
	if got := obj.GetAnnotations()[leader.AnnotationRepo]; got != m.identity {
		return status.Mark{}, fmt.Errorf("AppStatus %s/%s belongs to repository %q, not %q; delete it and kdrift writes it again", m.ns, name, got, m.identity)
	}
	raw, found, err := unstructured.NestedFieldNoCopy(obj.Object, "status", StatusMarkField)
	if err != nil || !found || raw == nil {
		return status.Mark{}, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return status.Mark{}, fmt.Errorf("AppStatus %s/%s: status.%s: %w", m.ns, name, StatusMarkField, err)
	}
	if len(b) > MaxMarkBytes {
		return status.Mark{}, fmt.Errorf("AppStatus %s/%s: status.%s is %d bytes, more than %d; remove it (kdrift then trusts the next revision it applies)", m.ns, name, StatusMarkField, len(b), MaxMarkBytes)
	}
	var mk status.Mark
	if err := json.Unmarshal(b, &mk); err != nil || !isHash(mk.Revision) {
		return status.Mark{}, fmt.Errorf("AppStatus %s/%s: status.%s is not a revision mark (%s); remove it (kdrift then trusts the next revision it applies)", m.ns, name, StatusMarkField, b)
	}
	return mk, nil
}

// SetMark writes the App's mark (creating its AppStatus when the
// publisher has not yet).
func (m *Marks) SetMark(ctx context.Context, app string, mk status.Mark) error {
	name := ObjectName(m.identity, app)
	val, err := json.Marshal(mk)
	if err != nil {
		return err
	}
	var markMap map[string]any
	if err := json.Unmarshal(val, &markMap); err != nil {
		return err
	}
	obj := map[string]any{
		"apiVersion": Group + "/" + Version,
		"kind":       Kind,
		"metadata": map[string]any{
			"name":        name,
			"namespace":   m.ns,
			"labels":      map[string]any{leader.LabelManagedBy: "kdrift", leader.LabelRepo: leader.Hash(m.identity)},
			"annotations": map[string]any{leader.AnnotationRepo: m.identity},
		},
	}
	// The object first (the publisher may not have written it yet), then
	// the mark through the status subresource.
	if err := applyObject(ctx, m.client, obj, MarkFieldManager); err != nil {
		return fmt.Errorf("AppStatus %s/%s: %w", m.ns, name, err)
	}
	obj["status"] = map[string]any{StatusMarkField: markMap}
	if err := applyObject(ctx, m.client, obj, MarkFieldManager, "status"); err != nil {
		return fmt.Errorf("AppStatus %s/%s: status.%s (the role needs patch on appstatuses/status): %w", m.ns, name, StatusMarkField, err)
	}
	return nil
}

// isHash reports whether s looks like a Git commit hash (SHA-1 or SHA-256).
func isHash(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
