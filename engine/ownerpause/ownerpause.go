// Package ownerpause writes a freeze kdrift recorded on the incident
// channel onto the live declaration of an app another GitOps tool owns
// (an Argo CD Application, a Flux Kustomization or HelmRelease), and
// lifts it again, as `argocd app set --self-heal=false` and `flux
// suspend` do; and it says when something put the tool's healing back
// while the freeze holds.
//
// That tool reads its declarations from the desired branch only: a freeze
// record on the channel stops kdrift's readers but not the tool, which
// goes on healing until its live declaration says otherwise. The patch is
// the one write kdrift makes to another tool's objects (ARCHITECTURE.md).
package ownerpause

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/redact"
)

// Manager is the field manager of the patch: the live declaration's
// managedFields show kdrift's pause, and whoever set the healing field
// after it.
const Manager = "kdrift-freeze"

// maxConflicts bounds the retries of a patch that lost a race with
// another writer of the declaration.
const maxConflicts = 3

// Cluster is how the live declarations are reached: the context's
// dynamic client, and a mapper from kinds to resources.
type Cluster struct {
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
	// Context names the kubeconfig context, for messages.
	Context string
}

// Outcome is what Write did to one live declaration.
type Outcome struct {
	// App is the app's name.
	App string `json:"app"`
	// Object is the live declaration, KIND NAMESPACE/NAME.
	Object string `json:"object"`
	// Done says the live declaration now says what the record says (or
	// there is none on the cluster, so nothing there heals the app).
	Done bool `json:"done"`
	// Message is one line for a person.
	Message string `json:"message"`
	// Command does it by hand when Done is false and a person may do it;
	// empty when the record must not be written there (a channel
	// unfreeze of a freeze committed on the desired branch).
	Command string `json:"command,omitempty"`
}

// ClusterOf is the Cluster of a context's clients.
func ClusterOf(cs *live.ClientSet) Cluster {
	return Cluster{Dynamic: cs.Dynamic, Mapper: cs.RESTMapper(), Context: cs.Context}
}

// WriteAll writes each freeze of owned, what a record on the incident
// channel changed, on its live declaration, in order.
func WriteAll(ctx context.Context, c Cluster, owned []app.OwnedFreeze, channel string) []Outcome {
	out := make([]Outcome, 0, len(owned))
	for _, f := range owned {
		out = append(out, Write(ctx, c, f, channel))
	}
	return out
}

// WriteWith is WriteAll in the cluster of a kubeconfig context's clients
// ("" is the current context), or Unreachable when they cannot be made.
func WriteWith(ctx context.Context, clients *live.Clients, contextName string, owned []app.OwnedFreeze, channel string) []Outcome {
	cs, err := clients.For(contextName)
	if err != nil {
		return Unreachable(owned, channel, err)
	}
	return WriteAll(ctx, ClusterOf(cs), owned, channel)
}

// Unreachable are the outcomes of owned when the cluster's clients could
// not be made (err): nothing was written, each says why and gives the
// command.
func Unreachable(owned []app.OwnedFreeze, channel string, err error) []Outcome {
	out := make([]Outcome, 0, len(owned))
	for _, f := range owned {
		out = append(out, failed(outcomeOf(f), Cluster{}, fmt.Errorf("no cluster (%w)", err), f, app.ToolOf(&f.Origin).Edits().Heal, channel))
	}
	return out
}

// outcomeOf is the Outcome of f before anything is written.
func outcomeOf(f app.OwnedFreeze) Outcome {
	return Outcome{App: f.App, Object: f.Origin.Kind + " " + f.Origin.QualifiedName()}
}

