package engine

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/sops"
	"kdrift.dev/kdrift/engine/status"
)

// findEncrypted marks the desired objects that still hold SOPS ciphertext
// after rendering (no identity here opened their file) with why. They are
// compared by key names only and never applied, healed or pruned.
func (p *pass) findEncrypted() {
	p.encrypted = nil
	for _, d := range p.desired {
		c, ok := sops.Find(d.Object)
		if !ok {
			continue
		}
		why := fmt.Sprintf("holds SOPS ciphertext at %s that no file in the repository explains (a remote base?)", c.Path)
		if nk := p.e.renderer.Undecrypted(c.Value); nk != nil {
			why = nk.Error()
		}
		if p.encrypted == nil {
			p.encrypted = map[string]string{}
		}
		p.encrypted[refKey(live.RefOf(d))] = why
	}
}

// compareEncrypted compares an Encrypted object without a dry run: the
// ciphertext never reaches the apiserver.
func (p *pass) compareEncrypted(ctx context.Context, d *unstructured.Unstructured, ref status.ObjectRef, why string) (status.ResourceStatus, *unstructured.Unstructured) {
	lv, err := p.cl.peek(ctx, ref)
	if err != nil {
		return status.ResourceStatus{Ref: ref, Status: status.ResourceError, Health: status.HealthUnknown, Message: err.Error()}, nil
	}
	res := diff.CompareEncrypted(d, lv, why)
	res.Ref = ref
	return res, lv
}

// prunable reports whether an extraneous object may be pruned: not while
// the app has an Encrypted object of the same kind in the same namespace,
// since a generated name (secretGenerator's hash suffix) depends on the
// content kdrift could not decrypt, and the live object may be that one.
func (p *pass) prunable(o *unstructured.Unstructured) bool {
	for key := range p.encrypted {
		d := p.st.desired[key]
		if d == nil {
			continue
		}
		if d.GroupVersionKind().GroupKind() == o.GroupVersionKind().GroupKind() && d.GetNamespace() == o.GetNamespace() {
			return false
		}
	}
	return true
}

// scrubObjects keeps secret values out of a message: what scrubbed
// masks (plaintexts decrypted from SOPS files, the rendered Secrets'
// values) and the values of the Secrets among objs (live ones included).
func (p *pass) scrubObjects(msg string, objs ...*unstructured.Unstructured) string {
	return diff.ScrubSecrets(p.scrubbed(msg), objs...)
}
