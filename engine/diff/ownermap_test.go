package diff

import (
	"fmt"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
)

// ownerFleet is four Deployments: two synced, one scaled by the
// horizontal-pod-autoscaler, one with an env var added by kubectl-edit
// after the last sync; plus a ConfigMap with a hand-added key and a
// controller's annotation.
func ownerFleet(t testing.TB) []OwnedObject {
	rules := []app.IgnoreRule{{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}}
	var out []OwnedObject
	for i, live := range []string{
		liveWith(t, "1", "3", `"f:replicas":{},`, "", ""),
		liveWith(t, "1", "3", `"f:replicas":{},`, "", ""),
		liveWith(t, "1", "7", "", hpaEntry, ""),
		liveWith(t, "1", "3", `"f:replicas":{},`, editEnvEntry, debugEnv),
	} {
		o := obj(t, live)
		o.SetName(fmt.Sprintf("render-%d", i))
		out = append(out, OwnedObject{App: "prod", Live: o, Ignore: rules})
	}
	cm := obj(t, liveCM)
	cm.SetAnnotations(map[string]string{"cloud.example/zone": "a"})
	out = append(out, OwnedObject{App: "prod", Live: cm, Fights: []status.Fight{{Ref: status.ObjectRef{Kind: "ConfigMap", Namespace: "prod", Name: "settings"}, Field: "/data/hotfix", Manager: "kubectl-patch"}}})
	return out
}

func rowOf(t *testing.T, m OwnerMap, kind, field string) OwnerRow {
	t.Helper()
	for _, k := range m.Kinds {
		if k.Kind != kind {
			continue
		}
		for _, r := range k.Rows {
			if r.Field == field {
				return r
			}
		}
	}
	t.Fatalf("no row %s %s in %+v", kind, field, m)
	return OwnerRow{}
}

func writersText(r OwnerRow) string {
	var parts []string
	for _, w := range r.Writers {
		parts = append(parts, fmt.Sprintf("%s(%s) %d", w.Label(), w.Class, w.Count))
	}
	return strings.Join(parts, ", ")
}

func TestBuildOwnerMap(t *testing.T) {
	m := BuildOwnerMap(ownerFleet(t), OwnerMapOptions{Diff: DefaultOptions()})
	if m.Objects != 5 || len(m.Errors) != 0 || len(m.Kinds) != 2 {
		t.Fatalf("map = %+v", m)
	}
	if m.Kinds[0].Kind != "ConfigMap" || m.Kinds[1].Kind != "Deployment" || m.Kinds[1].Objects != 4 {
		t.Fatalf("kinds = %+v", m.Kinds)
	}
	rep := rowOf(t, m, "Deployment", "spec.replicas")
	if got := writersText(rep); got != "kdrift(kdrift) 3, horizontal-pod-autoscaler(controller) 1" {
		t.Errorf("replicas writers = %s", got)
	}
	if !rep.Contested || rep.Objects != 4 || len(rep.Rules) != 1 || rep.Rules[0] != "prod: Deployment.apps /spec/replicas" {
		t.Errorf("replicas row = %+v", rep)
	}
	if w := rep.Writers[1]; w.Newest == nil || !w.Newest.Equal(time.Date(2026, 12, 2, 11, 0, 0, 0, time.UTC)) || w.Subresource != "scale" || len(w.Objects) != 1 || w.Objects[0] != "prod:Deployment/prod/render-2" {
		t.Errorf("hpa writer = %+v", w)
	}
	kd := rep.Writers[0]
	if len(kd.Refs) != 3 || kd.Refs[0].App != "prod" || kd.Refs[0].Ref.Name != "render-0" || kd.Refs[2].Ref.Name != "render-3" || kd.Refs[2].Ref.Group != "apps" || kd.Objects[2] != "prod:Deployment/prod/render-3" {
		t.Errorf("kdrift's objects and refs out of step: %v %+v", kd.Objects, kd.Refs)
	}
	env := rowOf(t, m, "Deployment", "spec.template.spec.containers[name=render].env[name=DEBUG].value")
	if got := writersText(env); got != "kubectl-edit(person) 1" || !env.Contested || len(env.Why) != 1 || !strings.Contains(env.Why[0], "after the last sync") {
		t.Errorf("env row = %s %+v", got, env)
	}
	// The container image only Git writes: folded.
	for _, r := range m.Kinds[1].Rows {
		if strings.HasSuffix(r.Field, ".image") {
			t.Errorf("Git-only row not folded: %+v", r)
		}
	}
	if m.Kinds[1].GitOnly == 0 {
		t.Errorf("no Git-only fields counted: %+v", m.Kinds[1])
	}
	hot := rowOf(t, m, "ConfigMap", "data.hotfix")
	if !hot.Contested || len(hot.Why) != 2 || hot.Why[0] != "fight with kubectl-patch" || hot.Why[1] != "kubectl-patch wrote it (time not recorded)" {
		t.Errorf("hotfix row = %+v", hot)
	}
	zone := rowOf(t, m, "ConfigMap", `metadata.annotations["cloud.example/zone"]`)
	if zone.Contested || writersText(zone) != "cloud-controller(controller) 1" {
		t.Errorf("zone row = %+v", zone)
	}
	// Contested rows come first.
	rows := m.Kinds[1].Rows
	if !sort.SliceIsSorted(rows, func(i, j int) bool { return rows[i].Contested && !rows[j].Contested }) {
		t.Errorf("contested rows not first: %+v", rows)
	}

	all := BuildOwnerMap(ownerFleet(t), OwnerMapOptions{All: true, Diff: DefaultOptions()})
	img := rowOf(t, all, "Deployment", "spec.template.spec.containers[name=render].image")
	if img.Contested || writersText(img) != "kdrift(kdrift) 4" || all.Kinds[1].GitOnly != 0 {
		t.Errorf("image row with All = %+v", img)
	}
	only := BuildOwnerMap(ownerFleet(t), OwnerMapOptions{Kinds: []KindFilter{{Kind: "configmap", AnyGroup: true}}, Diff: DefaultOptions()})
	if len(only.Kinds) != 1 || only.Kinds[0].Kind != "ConfigMap" || only.Objects != 1 {
		t.Errorf("kind filter = %+v", only)
	}
}