// Write makes the live declaration of f.Origin say what the channel
// record says: f.Freeze set (the tool's healing field off, the freeze in
// kdrift.dev/freeze-* annotations, with the field's earlier value and the
// channel), or lifted (the field as it was before the freeze, the
// annotations gone). It never fails the action: an Outcome that is not
// Done says why and gives the kubectl command that does it by hand.
func Write(ctx context.Context, c Cluster, f app.OwnedFreeze, channel string) Outcome {
	o := f.Origin
	out := outcomeOf(f)
	h := app.ToolOf(&o).Edits().Heal
	if h == nil {
		out.Done, out.Message = true, o.Kind+" has no healing field; nothing to write"
		return out
	}
	ri, err := resource(c, &o)
	if err != nil {
		if meta.IsNoMatchError(err) {
			out.Done, out.Message = true, fmt.Sprintf("%s is not served on context %s: %s does not run there, so nothing there heals %s", o.Kind, c.Context, o.Engine, f.App)
			return out
		}
		return failed(out, c, err, f, h, channel)
	}
	for attempt := 1; ; attempt++ {
		obj, err := ri.Get(ctx, o.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			out.Done, out.Message = true, fmt.Sprintf("no live %s %s on context %s: %s does not run %s there, so nothing there heals it", o.Kind, o.QualifiedName(), c.Context, o.Engine, f.App)
			return out
		}
		if err != nil {
			return failed(out, c, err, f, h, channel)
		}
		if f.Freeze == nil && obj.GetAnnotations()[app.AnnotationFreezePrevious] != "" && obj.GetAnnotations()[app.AnnotationFreezeChannel] == "" {
			// The live freeze is main's (Argo CD or Flux applied it from
			// the desired branch): a channel record never lifts it.
			out.Message = fmt.Sprintf("the live %s carries the freeze committed on the desired branch, which a record on the incident channel does not lift: %s still does not heal %s; unfreeze through a pull request", out.Object, o.Engine, f.App)
			return out
		}
		patch, what, err := patchFor(obj, h, f.Freeze, channel)
		if err != nil {
			return failed(out, c, err, f, h, channel)
		}
		if patch == nil {
			out.Done, out.Message = true, what
			return out
		}
		_, err = ri.Patch(ctx, o.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: Manager})
		if apierrors.IsConflict(err) && attempt < maxConflicts {
			continue
		}
		if err != nil {
			return failed(out, c, err, f, h, channel)
		}
		out.Done, out.Message = true, what
		return out
	}
}

// Get reads the live declaration of o.
func Get(ctx context.Context, c Cluster, o *app.Origin) (*unstructured.Unstructured, error) {
	ri, err := resource(c, o)
	if err != nil {
		return nil, err
	}
	return ri.Get(ctx, o.Name, metav1.GetOptions{})
}

// resource is the dynamic client of o's kind in o's namespace.
func resource(c Cluster, o *app.Origin) (dynamic.ResourceInterface, error) {
	var gk schema.GroupKind
	for _, k := range app.ToolOf(o).Kinds() {
		if k.Kind == o.Kind {
			gk = k
		}
	}
	m, err := c.Mapper.RESTMapping(gk)
	if err != nil {
		return nil, err
	}
	return c.Dynamic.Resource(m.Resource).Namespace(o.Namespace), nil
}

// failed is out for a write that did not happen: why, and the command.
func failed(out Outcome, c Cluster, err error, f app.OwnedFreeze, h *app.HealField, channel string) Outcome {
	why := redact.Text(err.Error())
	if apierrors.IsForbidden(err) {
		why = fmt.Sprintf("context %s may not patch %s (%s)", c.Context, out.Object, why)
	}
	verb := "stop"
	if f.Freeze == nil {
		verb = "resume"
	}
	out.Message = fmt.Sprintf("%s was not told to %s healing %s: %s", f.Origin.Engine, verb, f.App, why)
	out.Command = Command(f, h, channel)
	return out
}

// Command is the kubectl command that writes f on the live declaration by
// hand, as Write does when nothing was recorded there (lifting turns the
// healing field back on).
func Command(f app.OwnedFreeze, h *app.HealField, channel string) string {
	o := f.Origin
	body := map[string]any{}
	ann := map[string]any{}
	if f.Freeze != nil {
		for k, v := range annotations(f.Freeze, "", channel) {
			ann[k] = v
		}
		setPath(body, append(append([]string(nil), h.Path...), h.Field), boolOf(h.Off))
	} else {
		for _, k := range []string{app.AnnotationFreezeReason, app.AnnotationFreezeBy, app.AnnotationFreezeAt, app.AnnotationFreezeUntil, app.AnnotationFreezePrevious, app.AnnotationFreezeChannel} {
			ann[k] = nil
		}
		setPath(body, append(append([]string(nil), h.Path...), h.Field), !boolOf(h.Off))
	}
	body["metadata"] = map[string]any{"annotations": ann}
	data, _ := json.Marshal(body)
	return fmt.Sprintf("kubectl patch %s %s -n %s --type merge -p %s", shellWord(strings.ToLower(o.Kind)), shellWord(o.Name), shellWord(o.Namespace), shellQuote(string(data)))
}

