package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/leader"
	"kdrift.dev/kdrift/engine/redact"
	"kdrift.dev/kdrift/engine/status"
)

// Annotations on an AppStatus.
const (
	// AnnotationContent is the hash of the published content: the leader
	// writes only when it changes.
	AnnotationContent = "kdrift.dev/content"
	// AnnotationFetch names a commit a person pushed: the leader fetches
	// Git at once when it changes (see Nudge).
	AnnotationFetch = "kdrift.dev/fetch"
)

// Bounds on what one AppStatus carries, so that a large or very drifted
// App stays far below the apiserver's object size limit (1.5 MiB).
const (
	// MaxResources is how many resources are listed (drifted ones first);
	// the rest are counted in resourcesOmitted.
	MaxResources = 250
	// MaxFields is how many changed fields are listed per resource.
	MaxFields = 20
	// MaxValueBytes bounds one field's desired or live value (as JSON).
	MaxValueBytes = 512
	// MaxMessageBytes bounds a message or error.
	MaxMessageBytes = 2048
)

// ObjectName is the AppStatus of an App of a repository: the App's name
// and the repository's hash, so two repositories' Apps of one name do not
// collide in one namespace.
func ObjectName(identity, app string) string {
	const max = 253 - 11
	if len(app) > max {
		app = app[:max]
	}
	return app + "-" + leader.Hash(identity)
}

// Published is an App's status as an AppStatus carries it: the engine's
// status, bounded, with what a person reading `kubectl get -o yaml` needs
// besides.
type Published struct {
	status.AppStatus
	// Repository is the repository identity.
	Repository string `json:"repository"`
	// DriftedObjects counts the drifted resources (all of them, also
	// those not listed).
	DriftedObjects int `json:"driftedObjects"`
	// ResourcesOmitted counts the resources not listed (MaxResources).
	ResourcesOmitted int `json:"resourcesOmitted,omitempty"`
	// FieldsOmitted counts the changed fields not listed (MaxFields).
	FieldsOmitted int `json:"fieldsOmitted,omitempty"`
}

// Bound is st as it is published: resources and fields up to the bounds
// (drifted resources first), values and messages cut, Secret values
// masked, URL credentials redacted; its comparison time dropped (it
// changes every pass, and a write per pass is the churn publishing must
// not cause).
func Bound(identity string, st status.AppStatus) Published {
	p := Published{Repository: identity, DriftedObjects: st.DriftedObjects()}
	st.ComparedAt = time.Time{}
	st.Cause = nil
	st.Error = cut(redact.Text(st.Error))
	var drifted, rest []status.ResourceStatus
	for _, r := range st.Resources {
		if r.Status.Neutral() {
			rest = append(rest, r)
		} else {
			drifted = append(drifted, r)
		}
	}
	out := make([]status.ResourceStatus, 0, min(len(st.Resources), MaxResources))
	for _, group := range [][]status.ResourceStatus{drifted, rest} {
		for _, r := range group {
			if len(out) == MaxResources {
				p.ResourcesOmitted++
				continue
			}
			r.Message = cut(redact.Text(r.Message))
			secret := r.Ref.Group == "" && r.Ref.Kind == "Secret"
			fields := make([]status.FieldChange, 0, min(len(r.Fields), MaxFields))
			for i, f := range r.Fields {
				if i == MaxFields {
					p.FieldsOmitted += len(r.Fields) - MaxFields
					break
				}
				if secret && !f.Masked {
					if f.Desired != nil {
						f.Desired = diff.MaskedValue
					}
					if f.Live != nil {
						f.Live = diff.MaskedValue
					}
					f.Masked = true
				}
				f.Desired, f.Live = cutValue(f.Desired), cutValue(f.Live)
				fields = append(fields, f)
			}
			if len(fields) == 0 {
				fields = nil
			}
			r.Fields = fields
			out = append(out, r)
		}
	}
	sortResources(out)
	st.Resources = out
	p.AppStatus = st
	return p
}

// sortResources keeps the engine's order (kind, namespace, name).
func sortResources(rs []status.ResourceStatus) {
	// Stable insertion into the engine's order: drifted were moved first
	// only to survive the bound.
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && rs[j].Ref.String() < rs[j-1].Ref.String(); j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

func cut(s string) string {
	if len(s) <= MaxMessageBytes {
		return s
	}
	return s[:MaxMessageBytes] + fmt.Sprintf("… (%d bytes cut)", len(s)-MaxMessageBytes)
}

func cutValue(v any) any {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil || len(b) <= MaxValueBytes {
		return v
	}
	return fmt.Sprintf("%s%d bytes, not published; open the diff)", cutPrefix, len(b))
}

// cutPrefix starts a value too long to publish.
const cutPrefix = "(a value of "

// Complete reports whether p lists every resource and every changed field
// with its values, so that a diff from it says all a compare would.
func (p Published) Complete() bool {
	if p.ResourcesOmitted > 0 || p.FieldsOmitted > 0 {
		return false
	}
	for _, r := range p.Resources {
		for _, f := range r.Fields {
			for _, v := range []any{f.Desired, f.Live} {
				if s, ok := v.(string); ok && strings.HasPrefix(s, cutPrefix) {
					return false
				}
			}
		}
	}
	return true
}

// contentHash is the hash a Published carries in AnnotationContent.
func contentHash(p Published) (string, []byte, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return "", nil, err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16]), b, nil
}

