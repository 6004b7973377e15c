package diff

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// noopDesired is a Deployment as Git has it.
const noopDesired = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: prod
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.example/web:1
        ports:
        - containerPort: 8080
          name: http
        resources:
          requests: {cpu: "0.5", memory: 1024Mi}
      - name: proxy
        image: registry.example/proxy:1
`

// noopLive is that Deployment live after kdrift applied it: defaulted,
// quantities canonical, and another manager's annotation.
const noopLive = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: prod
  resourceVersion: "42"
  labels: {app: web}
  annotations: {deployment.kubernetes.io/revision: "1"}
spec:
  replicas: 2
  revisionHistoryLimit: 10
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.example/web:1
        imagePullPolicy: IfNotPresent
        ports:
        - containerPort: 8080
          name: http
          protocol: TCP
        resources:
          requests: {cpu: 500m, memory: 1Gi}
      - name: proxy
        image: registry.example/proxy:1
      restartPolicy: Always
status:
  replicas: 2
`

// noopFields is kdrift's Apply entry for noopDesired, as the apiserver
// writes it.
const noopFields = `{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{},"f:selector":{},` +
	`"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{` +
	`"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{}}},` +
	`"f:resources":{"f:requests":{"f:cpu":{},"f:memory":{}}}},` +
	`"k:{\"name\":\"proxy\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`

// noopPair returns the desired and live objects, live carrying fields as
// kdrift's Apply entry of apiVersion.
func noopPair(t testing.TB, fields, apiVersion string) (*unstructured.Unstructured, *unstructured.Unstructured) {
	d, l := obj(t, noopDesired), obj(t, noopLive)
	l.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{".":{},"f:deployment.kubernetes.io/revision":{}}}}`)},
		{Manager: "kdrift", Operation: metav1.ManagedFieldsOperationApply, APIVersion: apiVersion, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(fields)},
	})
	return d, l
}

func TestNoOpApply(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fields string
		api    string
		change func(d, l *unstructured.Unstructured)
		want   bool
		why    string
	}{
		{name: "in sync, defaults and quantities aside", want: true},
		{name: "quantity that is another amount", change: func(d, _ *unstructured.Unstructured) {
			setContainer(d, 0, "resources", map[string]any{"requests": map[string]any{"cpu": "0.5", "memory": "1000Mi"}})
		}, why: "differs from live"},
		{name: "quantity spelled as a number", change: func(d, _ *unstructured.Unstructured) {
			setContainer(d, 0, "resources", map[string]any{"requests": map[string]any{"cpu": 0.5, "memory": int64(1073741824)}})
		}, why: "/memory: differs"},
		{name: "protocol spelled out", change: func(d, _ *unstructured.Unstructured) {
			ports := container(d, 0)["ports"].([]any)
			ports[0].(map[string]any)["protocol"] = "TCP"
		}, why: "not owned by kdrift"},
		{name: "replicas changed in Git", change: func(d, _ *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(d.Object, int64(3), "spec", "replicas")
		}, why: "/spec/replicas: differs"},
		{name: "replicas as a float", change: func(d, _ *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(d.Object, float64(2), "spec", "replicas")
		}, want: true},
		{name: "label dropped from Git", change: func(d, _ *unstructured.Unstructured) {
			d.SetLabels(nil)
		}, why: "no longer set"},
		{name: "field added in Git", change: func(d, _ *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(d.Object, int64(5), "spec", "minReadySeconds")
		}, why: "not owned by kdrift"},
		{name: "null in Git", change: func(d, _ *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(d.Object, nil, "spec", "paused")
		}, why: "null"},
		{name: "containers reordered in Git", change: func(d, _ *unstructured.Unstructured) {
			cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
			_ = unstructured.SetNestedSlice(d.Object, []any{cs[1], cs[0]}, "spec", "template", "spec", "containers")
		}, why: "orders"},
		{name: "container named twice in Git", change: func(d, _ *unstructured.Unstructured) {
			cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
			_ = unstructured.SetNestedSlice(d.Object, []any{cs[0], cs[0]}, "spec", "template", "spec", "containers")
		}, why: "names this element twice"},
		{name: "image changed live", change: func(_, l *unstructured.Unstructured) {
			setContainer(l, 1, "image", "registry.example/proxy:2")
		}, why: "/image: differs"},
		{name: "selector owned whole", change: func(_, l *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(l.Object, "x", "spec", "selector", "matchLabels", "extra")
		}, why: "/spec/selector: differs"},
		{name: "entry of another apiVersion", api: "apps/v1beta2", why: "applied it as apps/v1beta2"},
		{name: "no entry of kdrift", fields: "-", why: "no Apply entry"},
		{name: "status in Git is never sent", change: func(d, _ *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(d.Object, int64(9), "status", "replicas")
		}, want: true},
		{name: "being deleted", change: func(_, l *unstructured.Unstructured) {
			now := metav1.Now()
			l.SetDeletionTimestamp(&now)
		}, why: "being deleted"},
		{name: "entry names list elements by index", fields: strings.Replace(noopFields, `"k:{\"name\":\"proxy\"}"`, `"i:1"`, 1), why: "other than by key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields, api := noopFields, "apps/v1"
			if tc.fields != "" && tc.fields != "-" {
				fields = tc.fields
			}
			if tc.api != "" {
				api = tc.api
			}
			d, l := noopPair(t, fields, api)
			if tc.fields == "-" {
				mf := l.GetManagedFields()
				l.SetManagedFields(mf[:1])
			}
			if tc.change != nil {
				tc.change(d, l)
			}
			got, why := NoOpApply(d, l, "kdrift")
			if got != tc.want || !strings.Contains(why, tc.why) {
				t.Fatalf("NoOpApply = %v, %q; want %v and a reason with %q", got, why, tc.want, tc.why)
			}
		})
	}
}

// TestNoOpApplyCustomResourceQuantities: a custom resource's values are
// stored as sent, so a Quantity spelled otherwise than live defers.
func TestNoOpApplyCustomResourceQuantities(t *testing.T) {
	d := obj(t, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: n}\nspec:\n  resources:\n    limits: {memory: 1024Mi}\n")
	l := obj(t, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: n}\nspec:\n  resources:\n    limits: {memory: 1Gi}\n")
	l.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kdrift", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "example.com/v1",
		FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:resources":{"f:limits":{"f:memory":{}}}}}`)}})
	if ok, why := NoOpApply(d, l, "kdrift"); ok {
		t.Fatalf("custom resource quantity 1024Mi against 1Gi judged a no-op (%s)", why)
	}
	if err := unstructured.SetNestedField(d.Object, "1Gi", "spec", "resources", "limits", "memory"); err != nil {
		t.Fatal(err)
	}
	if ok, why := NoOpApply(d, l, "kdrift"); !ok {
		t.Fatalf("equal custom resource deferred: %s", why)
	}
}