// shellWord is s as one shell word: as it is when it holds only
// characters of Kubernetes names, else quoted. Names come from the
// repository, and a person pastes the command into a shell.
func shellWord(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_') {
			return shellQuote(s)
		}
	}
	if s == "" {
		return "''"
	}
	return s
}

// shellQuote single-quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// patchFor is the merge patch that makes obj say what fr says (nil fr:
// lifted), with a line saying what it does; a nil patch when obj already
// says it.
func patchFor(obj *unstructured.Unstructured, h *app.HealField, fr *app.Freeze, channel string) ([]byte, string, error) {
	ann := obj.GetAnnotations()
	prev, recorded := ann[app.AnnotationFreezePrevious]
	fieldPath := append(append([]string(nil), h.Path...), h.Field)
	cur, found, err := unstructured.NestedFieldNoCopy(obj.Object, fieldPath...)
	if err != nil {
		return nil, "", fmt.Errorf("%s of the live %s: %v", strings.Join(fieldPath, "."), obj.GetKind(), err)
	}
	_, blockFound, _ := unstructured.NestedFieldNoCopy(obj.Object, h.Path...)
	field := strings.Join(fieldPath, ".")
	where := obj.GetKind() + " " + obj.GetNamespace() + "/" + obj.GetName()
	body := map[string]any{"metadata": map[string]any{"resourceVersion": obj.GetResourceVersion()}}
	md := body["metadata"].(map[string]any)
	if fr == nil {
		if !recorded {
			return nil, fmt.Sprintf("the live %s carries no kdrift freeze; nothing to lift", where), nil
		}
		drop := map[string]any{}
		for k := range ann {
			if strings.HasPrefix(k, app.FreezeAnnotationPrefix) {
				drop[k] = nil
			}
		}
		md["annotations"] = drop
		what := fmt.Sprintf("lifted kdrift's freeze from the live %s", where)
		switch prev {
		case "true", "false":
			setPath(body, fieldPath, prev == "true")
			what += fmt.Sprintf(": %s is %s again", field, prev)
		case app.FreezePreviousAbsent:
			setPath(body, fieldPath, nil)
			what += fmt.Sprintf(": %s is unset again", field)
		}
		data, err := json.Marshal(body)
		return data, what, err
	}
	if !recorded {
		switch {
		case !blockFound:
			prev = app.FreezePreviousNone
		case !found:
			prev = app.FreezePreviousAbsent
		default:
			b, ok := cur.(bool)
			if !ok {
				return nil, "", fmt.Errorf("%s of the live %s is %v, not true or false", field, where, cur)
			}
			prev = strconv.FormatBool(b)
		}
	}
	want := annotations(fr, prev, channel)
	newAnn := map[string]any{}
	for k, v := range want {
		if ann[k] != v {
			newAnn[k] = v
		}
	}
	if _, ok := want[app.AnnotationFreezeUntil]; !ok {
		if _, had := ann[app.AnnotationFreezeUntil]; had {
			newAnn[app.AnnotationFreezeUntil] = nil
		}
	}
	what := fmt.Sprintf("wrote kdrift's freeze on the live %s", where)
	off := boolOf(h.Off)
	writeField := blockFound && prev != app.FreezePreviousNone && !(found && cur == off)
	if writeField {
		setPath(body, fieldPath, off)
	}
	switch {
	case prev == app.FreezePreviousNone:
		what += fmt.Sprintf(" (%s is absent: it was not healing)", strings.Join(h.Path, "."))
	default:
		what += fmt.Sprintf(": %s %v, as it was %s", field, off, prev)
	}
	if len(newAnn) == 0 && !writeField {
		return nil, fmt.Sprintf("the live %s already carries this freeze", where), nil
	}
	md["annotations"] = newAnn
	data, err := json.Marshal(body)
	return data, what, err
}

