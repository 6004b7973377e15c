package publish

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"kdrift.dev/kdrift/engine/leader"
	"kdrift.dev/kdrift/engine/status"
)

// AnnotationApplied holds an App's status.Mark (JSON) on its AppStatus:
// the newest revision kdrift applied to the App, read by every healer
// after a restart or a change of leader.
const AnnotationApplied = "kdrift.dev/applied"

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
	raw := obj.GetAnnotations()[AnnotationApplied]
	if raw == "" {
		return status.Mark{}, nil
	}
	if len(raw) > MaxMarkBytes {
		return status.Mark{}, fmt.Errorf("AppStatus %s/%s: annotation %s is %d bytes, more than %d; remove it (kdrift then trusts the next revision it applies)", m.ns, name, AnnotationApplied, len(raw), MaxMarkBytes)
	}
	var mk status.Mark
	if err := json.Unmarshal([]byte(raw), &mk); err != nil || !isHash(mk.Revision) {
		return status.Mark{}, fmt.Errorf("AppStatus %s/%s: annotation %s is not a revision mark (%q); remove it (kdrift then trusts the next revision it applies)", m.ns, name, AnnotationApplied, raw)
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
	obj := map[string]any{
		"apiVersion": Group + "/" + Version,
		"kind":       Kind,
		"metadata": map[string]any{
			"name":        name,
			"namespace":   m.ns,
			"labels":      map[string]any{leader.LabelManagedBy: "kdrift", leader.LabelRepo: leader.Hash(m.identity)},
			"annotations": map[string]any{leader.AnnotationRepo: m.identity, AnnotationApplied: string(val)},
		},
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	force := true
	if _, err := m.client.Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: MarkFieldManager, Force: &force}); err != nil {
		return fmt.Errorf("AppStatus %s/%s: %w", m.ns, name, err)
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
