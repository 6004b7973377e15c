package diff

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
)

const desiredDeploy = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: render
  namespace: prod
  labels: {app.kubernetes.io/managed-by: kdrift}
  annotations: {kdrift.dev/app: render-prod}
spec:
  replicas: 3
  selector: {matchLabels: {app: render}}
  template:
    metadata: {labels: {app: render}}
    spec:
      containers:
      - name: render
        image: render:1.0
        env:
        - {name: MODE, value: prod}
`

// liveDeploy is desiredDeploy as the apiserver stores it: defaulted, with
// bookkeeping; REPLICAS, EXTRAENV and MANAGED are filled per case.
const liveDeploy = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: render
  namespace: prod
  uid: 1b2c
  resourceVersion: "RV"
  generation: 4
  creationTimestamp: "2026-12-01T10:00:00Z"
  labels: {app.kubernetes.io/managed-by: kdrift}
  annotations: {kdrift.dev/app: render-prod, deployment.kubernetes.io/revision: "3"}
  managedFields:
  - manager: kdrift
    operation: Apply
    apiVersion: apps/v1
    time: "2026-12-01T10:00:00Z"
    fieldsType: FieldsV1
    fieldsV1: {"f:metadata":{"f:annotations":{"f:kdrift.dev/app":{}},"f:labels":{"f:app.kubernetes.io/managed-by":{}}},"f:spec":{KDRIFTREPLICAS"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"render\"}":{".":{},"f:env":{"k:{\"name\":\"MODE\"}":{".":{},"f:name":{},"f:value":{}}},"f:image":{},"f:name":{}}}}}}}
  - manager: kube-controller-manager
    operation: Update
    apiVersion: apps/v1
    subresource: status
    time: "2026-12-01T10:00:05Z"
    fieldsType: FieldsV1
    fieldsV1: {"f:status":{"f:replicas":{}}}
MANAGED
spec:
  replicas: REPLICAS
  progressDeadlineSeconds: 600
  revisionHistoryLimit: 10
  selector: {matchLabels: {app: render}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%, maxUnavailable: 25%}}
  template:
    metadata: {creationTimestamp: null, labels: {app: render}}
    spec:
      containers:
      - name: render
        image: render:1.0
        imagePullPolicy: IfNotPresent
        terminationMessagePath: /dev/termination-log
        env:
        - {name: MODE, value: prod}
EXTRAENV
      restartPolicy: Always
      dnsPolicy: ClusterFirst
status:
  replicas: 3
  updatedReplicas: 3
  availableReplicas: 3
  observedGeneration: 4
`

func liveWith(t testing.TB, rv, replicas, kdriftReplicas, managed, extraEnv string) string {
	t.Helper()
	r := strings.NewReplacer("RV", rv, "REPLICAS", replicas, "KDRIFTREPLICAS", kdriftReplicas, "MANAGED", managed, "EXTRAENV", extraEnv)
	return r.Replace(liveDeploy)
}

const scaleEntry = `  - manager: kubectl
    operation: Update
    apiVersion: apps/v1
    subresource: scale
    fieldsType: FieldsV1
    fieldsV1: {"f:spec":{"f:replicas":{}}}`

const hpaEntry = `  - manager: horizontal-pod-autoscaler
    operation: Update
    apiVersion: apps/v1
    subresource: scale
    time: "2026-12-02T11:00:00Z"
    fieldsType: FieldsV1
    fieldsV1: {"f:spec":{"f:replicas":{}}}`

const editEnvEntry = `  - manager: kubectl-edit
    operation: Update
    apiVersion: apps/v1
    time: "2026-12-02T15:00:00Z"
    fieldsType: FieldsV1
    fieldsV1: {"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"render\"}":{"f:env":{"k:{\"name\":\"DEBUG\"}":{".":{},"f:name":{},"f:value":{}}}}}}}}}`

const debugEnv = `        - {name: DEBUG, value: "1"}`