// TestNoOpApplyHostileEntry: an entry past the bounds defers at once.
func TestNoOpApplyHostileEntry(t *testing.T) {
	deep := strings.Repeat(`{"f:a":`, 1000) + "{}" + strings.Repeat("}", 1000)
	huge := `{"f:` + strings.Repeat("k", 3<<20) + `":{}}`
	wide := make(map[string]any, 50000)
	for i := range 50000 {
		wide["f:"+strings.Repeat("x", i%64)+string(rune('a'+i%26))+strings.Repeat("y", i/26%100)] = map[string]any{}
	}
	wideJSON, _ := json.Marshal(wide)
	for name, fields := range map[string]string{"deep": deep, "huge": huge, "wide": string(wideJSON), "not json": `{"f:a":`} {
		t.Run(name, func(t *testing.T) {
			d, l := noopPair(t, fields, "apps/v1")
			start := time.Now()
			if ok, _ := NoOpApply(d, l, "kdrift"); ok {
				t.Fatal("hostile entry judged a no-op")
			}
			t.Logf("%s: deferred in %v", name, time.Since(start))
		})
	}
}

// FuzzNoOpApply: whatever the entry and the objects hold, the local
// judgement ends, never panics, and says yes only for matching identity.
func FuzzNoOpApply(f *testing.F) {
	f.Add([]byte(noopFields), []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"prod"},"spec":{"replicas":2}}`), []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"prod"},"spec":{"replicas":2}}`))
	f.Add([]byte(`{"f:spec":{"f:replicas":{}}}`), []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":2}}`), []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":2}}`))
	f.Add([]byte(`{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{}}}}}`), []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"ports":[{"port":80}]}}`), []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"ports":[{"port":80,"protocol":"TCP"}]}}`))
	f.Add([]byte(`{"f:spec":{"f:tags":{"v:\"a\"":{},"v:\"b\"":{}}}}`), []byte(`{"apiVersion":"x.io/v1","kind":"W","metadata":{"name":"w"},"spec":{"tags":["a","b"]}}`), []byte(`{"apiVersion":"x.io/v1","kind":"W","metadata":{"name":"w"},"spec":{"tags":["a","b"]}}`))
	f.Fuzz(func(t *testing.T, fields, desired, liveJSON []byte) {
		d, l := &unstructured.Unstructured{}, &unstructured.Unstructured{}
		if d.UnmarshalJSON(desired) != nil || l.UnmarshalJSON(liveJSON) != nil {
			return
		}
		l.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kdrift", Operation: metav1.ManagedFieldsOperationApply, APIVersion: d.GetAPIVersion(), FieldsV1: metav1.NewFieldsV1(string(fields))}})
		ok, why := NoOpApply(d, l, "kdrift")
		if strings.HasPrefix(why, "managedFields could not be read (") {
			t.Fatalf("the walk panicked: %s", why)
		}
		if ok && (d.GetName() != l.GetName() || d.GetNamespace() != l.GetNamespace() || d.GetKind() != l.GetKind()) {
			t.Fatal("a no-op across identities")
		}
		if again, _ := NoOpApply(d, l, "kdrift"); again != ok {
			t.Fatal("two judgements of the same objects differ")
		}
	})
}

func container(u *unstructured.Unstructured, i int) map[string]any {
	cs, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "template", "spec", "containers")
	return cs.([]any)[i].(map[string]any)
}

func setContainer(u *unstructured.Unstructured, i int, field string, v any) {
	container(u, i)[field] = v
}
