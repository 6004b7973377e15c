package live_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/status"
)

// realApp is a small but real-world app: what people keep in Git, with
// none of the fields the apiserver defaults or allocates.
const realApp = `
apiVersion: v1
kind: ConfigMap
metadata: {name: web-config, namespace: NS}
data:
  LOG_LEVEL: info
  nginx.conf: |
    server {
      listen 8080;
    }
---
apiVersion: v1
kind: ConfigMap
metadata: {name: worker-config, namespace: NS}
data: {QUEUE: render, CONCURRENCY: "4"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: NS, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {prometheus.io/scrape: "true"}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports:
        - {name: http, containerPort: 8080}
        envFrom:
        - configMapRef: {name: web-config}
        readinessProbe:
          httpGet: {path: /healthz, port: http}
        resources:
          requests: {cpu: 100m, memory: 128Mi}
          limits: {memory: 256Mi}
        volumeMounts:
        - {name: conf, mountPath: /etc/nginx/conf.d}
      volumes:
      - name: conf
        configMap: {name: web-config}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: worker, namespace: NS}
spec:
  selector: {matchLabels: {app: worker}}
  strategy: {type: Recreate}
  template:
    metadata: {labels: {app: worker}}
    spec:
      serviceAccountName: default
      containers:
      - name: worker
        image: registry.example/worker:2.3.1
        args: [--queue, render, --verbose]
        env:
        - {name: QUEUE, valueFrom: {configMapKeyRef: {name: worker-config, key: QUEUE}}}
        - name: POD_NAME
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        resources:
          requests: {cpu: "0.5", memory: 1Gi}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: NS}
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: http}
---
apiVersion: v1
kind: Service
metadata: {name: web-nodeport, namespace: NS}
spec:
  type: NodePort
  selector: {app: web}
  ports:
  - {port: 8080}
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: NS}
spec:
  clusterIP: None
  selector: {app: db}
  ports:
  - {name: pg, port: 5432}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
  namespace: NS
  annotations: {nginx.ingress.kubernetes.io/proxy-body-size: 10m}
spec:
  ingressClassName: nginx
  tls:
  - hosts: [web.example.com]
    secretName: web-tls
  rules:
  - host: web.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: web
            port: {name: http}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: NS}
spec:
  serviceName: db
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: postgres
        image: postgres:17
        ports:
        - {name: pg, containerPort: 5432}
        volumeMounts:
        - {name: data, mountPath: /var/lib/postgresql/data}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources:
        requests: {storage: 1Gi}
`

// renderApp splits realApp into objects in namespace ns, with kdrift's
// tracking label and annotation as the render step adds them.
func renderApp(t testing.TB, ns string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(strings.ReplaceAll(realApp, "NS", ns), "\n---\n") {
		o := decode(t, doc)
		labels := o.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[live.TrackingLabel] = live.TrackingValue
		o.SetLabels(labels)
		ann := o.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[live.AppAnnotation] = "real-app"
		o.SetAnnotations(ann)
		out = append(out, o)
	}
	return out
}

// TestFreshlySyncedAppIsSynced: right after a real sync, and after the
// controller-manager has written status, revisions and PVCs, every object
// compares Synced with zero fields.
func TestFreshlySyncedAppIsSynced(t *testing.T) {
	cs := clientSet(t)
	ns := namespace(t, cs)
	objs := renderApp(t, ns)
	for _, o := range objs {
		applyAs(t, cs, o, live.FieldManager)
	}
	waitFor(t, "the controller-manager to roll out Deployment "+ns+"/web", func() bool {
		d, err := cs.Get(context.Background(), status.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: "web"})
		return err == nil && d != nil && d.GetAnnotations()["deployment.kubernetes.io/revision"] != ""
	})
	waitFor(t, "the controller-manager to observe StatefulSet "+ns+"/db", func() bool {
		s, err := cs.Get(context.Background(), status.ObjectRef{Group: "apps", Version: "v1", Kind: "StatefulSet", Namespace: ns, Name: "db"})
		if err != nil || s == nil {
			return false
		}
		og, ok, err := unstructured.NestedInt64(s.Object, "status", "observedGeneration")
		return err == nil && ok && og >= 1
	})
	for _, o := range objs {
		r := compare(t, cs, o)
		if r.Status != status.ResourceSynced || len(r.Fields) != 0 {
			t.Errorf("%s: %s", live.RefOf(o), describe(r))
		}
	}
}

// waitFor polls cond every 200ms for at most a minute: a bound against a
// hang, not a speed target.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// BenchmarkCompareRealApp compares the real app's 10 objects plus 10
// more ConfigMaps (20 in all) from dry-run results and live objects read
// once from the real apiserver; only the pure Compare is timed.
func BenchmarkCompareRealApp(b *testing.B) {
	cs := clientSet(b)
	ctx := context.Background()
	ns := fmt.Sprintf("bench-%d", time.Now().UnixNano()%100000)
	nsObj := decode(b, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+"}")
	applyAs(b, cs, nsObj, live.FieldManager)
	objs := renderApp(b, ns)
	for i := 0; len(objs) < 20; i++ {
		objs = append(objs, decode(b, fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: extra-%d, namespace: %s}, data: {a: "1", b: "2"}}`, i, ns)))
	}
	inputs := make([]diff.Input, 0, len(objs))
	for _, o := range objs {
		applyAs(b, cs, o, live.FieldManager)
	}
	for _, o := range objs {
		l, err := cs.Get(ctx, live.RefOf(o))
		if err != nil {
			b.Fatal(err)
		}
		d, err := cs.DryRunApply(ctx, o)
		if err != nil {
			b.Fatal(err)
		}
		inputs = append(inputs, diff.Input{Desired: o, DryRun: d, Live: l, Options: diff.DefaultOptions()})
	}
	b.ResetTimer()
	for b.Loop() {
		for _, in := range inputs {
			if r := diff.Compare(in); r.Status == status.ResourceError {
				b.Fatal(r.Message)
			}
		}
	}
}