func TestCompareDeployment(t *testing.T) {
	t.Parallel()
	type want struct {
		status  status.Resource
		fields  []string // "path class extra ignored"
		drifted int
	}
	cases := []struct {
		name   string
		live   string
		dryRun string
		ignore []app.IgnoreRule
		noDry  bool
		want   want
	}{{
		name:   "synced: defaults, status and bookkeeping are not drift",
		live:   liveWith(t, "100", "3", `"f:replicas":{},`, "", ""),
		dryRun: liveWith(t, "101", "3", `"f:replicas":{},`, "", ""),
		want:   want{status: status.ResourceSynced},
	}, {
		name:   "kubectl scale is person drift on /spec/replicas",
		live:   liveWith(t, "100", "6", "", scaleEntry, ""),
		dryRun: liveWith(t, "101", "3", `"f:replicas":{},`, "", ""),
		want:   want{status: status.ResourceOutOfSync, fields: []string{"/spec/replicas person"}, drifted: 1},
	}, {
		name:   "ignored by pointer",
		live:   liveWith(t, "100", "6", "", scaleEntry, ""),
		dryRun: liveWith(t, "101", "3", `"f:replicas":{},`, "", ""),
		ignore: []app.IgnoreRule{{Group: "apps", Kind: "Deployment", Name: "render", JSONPointers: []string{"/spec/replicas"}}},
		want:   want{status: status.ResourceIgnored, fields: []string{"/spec/replicas person ignored"}},
	}, {
		name:   "ignored by manager",
		live:   liveWith(t, "100", "6", "", scaleEntry, ""),
		dryRun: liveWith(t, "101", "3", `"f:replicas":{},`, "", ""),
		ignore: []app.IgnoreRule{{ManagedFieldsManagers: []string{"kubectl"}}},
		want:   want{status: status.ResourceIgnored, fields: []string{"/spec/replicas person ignored"}},
	}, {
		name:   "a rule for another name does not apply",
		live:   liveWith(t, "100", "6", "", scaleEntry, ""),
		dryRun: liveWith(t, "101", "3", `"f:replicas":{},`, "", ""),
		ignore: []app.IgnoreRule{{Kind: "Deployment", Name: "other", JSONPointers: []string{"/spec/replicas"}}, {Namespace: "dev", ManagedFieldsManagers: []string{"kubectl"}}},
		want:   want{status: status.ResourceOutOfSync, fields: []string{"/spec/replicas person"}, drifted: 1},
	}, {
		name:   "env var added with kubectl edit is extra person drift although the dry-run keeps it",
		live:   liveWith(t, "100", "3", `"f:replicas":{},`, editEnvEntry, debugEnv),
		dryRun: liveWith(t, "101", "3", `"f:replicas":{},`, editEnvEntry, debugEnv),
		want:   want{status: status.ResourceOutOfSync, fields: []string{"/spec/template/spec/containers/0/env/1 person extra"}, drifted: 1},
	}, {
		name:   "HPA-owned replicas Git does not declare are listed, not drift",
		live:   liveWith(t, "100", "7", "", hpaEntry, ""),
		dryRun: liveWith(t, "101", "7", "", hpaEntry, ""),
		want:   want{status: status.ResourceSynced, fields: []string{"/spec/replicas controller extra"}},
	}, {
		name:  "without a dry-run, Git is merged over live on the client",
		live:  liveWith(t, "100", "6", "", scaleEntry, ""),
		noDry: true,
		want:  want{status: status.ResourceOutOfSync, fields: []string{"/spec/replicas person"}, drifted: 1},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			desired := obj(t, desiredDeploy)
			if tc.name == "HPA-owned replicas Git does not declare are listed, not drift" {
				delete(desired.Object["spec"].(map[string]any), "replicas")
			}
			in := Input{Desired: desired, Live: obj(t, tc.live), Ignore: tc.ignore, Options: DefaultOptions()}
			if !tc.noDry {
				in.DryRun = obj(t, tc.dryRun)
			}
			got := Compare(in)
			if got.Status != tc.want.status {
				t.Errorf("status = %s, want %s; fields %+v", got.Status, tc.want.status, got.Fields)
			}
			var fields []string
			for _, f := range got.Fields {
				s := f.Path + " " + string(f.Class)
				if f.Extra {
					s += " extra"
				}
				if f.Ignored {
					s += " ignored"
				}
				fields = append(fields, s)
			}
			if strings.Join(fields, ",") != strings.Join(tc.want.fields, ",") {
				t.Errorf("fields = %q, want %q", fields, tc.want.fields)
			}
			if got.Drifted() != tc.want.drifted {
				t.Errorf("Drifted() = %d, want %d", got.Drifted(), tc.want.drifted)
			}
			if got.Ref.String() != "Deployment/prod/render" {
				t.Errorf("ref %s", got.Ref)
			}
			if want := status.HealthHealthy; tc.want.status == status.ResourceSynced && got.Health != want && !strings.Contains(tc.name, "HPA") {
				t.Errorf("ref %s health %s", got.Ref, got.Health)
			}
		})
	}
}