// annotations are the freeze annotations of fr, with the healing field's
// earlier value prev (left out when "") and the channel.
func annotations(fr *app.Freeze, prev, channel string) map[string]string {
	out := map[string]string{
		app.AnnotationFreezeReason: fr.Reason,
		app.AnnotationFreezeBy:     fr.By,
		app.AnnotationFreezeAt:     fr.At.UTC().Format(time.RFC3339),
	}
	if fr.Until != nil {
		out[app.AnnotationFreezeUntil] = fr.Until.UTC().Format(time.RFC3339)
	}
	if prev != "" {
		out[app.AnnotationFreezePrevious] = prev
	}
	if channel != "" {
		out[app.AnnotationFreezeChannel] = channel
	}
	return out
}

// setPath sets body's field at path to v, making the maps on the way.
func setPath(body map[string]any, path []string, v any) {
	m := body
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

// boolOf reads a HealField's Off value.
func boolOf(s string) bool { return s == "true" }

// Resumed says whether obj, the live declaration of an app that a freeze
// on the incident channel holds, has its tool healing again: "" when the
// healing field is off, or when the tool was not healing before the
// freeze (no block holding the field). Otherwise one line saying who put
// it back and when ("still heals: the parent flux-system/flux-system
// re-enabled self-heal at 14:02 (field manager kustomize-controller;
// spec.suspend is false …)"), or that kdrift's pause was never written
// there, with the command that writes it for f, the freeze of the
// channel named channel; the caller puts the tool's name before it.
func Resumed(obj *unstructured.Unstructured, f app.OwnedFreeze, channel string) string {
	h := app.ToolOf(&f.Origin).Edits().Heal
	if h == nil {
		return ""
	}
	fieldPath := append(append([]string(nil), h.Path...), h.Field)
	if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, h.Path...); !found {
		return ""
	}
	cur, found, _ := unstructured.NestedFieldNoCopy(obj.Object, fieldPath...)
	if found && cur == boolOf(h.Off) {
		return ""
	}
	field := strings.Join(fieldPath, ".")
	value := fmt.Sprint(cur)
	if !found {
		value = "unset"
	}
	if _, paused := obj.GetAnnotations()[app.AnnotationFreezePrevious]; !paused {
		return fmt.Sprintf("still heals: the freeze is on the incident channel, but its live %s was never paused (%s is %s); pause it: %s", obj.GetKind(), field, value, Command(f, h, channel))
	}
	who := "someone"
	if p := parentOf(obj); p != "" {
		who = "the parent " + p
	}
	manager, at := lastWriter(obj, fieldPath)
	when, by := "", ""
	if !at.IsZero() {
		when = " at " + at.Local().Format("15:04")
	}
	if manager != "" {
		by = "field manager " + manager + "; "
	}
	return fmt.Sprintf("still heals: %s re-enabled self-heal%s (%s%s is %s although the app is frozen)", who, when, by, field, value)
}

// parentOf names what applied obj, from the tracking labels and
// annotations the GitOps tools write ("" when none is there): an Argo CD
// tracking id names its app before the first colon; a pair of labels
// ending in /name and /namespace gives NAMESPACE/NAME.
func parentOf(obj *unstructured.Unstructured) string {
	labels, ann := obj.GetLabels(), obj.GetAnnotations()
	for _, t := range app.Tools {
		tr := t.Tracking()
		for _, k := range tr.Annotations {
			if v := ann[k]; v != "" {
				name, _, _ := strings.Cut(v, ":")
				return name
			}
		}
		for _, k := range tr.Labels {
			if !strings.HasSuffix(k, "/name") || labels[k] == "" {
				continue
			}
			if ns := labels[strings.TrimSuffix(k, "name")+"namespace"]; ns != "" {
				return ns + "/" + labels[k]
			}
			return labels[k]
		}
	}
	return ""
}

// lastWriter is the field manager (other than kdrift's pause) that last
// wrote the field at path, and when, from obj's managedFields.
func lastWriter(obj *unstructured.Unstructured, path []string) (string, time.Time) {
	var manager string
	var at time.Time
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == Manager || mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]any
		if err := json.Unmarshal(mf.FieldsV1.GetRawBytes(), &fields); err != nil {
			continue
		}
		owns := true
		m := fields
		for _, k := range path {
			next, ok := m["f:"+k].(map[string]any)
			if !ok {
				owns = false
				break
			}
			m = next
		}
		if !owns {
			continue
		}
		var t time.Time
		if mf.Time != nil {
			t = mf.Time.Time
		}
		if manager == "" || t.After(at) {
			manager, at = mf.Manager, t
		}
	}
	return manager, at
}