func TestOwnerMapDefaulted(t *testing.T) {
	// One Deployment where nobody owns replicas (Fact 6: a scale to an
	// unowned replicas records no owner), one where Git does.
	a := obj(t, liveWith(t, "1", "3", `"f:replicas":{},`, "", ""))
	b := obj(t, liveWith(t, "1", "3", "", "", ""))
	b.SetName("other")
	m := BuildOwnerMap([]OwnedObject{{App: "a", Live: a}, {App: "a", Live: b}}, OwnerMapOptions{All: true, Diff: DefaultOptions()})
	r := rowOf(t, m, "Deployment", "spec.replicas")
	if got := writersText(r); got != "kdrift(kdrift) 1, defaulted(defaulted) 1" || r.Contested {
		t.Errorf("replicas = %s %+v", got, r)
	}
}

func TestParseKindFilter(t *testing.T) {
	for in, want := range map[string]KindFilter{
		"Deployment":      {Kind: "Deployment", AnyGroup: true},
		"deployment.apps": {Kind: "deployment", Group: "apps"},
		"Service.":        {Kind: "Service"},
	} {
		got, err := ParseKindFilter(in)
		if err != nil || got != want {
			t.Errorf("ParseKindFilter(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", ".apps", "apps/Deployment"} {
		if _, err := ParseKindFilter(bad); err == nil {
			t.Errorf("ParseKindFilter(%q) took it", bad)
		}
	}
	f, _ := ParseKindFilter("Service.")
	if !f.Matches("", "Service") || f.Matches("serving.knative.dev", "Service") {
		t.Errorf("Service. matches wrong groups")
	}
}

// BenchmarkOwnerMap1000 is the pure aggregation over 1,000 objects of 50
// apps (the app20 mix: synced, hand-scaled and hand-edited Deployments,
// ConfigMaps with hand-added keys).
func BenchmarkOwnerMap1000(b *testing.B) {
	var objs []OwnedObject
	for a := 0; a < 50; a++ {
		for i, in := range app20(b) {
			lv := in.Live
			lv.SetName(fmt.Sprintf("%s-%d", lv.GetName(), i))
			objs = append(objs, OwnedObject{App: fmt.Sprintf("app-%02d", a), Live: lv, Ignore: in.Ignore})
		}
	}
	cpu := processCPU()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := BuildOwnerMap(objs, OwnerMapOptions{Diff: DefaultOptions()})
		if m.Objects != 1000 {
			b.Fatalf("objects = %d", m.Objects)
		}
	}
	b.StopTimer()
	// CPU time says what the map costs apart from how busy the machine is.
	b.ReportMetric(float64((processCPU()-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