func TestCompareFieldValuesAndOwners(t *testing.T) {
	t.Parallel()
	got := Compare(Input{
		Desired: obj(t, desiredDeploy),
		DryRun:  obj(t, liveWith(t, "101", "3", `"f:replicas":{},`, "", "")),
		Live:    obj(t, liveWith(t, "100", "6", "", scaleEntry, "")),
		Options: DefaultOptions(),
	})
	if len(got.Fields) != 1 {
		t.Fatalf("fields = %+v", got.Fields)
	}
	f := got.Fields[0]
	if f.Desired != int64(3) || f.Live != int64(6) {
		t.Errorf("desired %v live %v, want 3 and 6", f.Desired, f.Live)
	}
	if len(f.Owners) != 1 || f.Owners[0] != (status.Owner{Manager: "kubectl", Operation: "Update", Subresource: "scale", Class: status.OwnerPerson}) {
		t.Errorf("owners = %+v, want kubectl/Update/scale person without time", f.Owners)
	}

	extra := Compare(Input{
		Desired: obj(t, desiredDeploy),
		DryRun:  obj(t, liveWith(t, "101", "3", `"f:replicas":{},`, editEnvEntry, debugEnv)),
		Live:    obj(t, liveWith(t, "100", "3", `"f:replicas":{},`, editEnvEntry, debugEnv)),
		Options: DefaultOptions(),
	})
	e := extra.Fields[0]
	if e.Desired != nil || e.Live.(map[string]any)["name"] != "DEBUG" {
		t.Errorf("extra env: desired %v live %v", e.Desired, e.Live)
	}
	if len(e.Owners) != 1 || e.Owners[0].Manager != "kubectl-edit" || e.Owners[0].Time == nil || e.Owners[0].Time.Hour() != 15 {
		t.Errorf("extra env owners = %+v", e.Owners)
	}
}

func TestComparePersonManagersOption(t *testing.T) {
	t.Parallel()
	entry := strings.ReplaceAll(scaleEntry, "manager: kubectl", "manager: k9s")
	in := Input{
		Desired: obj(t, desiredDeploy),
		DryRun:  obj(t, liveWith(t, "101", "3", `"f:replicas":{},`, "", "")),
		Live:    obj(t, liveWith(t, "100", "6", "", entry, "")),
		Options: DefaultOptions(),
	}
	if c := Compare(in).Fields[0].Class; c != status.OwnerController {
		t.Errorf("k9s by default = %s, want controller", c)
	}
	in.Options.PersonManagers = []string{"k9s"}
	if c := Compare(in).Fields[0].Class; c != status.OwnerPerson {
		t.Errorf("k9s listed as a person = %s, want person", c)
	}
}

const desiredCM = `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: prod, labels: {app.kubernetes.io/managed-by: kdrift}}
data: {mode: prod}
`