// Publisher writes a repository's AppStatuses; only the Lease's holder
// uses one. It writes an App's object only when its content changed since
// it (or an earlier leader) last wrote it.
type Publisher struct {
	client   dynamic.ResourceInterface
	ns       string
	identity string

	mu sync.Mutex
	// hashes are the content hashes the objects have, by object name.
	hashes map[string]string
	// writes counts the requests that changed an object.
	writes int
}

// NewPublisher writes the AppStatuses of repository identity in namespace.
func NewPublisher(dyn dynamic.Interface, namespace, identity string) *Publisher {
	return &Publisher{client: dyn.Resource(GVR).Namespace(namespace), ns: namespace, identity: identity, hashes: map[string]string{}}
}

// Seed records what the cluster holds (from a Watcher), so that a new
// leader rewrites nothing that is already as it would write it.
func (p *Publisher) Seed(objs map[string]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, h := range objs {
		p.hashes[name] = h
	}
}

// Writes counts the writes (apply or delete) the publisher sent.
func (p *Publisher) Writes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.writes
}

// Publish writes one App's status when its published content changed.
// It reports whether it wrote.
func (p *Publisher) Publish(ctx context.Context, st status.AppStatus) (bool, error) {
	pub := Bound(p.identity, st)
	hash, body, err := contentHash(pub)
	if err != nil {
		return false, fmt.Errorf("AppStatus of %s: %w", st.Name, err)
	}
	name := ObjectName(p.identity, st.Name)
	p.mu.Lock()
	same := p.hashes[name] == hash
	p.mu.Unlock()
	if same {
		return false, nil
	}
	var statusMap map[string]any
	if err := json.Unmarshal(body, &statusMap); err != nil {
		return false, fmt.Errorf("AppStatus %s/%s: %w", p.ns, name, err)
	}
	obj := map[string]any{
		"apiVersion": Group + "/" + Version,
		"kind":       Kind,
		"metadata": map[string]any{
			"name":      name,
			"namespace": p.ns,
			"labels":    map[string]any{leader.LabelManagedBy: "kdrift", leader.LabelRepo: leader.Hash(p.identity)},
			"annotations": map[string]any{
				leader.AnnotationRepo: p.identity,
				AnnotationContent:     hash,
			},
		},
	}
	// Metadata through the object, status through its subresource (the
	// object write ignores status).
	if err := applyObject(ctx, p.client, obj, FieldManager); err != nil {
		return false, fmt.Errorf("AppStatus %s/%s: write failed: %w", p.ns, name, err)
	}
	obj["status"] = statusMap
	if err := applyObject(ctx, p.client, obj, FieldManager, "status"); err != nil {
		return false, fmt.Errorf("AppStatus %s/%s: status write failed (the role needs patch on appstatuses/status): %w", p.ns, name, err)
	}
	p.mu.Lock()
	p.hashes[name] = hash
	p.writes++
	p.mu.Unlock()
	return true, nil
}

// Prune deletes the AppStatuses of this repository whose App is not in
// apps (it left Git). It reports how many it deleted.
func (p *Publisher) Prune(ctx context.Context, apps []string) (int, error) {
	keep := map[string]bool{}
	for _, a := range apps {
		keep[ObjectName(p.identity, a)] = true
	}
	p.mu.Lock()
	var doomed []string
	for name := range p.hashes {
		if !keep[name] {
			doomed = append(doomed, name)
		}
	}
	p.mu.Unlock()
	n := 0
	for _, name := range doomed {
		err := p.client.Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return n, fmt.Errorf("AppStatus %s/%s: delete failed: %w", p.ns, name, err)
		}
		p.mu.Lock()
		delete(p.hashes, name)
		if err == nil {
			p.writes++
			n++
		}
		p.mu.Unlock()
	}
	return n, nil
}

// applyObject writes obj with Server-Side Apply as manager, to the
// subresource when one is given.
func applyObject(ctx context.Context, client dynamic.ResourceInterface, obj map[string]any, manager string, subresource ...string) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	meta := obj["metadata"].(map[string]any)
	force := true
	_, err = client.Patch(ctx, meta["name"].(string), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: manager, Force: &force}, subresource...)
	return err
}
