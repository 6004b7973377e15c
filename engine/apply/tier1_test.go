package apply_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/yaml"

	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
)

// tier1Corpus reads the differential test's corpus: testdata/tier1 and
// the demo's own manifests. Numbers decode as kdrift's renderer decodes
// them (integers as int64).
func tier1Corpus(t *testing.T) (crds, objs []*unstructured.Unstructured) {
	t.Helper()
	root, err := enginetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("testdata", "tier1", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	demo, err := filepath.Glob(filepath.Join(root, "internal", "demo", "content", "deploy", "gitops", "base", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 || len(demo) == 0 {
		t.Fatalf("corpus not found: %d testdata files, %d demo files", len(files), len(demo))
	}
	for _, f := range append(files, demo...) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			js, err := yaml.YAMLToJSON(doc)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if string(bytes.TrimSpace(js)) == "null" {
				continue
			}
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(js); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			switch u.GetKind() {
			case "Kustomization":
			case "CustomResourceDefinition":
				crds = append(crds, u)
			default:
				objs = append(objs, u)
			}
		}
	}
	return crds, objs
}

// tier1Scenario changes one object after kdrift applied it: live by
// another manager, or desired (a commit). Either returns false when it
// does not fit the object.
type tier1Scenario struct {
	name    string
	live    func(t *testing.T, ri dynamic.ResourceInterface, lv *unstructured.Unstructured) bool
	desired func(d *unstructured.Unstructured) bool
}

// tier1Verdict is what the test learnt of one object in one scenario.
type tier1Verdict struct {
	scenario, ref string
	local         bool
	why           string
	changed       bool
}

// TestTier1NeverSaysSyncedWhenDryRunChanges is the differential test of
// the local comparison: each object of the corpus is applied as kdrift
// applies it, changed the way people and controllers change objects (or
// changed in Git), then judged by diff.NoOpApply and by a real server-side
// dry-run. Whenever the local judgement says no-op, the dry-run must
// answer with live's values and both comparisons must agree; on the
// untouched corpus the local judgement must decide nearly every object.
func TestTier1NeverSaysSyncedWhenDryRunChanges(t *testing.T) {
	ctx := context.Background()
	dyn := enginetest.Dynamic(t)
	mapper := newApplierMapper(t)
	a := apply.New(dyn, mapper, apply.Options{})
	crds, objs := tier1Corpus(t)
	var crdRefs []*unstructured.Unstructured
	for _, c := range crds {
		c = apply.Track(c, "tier1", "repo-tier1")
		if _, err := a.Apply(ctx, c, false); err != nil {
			t.Fatal(err)
		}
		crdRefs = append(crdRefs, c)
		name := c.GetName()
		t.Cleanup(func() {
			_ = dyn.Resource(crdGVR).Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	waitServed(t, mapper, objs)

	var mu sync.Mutex
	var verdicts []tier1Verdict
	// The group returns when its parallel scenarios have all ended.
	t.Run("scenarios", func(t *testing.T) {
		for _, sc := range tier1Scenarios() {
			t.Run(sc.name, func(t *testing.T) {
				t.Parallel()
				ns := "tier1-" + sc.name
				createNamespace(t, ns)
				for _, o := range objs {
					v, ok := judgeOne(t, ctx, a, dyn, mapper, ns, o, sc)
					if ok {
						mu.Lock()
						verdicts = append(verdicts, v)
						mu.Unlock()
					}
				}
			})
		}
	})
	t.Run("crds", func(t *testing.T) {
		for _, c := range crdRefs {
			v, ok := judgeOne(t, ctx, a, dyn, mapper, "", c, tier1Scenario{name: "in-sync"})
			if ok {
				mu.Lock()
				verdicts = append(verdicts, v)
				mu.Unlock()
			}
		}
	})
	if t.Failed() {
		return
	}
	// What the local tier decided, scenario by scenario.
	type tally struct{ local, total, changed int }
	by := map[string]*tally{}
	var names []string
	for _, v := range verdicts {
		if by[v.scenario] == nil {
			by[v.scenario] = &tally{}
			names = append(names, v.scenario)
		}
		tl := by[v.scenario]
		tl.total++
		if v.local {
			tl.local++
		}
		if v.changed {
			tl.changed++
		}
		if v.scenario == "in-sync" && !v.local {
			t.Logf("in sync, deferred to the dry-run: %s: %s", v.ref, v.why)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		tl := by[n]
		t.Logf("%-28s %3d objects, %3d decided locally, %3d changed by the dry-run", n, tl.total, tl.local, tl.changed)
	}
	in := by["in-sync"]
	if in == nil || in.total < 25 {
		t.Fatalf("in-sync scenario judged %v objects, want the whole corpus", in)
	}
	// The corpus is heavy on what the local tier cannot know without the
	// schema's defaults (defaults inside atomic lists and structs, a
	// Secret's stringData): those defer, nothing else may.
	if deferred := in.total - in.local; deferred*5 > in.total {
		t.Errorf("on the in-sync corpus %d of %d objects deferred to the dry-run, want at most 20%%", deferred, in.total)
	}
}

// judgeOne applies o as kdrift into ns, runs the scenario, and compares
// the two tiers' verdicts. ok is false when the scenario does not fit o.
func judgeOne(t *testing.T, ctx context.Context, a *apply.Applier, dyn dynamic.Interface, mapper meta.RESTMapper, ns string, o *unstructured.Unstructured, sc tier1Scenario) (tier1Verdict, bool) {
	t.Helper()
	d := o.DeepCopy()
	if ns != "" {
		d.SetNamespace(ns)
	}
	d = apply.Track(d, "tier1", "repo-tier1")
	ref := apply.RefOf(d).String()
	if _, err := a.Apply(ctx, d, false); err != nil {
		t.Fatalf("%s: %v", ref, err)
	}
	ri := resourceFor(t, dyn, mapper, d)
	lv, err := ri.Get(ctx, d.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.live != nil {
		if !sc.live(t, ri, lv.DeepCopy()) {
			return tier1Verdict{}, false
		}
		if lv, err = ri.Get(ctx, d.GetName(), metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if sc.desired != nil && !sc.desired(d) {
		return tier1Verdict{}, false
	}
	local, why := diff.NoOpApply(d, lv, live.FieldManager)
	body, err := live.ApplyBody(d)
	if err != nil {
		t.Fatal(err)
	}
	force := true
	dry, dryErr := ri.Patch(ctx, d.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, Force: &force, FieldManager: live.FieldManager})
	opts := diff.DefaultOptions()
	changed := dryErr != nil || !reflect.DeepEqual(diff.Normalize(dry, opts).Object, diff.Normalize(lv, opts).Object)
	if local && changed {
		t.Errorf("%s (%s): FALSE SYNCED: the local tier says applying changes nothing, the dry-run says otherwise (error %v)\ndesired: %s\nlive: %s\ndry-run: %s",
			ref, sc.name, dryErr, dump(d), dump(lv), dump(dry))
	}
	// The engine judges the object as its informer caches keep it: that
	// copy must get the same verdicts as the object read whole.
	cached := live.Cached(lv, opts.IgnoredAnnotations)
	if cachedLocal, cachedWhy := diff.NoOpApply(d, cached, live.FieldManager); cachedLocal != local {
		t.Errorf("%s (%s): the local tier says %v (%s) on the object read whole, %v (%s) on the cached one", ref, sc.name, local, why, cachedLocal, cachedWhy)
	}
	if dryErr == nil {
		whole := diff.Compare(diff.Input{Desired: d, DryRun: dry, Live: lv.DeepCopy(), Options: opts})
		fromCache := diff.Compare(diff.Input{Desired: d, DryRun: dry, Live: cached.DeepCopy(), Options: opts})
		if whole.Status != fromCache.Status || !reflect.DeepEqual(whole.Fields, fromCache.Fields) {
			t.Errorf("%s (%s): the dry-run's comparison differs on the cached object: whole %s %v, cached %s %v", ref, sc.name, whole.Status, whole.Fields, fromCache.Status, fromCache.Fields)
		}
	}
	if local && !changed {
		byDry := diff.Compare(diff.Input{Desired: d, DryRun: dry, Live: lv.DeepCopy(), Options: opts})
		lc := lv.DeepCopy()
		byLocal := diff.Compare(diff.Input{Desired: d, DryRun: lc, Live: lc, Options: opts})
		if byDry.Status != byLocal.Status || !reflect.DeepEqual(byDry.Fields, byLocal.Fields) {
			t.Errorf("%s (%s): the comparisons differ: dry-run %s %v, local %s %v", ref, sc.name, byDry.Status, byDry.Fields, byLocal.Status, byLocal.Fields)
		}
		cc := cached.DeepCopy()
		byCache := diff.Compare(diff.Input{Desired: d, DryRun: cc, Live: cc, Options: opts})
		if byCache.Status != byLocal.Status || !reflect.DeepEqual(byCache.Fields, byLocal.Fields) || byCache.Health != byLocal.Health {
			t.Errorf("%s (%s): the local comparison differs on the cached object: whole %s %s %v, cached %s %s %v", ref, sc.name, byLocal.Status, byLocal.Health, byLocal.Fields, byCache.Status, byCache.Health, byCache.Fields)
		}
		if byLocal.Status == status.ResourceOutOfSync && sc.name == "in-sync" {
			t.Errorf("%s: in sync but compared %s: %v", ref, byLocal.Status, byLocal.Fields)
		}
	}
	return tier1Verdict{scenario: sc.name, ref: ref, local: local, why: why, changed: changed}, true
}

func dump(u *unstructured.Unstructured) string {
	if u == nil {
		return "<none>"
	}
	c := u.DeepCopy()
	unstructured.RemoveNestedField(c.Object, "metadata", "managedFields")
	b, _ := c.MarshalJSON()
	mf, _ := yaml.Marshal(u.GetManagedFields())
	return string(b) + "\nmanagedFields:\n" + string(mf)
}

// tier1Scenarios are the changes the differential test makes.
func tier1Scenarios() []tier1Scenario {
	return []tier1Scenario{
		{name: "in-sync"},
		{name: "scale", live: func(t *testing.T, ri dynamic.ResourceInterface, lv *unstructured.Unstructured) bool {
			n, ok, _ := unstructured.NestedInt64(lv.Object, "spec", "replicas")
			if !ok || lv.GetKind() == "HorizontalPodAutoscaler" {
				return false
			}
			_, err := ri.Patch(context.Background(), lv.GetName(), types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n+2), metav1.PatchOptions{FieldManager: "kubectl-scale"}, "scale")
			return mutated(t, lv, "scale", err)
		}},
		{name: "image", live: edit("kubectl-edit", func(lv *unstructured.Unstructured) bool {
			return withContainers(lv, func(cs []any) []any {
				c := cs[0].(map[string]any)
				c["image"] = c["image"].(string) + "-patched"
				return cs
			})
		})},
		{name: "container-added", live: edit("kubectl-edit", func(lv *unstructured.Unstructured) bool {
			return withContainers(lv, func(cs []any) []any {
				return append(cs, map[string]any{"name": "debug", "image": "registry.example/debug:1"})
			})
		})},
		{name: "label-added", live: edit("kubectl-label", func(lv *unstructured.Unstructured) bool {
			l := lv.GetLabels()
			if l == nil {
				l = map[string]string{}
			}
			l["extra"] = "by-hand"
			lv.SetLabels(l)
			return true
		})},
		{name: "annotation-by-controller", live: edit("some-controller", func(lv *unstructured.Unstructured) bool {
			ann := lv.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann["controller.example/seen"] = "2026-12-06T00:00:00Z"
			lv.SetAnnotations(ann)
			return true
		})},
		{name: "kubectl-last-applied", live: edit("kubectl-client-side-apply", func(lv *unstructured.Unstructured) bool {
			ann := lv.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			if _, has := ann[live.LastAppliedAnnotation]; has {
				return false
			}
			body, err := live.ApplyBody(lv)
			if err != nil {
				return false
			}
			ann[live.LastAppliedAnnotation] = string(body)
			lv.SetAnnotations(ann)
			return true
		})},
		{name: "tracking-label-removed", live: edit("kubectl-edit", func(lv *unstructured.Unstructured) bool {
			l := lv.GetLabels()
			delete(l, apply.LabelManagedBy)
			lv.SetLabels(l)
			return true
		})},
		{name: "port-protocol", live: edit("kubectl-edit", func(lv *unstructured.Unstructured) bool {
			return withFirstPort(lv, func(p map[string]any) { p["protocol"] = "SCTP" })
		})},
		{name: "quantity-respelled", live: edit("kubectl-edit", func(lv *unstructured.Unstructured) bool {
			return withQuantities(lv, func(q resource.Quantity) string { return fmt.Sprintf("%dm", q.MilliValue()) })
		})},
		{name: "quantity-changed", live: edit("kubectl-edit", func(lv *unstructured.Unstructured) bool {
			return withQuantities(lv, func(q resource.Quantity) string { return fmt.Sprintf("%dm", 2*q.MilliValue()) })
		})},
		{name: "owned-field-removed", live: func(t *testing.T, ri dynamic.ResourceInterface, lv *unstructured.Unstructured) bool {
			return tryOwnedLeaves(t, ri, lv, func(obj map[string]any, p fieldpath.Path) bool { return removeAt(obj, p) })
		}},
		{name: "owned-value-changed", live: func(t *testing.T, ri dynamic.ResourceInterface, lv *unstructured.Unstructured) bool {
			return tryOwnedLeaves(t, ri, lv, changeAt)
		}},
		{name: "git-annotation-added", desired: func(d *unstructured.Unstructured) bool {
			ann := d.GetAnnotations()
			ann["git.example/commit"] = "abc123"
			d.SetAnnotations(ann)
			return true
		}},
		{name: "git-replicas-changed", desired: func(d *unstructured.Unstructured) bool {
			n, ok, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
			if !ok {
				return false
			}
			return unstructured.SetNestedField(d.Object, n+1, "spec", "replicas") == nil
		}},
		{name: "git-field-dropped", desired: func(d *unstructured.Unstructured) bool {
			for _, f := range [][]string{{"spec", "replicas"}, {"data"}, {"stringData"}, {"spec", "ports"}, {"spec", "template", "spec", "tolerations"}, {"spec", "tags"}, {"rules"}} {
				if _, ok, _ := unstructured.NestedFieldNoCopy(d.Object, f...); ok {
					unstructured.RemoveNestedField(d.Object, f...)
					return true
				}
			}
			return false
		}},
		{name: "git-quantity-respelled", desired: func(d *unstructured.Unstructured) bool {
			return withQuantities(d, func(q resource.Quantity) string {
				if q.MilliValue()%1000 == 0 {
					return fmt.Sprintf("%d", q.Value())
				}
				return fmt.Sprintf("%dm", q.MilliValue())
			})
		}},
		{name: "git-protocol-spelled", desired: func(d *unstructured.Unstructured) bool {
			return withFirstPort(d, func(p map[string]any) {
				if _, ok := p["protocol"]; ok {
					delete(p, "protocol")
				} else {
					p["protocol"] = "TCP"
				}
			})
		}},
		{name: "git-protocol-changed", desired: func(d *unstructured.Unstructured) bool {
			return withFirstPort(d, func(p map[string]any) { p["protocol"] = "SCTP" })
		}},
	}
}

// edit is a live change made with an Update by manager, the way
// kubectl edit and most controllers write.
func edit(manager string, change func(lv *unstructured.Unstructured) bool) func(*testing.T, dynamic.ResourceInterface, *unstructured.Unstructured) bool {
	return func(t *testing.T, ri dynamic.ResourceInterface, lv *unstructured.Unstructured) bool {
		if !change(lv) {
			return false
		}
		_, err := ri.Update(context.Background(), lv, metav1.UpdateOptions{FieldManager: manager})
		return mutated(t, lv, manager, err)
	}
}

// mutated reports whether a live change was made; the apiserver refusing
// one (an invalid value for this kind) makes the scenario not fit, said
// in the log.
func mutated(t *testing.T, lv *unstructured.Unstructured, what string, err error) bool {
	if err == nil {
		return true
	}
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
		t.Logf("%s/%s: change by %s refused, scenario skipped for it: %v", lv.GetKind(), lv.GetName(), what, err)
		return false
	}
	t.Fatalf("%s/%s: change by %s: %v", lv.GetKind(), lv.GetName(), what, err)
	return false
}

// tryOwnedLeaves makes change at kdrift's owned leaves under spec or data
// in turn, until the apiserver takes one.
func tryOwnedLeaves(t *testing.T, ri dynamic.ResourceInterface, lv *unstructured.Unstructured, change func(map[string]any, fieldpath.Path) bool) bool {
	var leaves []fieldpath.Path
	for _, e := range lv.GetManagedFields() {
		if e.Manager != live.FieldManager || e.Operation != metav1.ManagedFieldsOperationApply {
			continue
		}
		s := &fieldpath.Set{}
		if err := s.FromJSON(bytes.NewReader(e.FieldsV1.GetRawBytes())); err != nil {
			t.Fatal(err)
		}
		s.Leaves().Iterate(func(p fieldpath.Path) {
			if len(p) > 1 && p[0].FieldName != nil && (*p[0].FieldName == "spec" || *p[0].FieldName == "data" || *p[0].FieldName == "rules") {
				leaves = append(leaves, p.Copy())
			}
		})
	}
	for i := len(leaves) - 1; i >= 0 && i >= len(leaves)-6; i-- {
		c := lv.DeepCopy()
		if !change(c.Object, leaves[i]) {
			continue
		}
		_, err := ri.Update(context.Background(), c, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		if err == nil {
			return true
		}
		if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
			t.Fatalf("%s/%s: %v", lv.GetKind(), lv.GetName(), err)
		}
	}
	return false
}

// parentAt resolves p but its last element in obj.
func parentAt(obj map[string]any, p fieldpath.Path) (any, bool) {
	var cur any = obj
	for _, pe := range p[:len(p)-1] {
		next, ok := step(cur, pe)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

func step(cur any, pe fieldpath.PathElement) (any, bool) {
	switch {
	case pe.FieldName != nil:
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		v, ok := m[*pe.FieldName]
		return v, ok
	default:
		l, ok := cur.([]any)
		if !ok {
			return nil, false
		}
		j := diff.FindElement(l, pe)
		if j < 0 {
			return nil, false
		}
		return l[j], true
	}
}

// removeAt deletes the field a leaf path names (a map field only).
func removeAt(obj map[string]any, p fieldpath.Path) bool {
	parent, ok := parentAt(obj, p)
	last := p[len(p)-1]
	m, isMap := parent.(map[string]any)
	if !ok || !isMap || last.FieldName == nil {
		return false
	}
	if _, ok := m[*last.FieldName]; !ok {
		return false
	}
	delete(m, *last.FieldName)
	return true
}

// changeAt changes the scalar a leaf path names.
func changeAt(obj map[string]any, p fieldpath.Path) bool {
	parent, ok := parentAt(obj, p)
	last := p[len(p)-1]
	m, isMap := parent.(map[string]any)
	if !ok || !isMap || last.FieldName == nil {
		return false
	}
	switch v := m[*last.FieldName].(type) {
	case string:
		m[*last.FieldName] = v + "x"
	case int64:
		m[*last.FieldName] = v + 1
	case float64:
		m[*last.FieldName] = v + 1
	case bool:
		m[*last.FieldName] = !v
	default:
		return false
	}
	return true
}

// podSpec finds the pod spec of a workload or Pod.
func podSpec(u *unstructured.Unstructured) map[string]any {
	for _, p := range [][]string{{"spec", "template", "spec"}, {"spec", "jobTemplate", "spec", "template", "spec"}} {
		if v, ok, _ := unstructured.NestedFieldNoCopy(u.Object, p...); ok {
			if m, ok := v.(map[string]any); ok {
				return m
			}
		}
	}
	return nil
}

func withContainers(u *unstructured.Unstructured, f func([]any) []any) bool {
	ps := podSpec(u)
	if ps == nil {
		return false
	}
	cs, ok := ps["containers"].([]any)
	if !ok || len(cs) == 0 {
		return false
	}
	ps["containers"] = f(cs)
	return true
}

// withFirstPort changes the first port of a Service or of a workload's
// first container.
func withFirstPort(u *unstructured.Unstructured, f func(map[string]any)) bool {
	var ports []any
	if u.GetKind() == "Service" {
		ports, _, _ = unstructured.NestedSlice(u.Object, "spec", "ports")
		if len(ports) == 0 {
			return false
		}
		f(ports[0].(map[string]any))
		return unstructured.SetNestedSlice(u.Object, ports, "spec", "ports") == nil
	}
	return withContainers(u, func(cs []any) []any {
		c := cs[0].(map[string]any)
		ps, _ := c["ports"].([]any)
		if len(ps) == 0 {
			return cs
		}
		f(ps[0].(map[string]any))
		ports = ps
		return cs
	}) && ports != nil
}

// withQuantities respells every Quantity under resources.limits and
// resources.requests, or a PersistentVolumeClaim's or ResourceQuota's.
func withQuantities(u *unstructured.Unstructured, spell func(resource.Quantity) string) bool {
	found := false
	var walk func(v any, path []string)
	walk = func(v any, path []string) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				n := len(path)
				isQ := (n >= 2 && path[n-2] == "resources" && (path[n-1] == "limits" || path[n-1] == "requests")) ||
					(u.GetKind() == "ResourceQuota" && n == 2 && path[1] == "hard") ||
					(u.GetKind() == "LimitRange" && n == 4 && path[1] == "limits" && path[3] != "type")
				if isQ {
					q, err := resource.ParseQuantity(fmt.Sprint(c))
					if err == nil {
						x[k] = spell(q)
						found = true
					}
					continue
				}
				walk(c, append(path, k))
			}
		case []any:
			for _, c := range x {
				walk(c, append(path, "[]"))
			}
		}
	}
	walk(u.Object, nil)
	return found
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func resourceFor(t *testing.T, dyn dynamic.Interface, mapper meta.RESTMapper, u *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	gvk := u.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatal(err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return dyn.Resource(m.Resource).Namespace(u.GetNamespace())
	}
	return dyn.Resource(m.Resource)
}

// waitServed waits until every kind of objs is served (a CRD of the
// corpus was just established).
func waitServed(t *testing.T, mapper meta.ResettableRESTMapper, objs []*unstructured.Unstructured) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		for {
			if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("kind %s not served within 60s", gvk)
			}
			mapper.Reset()
			time.Sleep(200 * time.Millisecond)
		}
	}
}

func createNamespace(t *testing.T, ns string) {
	t.Helper()
	cs := enginetest.Clientset(t)
	_, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
}