const liveCM = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: prod
  resourceVersion: "7"
  labels: {app.kubernetes.io/managed-by: kdrift}
  managedFields:
  - {manager: kdrift, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data":{"f:mode":{}},"f:metadata":{"f:labels":{"f:app.kubernetes.io/managed-by":{}}}}}
  - {manager: kubectl-patch, operation: Update, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data":{"f:hotfix":{}}}}
  - {manager: cloud-controller, operation: Update, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:metadata":{"f:annotations":{".":{},"f:cloud.example/zone":{}}}}}
  - {manager: kubectl-client-side-apply, operation: Update, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:metadata":{"f:annotations":{"f:kubectl.kubernetes.io/last-applied-configuration":{}}}}}
data: {mode: prod, hotfix: "true"}
`

func TestCompareExtraConfigMapKey(t *testing.T) {
	t.Parallel()
	live := obj(t, liveCM)
	live.SetAnnotations(map[string]string{"cloud.example/zone": "a", "kubectl.kubernetes.io/last-applied-configuration": "{}"})
	got := Compare(Input{Desired: obj(t, desiredCM), DryRun: live.DeepCopy(), Live: live, Options: DefaultOptions()})
	if got.Status != status.ResourceOutOfSync || len(got.Fields) != 2 {
		t.Fatalf("status %s fields %+v", got.Status, got.Fields)
	}
	hot, zone := got.Fields[0], got.Fields[1]
	if hot.Path != "/data/hotfix" || !hot.Extra || hot.Class != status.OwnerPerson || hot.Live != "true" || !hot.IsDrift() {
		t.Errorf("hotfix = %+v", hot)
	}
	if zone.Path != "/metadata/annotations/cloud.example~1zone" || zone.Class != status.OwnerController || zone.IsDrift() {
		t.Errorf("zone = %+v", zone)
	}
	// Ignoring the person's manager leaves only listed fields: Ignored.
	ig := Compare(Input{Desired: obj(t, desiredCM), DryRun: live.DeepCopy(), Live: live, Options: DefaultOptions(),
		Ignore: []app.IgnoreRule{{Kind: "ConfigMap", ManagedFieldsManagers: []string{"kubectl-patch"}}}})
	if ig.Status != status.ResourceIgnored || ig.Drifted() != 0 {
		t.Errorf("ignored by manager: %s %+v", ig.Status, ig.Fields)
	}
}

func TestCompareSecretMasked(t *testing.T) {
	t.Parallel()
	desired := obj(t, `{apiVersion: v1, kind: Secret, metadata: {name: db, namespace: prod}, stringData: {password: hunter2}}`)
	dry := obj(t, `{apiVersion: v1, kind: Secret, metadata: {name: db, namespace: prod}, type: Opaque, data: {password: aHVudGVyMg==, token: dG9r}}`)
	live := obj(t, `{apiVersion: v1, kind: Secret, metadata: {name: db, namespace: prod, managedFields: [{manager: kubectl-edit, operation: Update, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data":{"f:password":{},"f:token":{}}}}]}, type: Opaque, data: {password: c2VjcmV0, token: dG9r}}`)
	got := Compare(Input{Desired: desired, DryRun: dry, Live: live, Options: DefaultOptions()})
	if got.Status != status.ResourceOutOfSync || len(got.Fields) != 2 {
		t.Fatalf("status %s fields %+v", got.Status, got.Fields)
	}
	for _, f := range got.Fields {
		if !f.Masked || f.Live != MaskedValue || (f.Desired != nil && f.Desired != MaskedValue) {
			t.Errorf("secret field not masked: %+v", f)
		}
	}
	if got.Fields[0].Class != status.OwnerPerson || !got.Fields[1].Extra {
		t.Errorf("fields %+v", got.Fields)
	}
}

func TestCompareStatuses(t *testing.T) {
	t.Parallel()
	desired := obj(t, desiredDeploy)
	live := obj(t, liveWith(t, "1", "3", "", "", ""))
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	immutable := apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "render",
		field.ErrorList{field.Invalid(field.NewPath("spec", "selector"), "x", "field is immutable")})
	cases := []struct {
		name string
		in   Input
		want status.Resource
		msg  string
	}{
		{"missing", Input{Desired: desired}, status.ResourceMissing, ""},
		{"missing, namespace not there yet", Input{Desired: desired, DryRunErr: apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "prod")}, status.ResourceMissing, `namespaces "prod" not found`},
		{"missing and invalid", Input{Desired: desired, DryRunErr: apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "render", field.ErrorList{field.Required(field.NewPath("spec", "selector"), "")})}, status.ResourceError, "spec.selector: Required"},
		{"extraneous", Input{Live: live}, status.ResourceExtraneous, ""},
		{"immutable", Input{Desired: desired, Live: live, DryRunErr: immutable}, status.ResourceRequiresReplace, "field is immutable"},
		{"wrapped immutable", Input{Desired: desired, Live: live, DryRunErr: errors.Join(errors.New("Deployment/prod/render: dry-run apply failed"), immutable)}, status.ResourceRequiresReplace, "immutable"},
		{"forbidden", Input{Desired: desired, Live: live, DryRunErr: apierrors.NewForbidden(gr, "render", errors.New("no"))}, status.ResourceError, "forbidden"},
		{"plain error", Input{Desired: desired, Live: live, DryRunErr: errors.New("connection refused")}, status.ResourceError, "connection refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Options = DefaultOptions()
			got := Compare(tc.in)
			if got.Status != tc.want || !strings.Contains(got.Message, tc.msg) {
				t.Errorf("got %s %q, want %s containing %q", got.Status, got.Message, tc.want, tc.msg)
			}
			if got.Ref.Name != "render" {
				t.Errorf("ref = %+v", got.Ref)
			}
		})
	}
	if h := Compare(Input{Desired: desired, Options: DefaultOptions()}).Health; h != status.HealthMissing {
		t.Errorf("missing health = %s", h)
	}
}

func TestCompareListChanges(t *testing.T) {
	t.Parallel()
	base := `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: prod}
spec:
  clusterIP: 10.0.0.7
  ports: PORTS
  selector: {app: web}
`
	svc := func(ports string) string { return strings.Replace(base, "PORTS", ports, 1) }
	live := obj(t, svc(`[{name: http, port: 80, protocol: TCP, targetPort: 8080}, {name: metrics, port: 9090, protocol: TCP, targetPort: 9090}]`))
	dry := obj(t, svc(`[{name: admin, port: 81, protocol: TCP, targetPort: 81}, {name: http, port: 80, protocol: TCP, targetPort: 8081}, {name: metrics, port: 9090, protocol: TCP, targetPort: 9090}]`))
	got := Compare(Input{Desired: dry, DryRun: dry, Live: live, Options: DefaultOptions()})
	var paths []string
	for _, f := range got.Fields {
		paths = append(paths, f.Path)
	}
	// Elements pair by name: the new port is one change, http's targetPort
	// another, at http's live index.
	if want := "/spec/ports/0,/spec/ports/0/targetPort"; strings.Join(paths, ",") != want {
		t.Errorf("paths = %v, want %s", paths, want)
	}
}

func TestCompareDefaultedExtras(t *testing.T) {
	t.Parallel()
	created := `  - manager: kubectl-create
    operation: Update
    apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1: {"f:spec":{"f:progressDeadlineSeconds":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"render\"}":{"f:imagePullPolicy":{}}},"f:dnsPolicy":{}}}}}`
	live := obj(t, liveWith(t, "1", "3", `"f:replicas":{},`, created, ""))
	in := Input{Desired: obj(t, desiredDeploy), DryRun: live.DeepCopy(), Live: live, Options: DefaultOptions()}
	first := Compare(in)
	if !NeedsDefaults(first) || first.Drifted() != 3 {
		t.Fatalf("without defaults: %+v", first.Fields)
	}
	// The apiserver's defaults, except dnsPolicy, which the person changed.
	defaulted := live.DeepCopy()
	defaulted.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["dnsPolicy"] = "Default"
	in.Defaulted = defaulted
	got := Compare(in)
	if got.Status != status.ResourceOutOfSync || len(got.Fields) != 1 || got.Fields[0].Path != "/spec/template/spec/dnsPolicy" {
		t.Fatalf("with defaults: %+v", got.Fields)
	}
}
