package render_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/internal/gittest"
)

// chartFiles reads the chart under testdata/charts/NAME into repository
// files under prefix.
func chartFiles(t testing.TB, name, prefix string) map[string]string {
	return gittest.Files(t, filepath.Join("testdata", "charts", name), prefix)
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func TestRenderHelmChart(t *testing.T) {
	files := chartFiles(t, "web", "deploy/web")
	files["deploy/env/prod.yaml"] = "image: {tag: \"1.28\"}\n"
	_, snap := repo(t, files)
	r := render.NewRenderer()

	objs, err := r.RenderApp(context.Background(), snap(), "deploy/web", &render.Helm{ReleaseName: "shop", Namespace: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	got := ids(objs)
	// Hooks and tests are rendered (the engine leaves them out of drift);
	// NOTES.txt, partials and .helmignore'd files are not; the vendored
	// dependency is.
	want := "ConfigMap/shop-cache ConfigMap/prod/shop-web Deployment/shop-web Job/shop-web-migrate Service/shop-web Pod/shop-web-test"
	if got != want {
		t.Fatalf("objects:\n got %s\nwant %s", got, want)
	}
	dep := find(objs, "Deployment", "shop-web")
	if n, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas"); n != 2 {
		t.Errorf("replicas = %d, want the chart's 2", n)
	}
	if l := dep.GetLabels()["app.kubernetes.io/instance"]; l != "shop" {
		t.Errorf("the _helpers.tpl label = %q", l)
	}
	cm := find(objs, "ConfigMap", "shop-web")
	if g, _, _ := unstructured.NestedString(cm.Object, "data", "GREETING"); g != "hello from shop" {
		t.Errorf("tpl of a value = %q", g)
	}
	if v, _, _ := unstructured.NestedString(cm.Object, "data", "KUBE_VERSION"); !strings.HasPrefix(v, "v1.") {
		t.Errorf(".Capabilities.KubeVersion = %q", v)
	}
	if p, _, _ := unstructured.NestedString(find(objs, "ConfigMap", "shop-cache").Object, "data", "PORT"); p != "6379" {
		t.Errorf("the dependency's own values: PORT = %q", p)
	}

	// Values in order: value files, inline values, the object, parameters.
	h := &render.Helm{ReleaseName: "shop", ValueFiles: []string{"values-prod.yaml", "/deploy/env/prod.yaml"},
		Values:       "service: {port: 9090}\ncache: {port: 7000}\n",
		ValuesObject: map[string]any{"greeting": "object wins"},
		Parameters:   []render.HelmParameter{{Name: "image.repository", Value: "registry.local/nginx"}, {Name: "cache.enabled", Value: "true"}, {Name: "greeting", Value: "a,b", ForceString: true}}}
	objs, err = r.RenderApp(context.Background(), snap(), "deploy/web", h)
	if err != nil {
		t.Fatal(err)
	}
	dep = find(objs, "Deployment", "shop-web")
	if n, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas"); n != 6 {
		t.Errorf("replicas = %d, want values-prod.yaml's 6", n)
	}
	c := dep.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	if c["image"] != "registry.local/nginx:1.28" {
		t.Errorf("image = %v, want the parameter's repository and /deploy/env/prod.yaml's tag", c["image"])
	}
	svc := find(objs, "Service", "shop-web")
	if p := svc.Object["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)["port"]; p != int64(9090) {
		t.Errorf("port = %v (%T), want the inline values' 9090", p, p)
	}
	if g, _, _ := unstructured.NestedString(find(objs, "ConfigMap", "shop-web").Object, "data", "GREETING"); g != "a,b" {
		t.Errorf("GREETING = %q, want the parameter's", g)
	}
	if p, _, _ := unstructured.NestedString(find(objs, "ConfigMap", "shop-cache").Object, "data", "PORT"); p != "7000" {
		t.Errorf("the dependency's value from the parent: PORT = %q", p)
	}

	// A condition turns the dependency off.
	objs, err = r.RenderApp(context.Background(), snap(), "deploy/web", &render.Helm{ReleaseName: "shop", Parameters: []render.HelmParameter{{Name: "cache.enabled", Value: "false"}}})
	if err != nil {
		t.Fatal(err)
	}
	if find(objs, "ConfigMap", "shop-cache") != nil {
		t.Error("cache.enabled=false still renders the dependency")
	}
	// The default release name is the folder's.
	objs, err = r.Render(snap(), "deploy/web")
	if err != nil {
		t.Fatal(err)
	}
	if find(objs, "Deployment", "web-web") == nil {
		t.Errorf("default release: %s", ids(objs))
	}
	if in := r.Inputs("deploy/web"); !strings.Contains(strings.Join(in, " "), "deploy/env") {
		t.Errorf("Inputs = %v, want the values file's folder too", in)
	}
}

func TestRenderHelmErrors(t *testing.T) {
	files := chartFiles(t, "web", "deploy/web")
	delete(files, "deploy/web/charts/cache/Chart.yaml")
	delete(files, "deploy/web/charts/cache/values.yaml")
	delete(files, "deploy/web/charts/cache/templates/_helpers.tpl")
	delete(files, "deploy/web/charts/cache/templates/configmap.yaml")
	broken := chartFiles(t, "web", "deploy/broken")
	for k, v := range broken {
		files[k] = v
	}
	files["deploy/broken/templates/service.yaml"] = "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Values.service.nope.deeper }}\n"
	_, snap := repo(t, files)
	r := render.NewRenderer()
	for _, tc := range []struct {
		dir  string
		h    *render.Helm
		want []string
	}{
		{"deploy/web", nil, []string{`dependency "cache"`, "not vendored", "charts.example.com", "helm dependency build"}},
		{"deploy/broken", nil, []string{"deploy/broken: chart deploy/broken:", "templates/service.yaml:4", "nil pointer"}},
		{"deploy/broken", &render.Helm{ValueFiles: []string{"missing.yaml"}}, []string{`values file "missing.yaml"`, "does not exist"}},
		{"deploy/broken", &render.Helm{ValueFiles: []string{"../../../etc/passwd"}}, []string{"outside the repository"}},
		{"deploy/broken", &render.Helm{ValueFiles: []string{"https://example.com/values.yaml"}}, []string{"remote location"}},
		{"deploy/broken", &render.Helm{Values: "a: [1"}, []string{"spec.helm.values"}},
	} {
		_, err := r.RenderApp(context.Background(), snap(), tc.dir, tc.h)
		if err == nil {
			t.Errorf("%s %+v: rendered", tc.dir, tc.h)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s %+v: error %q does not say %q", tc.dir, tc.h, err, w)
			}
		}
	}
}

// TestRenderHostileChart: templates are untrusted; what would exhaust the
// process hits a budget and is that render's error.
func TestRenderHostileChart(t *testing.T) {
	chartYAML := "apiVersion: v2\nname: evil\nversion: 0.1.0\n"
	cases := map[string]string{
		"repeat":      `{{ repeat 100000000 "xxxxxxxxxx" }}`,
		"until":       `{{ range until 1000000000 }}x{{ end }}`,
		"indent":      `{{ indent 1000000000 "x" }}`,
		"doubling":    `{{ $s := "xxxxxxxxxxxxxxxx" }}{{ range until 40 }}{{ $s = cat $s $s }}{{ end }}{{ $s }}`,
		"include":     `{{ define "loop" }}{{ include "loop" . }}{{ end }}{{ include "loop" . }}`,
		"range int":   `{{ range 1000000000000 }}xxxxxxxxxxxxxxxx{{ end }}`,
		"mutual":      `{{ define "a" }}{{ include "b" . }}{{ end }}{{ define "b" }}{{ include "c" . }}{{ end }}{{ define "c" }}{{ include "d" . }}{{ end }}{{ define "d" }}{{ include "a" . }}{{ end }}{{ include "a" . }}`,
		"tpl include": `{{ define "a" }}{{ tpl "{{ include \"a\" . }}" . }}{{ end }}{{ include "a" . }}`,
		"tpl self":    `{{ tpl .Values.x . }}`,
		"tpl piped":   `{{ . | tpl ( .Values.x ) }}`,
		"aliases":     "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n",
	}
	files := map[string]string{}
	for name, tpl := range cases {
		dir := "charts/" + strings.ReplaceAll(name, " ", "-")
		files[dir+"/Chart.yaml"] = chartYAML
		files[dir+"/templates/evil.yaml"] = tpl
	}
	// A value that calls tpl on itself, in two spellings.
	files["charts/tpl-self/values.yaml"] = "x: '{{ tpl .Values.x . }}'\n"
	files["charts/tpl-piped/values.yaml"] = "x: '{{ $ | tpl (.Values.x) }}'\n"
	files["charts/slow/Chart.yaml"] = chartYAML
	files["charts/slow/templates/slow.yaml"] = `{{ range until 100000 }}{{ range until 100000 }}{{ $x := add 1 2 }}{{ end }}{{ end }}`
	_, snap := repo(t, files)
	r := render.NewRenderer()
	r.Options.MaxRenderBytes = 8 << 20
	for name := range cases {
		dir := "charts/" + strings.ReplaceAll(name, " ", "-")
		start := time.Now()
		_, err := r.RenderApp(context.Background(), snap(), dir, nil)
		if err == nil {
			t.Errorf("%s: rendered", name)
			continue
		}
		var le *render.LimitError
		if !errors.As(err, &le) {
			t.Errorf("%s: %v, want a budget", name, err)
		}
		if time.Since(start) > 20*time.Second {
			t.Errorf("%s: took %s", name, time.Since(start))
		}
		t.Logf("%s: %v", name, err)
	}
	// tpl recursion stops at the depth budget, not at the time limit, and
	// leaves no render running.
	for _, dir := range []string{"charts/tpl-self", "charts/tpl-piped"} {
		before := runtime.NumGoroutine()
		_, err := r.RenderApp(context.Background(), snap(), dir, nil)
		var le *render.LimitError
		if !errors.As(err, &le) || le.Limit != "template depth" {
			t.Errorf("%s: %v, want the template depth budget", dir, err)
		}
		for wait := time.Now(); runtime.NumGoroutine() > before; time.Sleep(10 * time.Millisecond) {
			if time.Since(wait) > 5*time.Second {
				t.Errorf("%s: %d goroutines after the render, %d before", dir, runtime.NumGoroutine(), before)
				break
			}
		}
	}
	r.Options.Timeout = 300 * time.Millisecond
	start := time.Now()
	_, err := r.RenderApp(context.Background(), snap(), "charts/slow", nil)
	var le *render.LimitError
	if !errors.As(err, &le) || (le.Limit != "time" && le.Limit != "template loop") {
		t.Errorf("slow chart: %v, want the time or loop budget", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("slow chart returned after %s", d)
	}
}

// TestRenderKustomizeHelmCharts: a kustomization's helmCharts whose chart
// is kept under the chart home render in process, and the
// kustomization's own transformers apply to the output; a chart
// repository is refused.
func TestRenderKustomizeHelmCharts(t *testing.T) {
	files := chartFiles(t, "web", "deploy/kust/charts/web")
	for k, v := range chartFiles(t, "web", "deploy/home/vendor/web") {
		files[k] = v
	}
	files["deploy/kust/kustomization.yaml"] = `namePrefix: k-
resources: [extra.yaml]
helmCharts:
- name: web
  releaseName: shop
  namespace: prod
  additionalValuesFiles: [prod-values.yaml]
  valuesInline: {replicaCount: 3}
`
	files["deploy/kust/extra.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\n"
	files["deploy/kust/prod-values.yaml"] = "replicaCount: 9\nservice: {port: 8443}\n"
	files["deploy/home/kustomization.yaml"] = "helmGlobals: {chartHome: vendor}\nhelmCharts:\n- {name: web, releaseName: home, skipHooks: true}\n"
	files["deploy/remote/kustomization.yaml"] = "helmCharts:\n- {name: web, repo: 'https://charts.example.com', version: 1.0.0}\n"
	files["deploy/absent/kustomization.yaml"] = "helmCharts:\n- {name: nothere}\n"
	_, snap := repo(t, files)
	r := render.NewRenderer()
	objs, err := r.Render(snap(), "deploy/kust")
	if err != nil {
		t.Fatal(err)
	}
	got := ids(objs)
	for _, want := range []string{"ConfigMap/k-extra", "Deployment/k-shop-web", "Service/k-shop-web", "ConfigMap/prod/k-shop-web", "ConfigMap/k-shop-cache", "Job/k-shop-web-migrate"} {
		if !strings.Contains(got, want) {
			t.Errorf("objects %s lack %s", got, want)
		}
	}
	dep := find(objs, "Deployment", "k-shop-web")
	if n, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas"); n != 3 {
		t.Errorf("replicas = %d, want valuesInline's 3 over the values file's 9", n)
	}
	svc := find(objs, "Service", "k-shop-web")
	if p := svc.Object["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)["port"]; p != int64(8443) {
		t.Errorf("port = %v, want additionalValuesFiles' 8443", p)
	}
	if in := strings.Join(r.Inputs("deploy/kust"), " "); !strings.Contains(in, "deploy/kust/charts/web/templates") {
		t.Errorf("Inputs %s lack the chart's templates", in)
	}

	objs, err = r.Render(snap(), "deploy/home")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(objs); !strings.Contains(got, "Deployment/home-web") || strings.Contains(got, "migrate") {
		t.Errorf("chartHome vendor/ with skipHooks: %s", got)
	}
	for dir, want := range map[string]string{
		"deploy/remote": `helmCharts entry "web from https://charts.example.com": names a chart repository`,
		"deploy/absent": "deploy/absent/charts/nothere has no Chart.yaml",
	} {
		_, err := r.Render(snap(), dir)
		var re *render.RefusedError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a refusal saying %q", dir, err, want)
		}
	}
}

// TestRenderHelmPackagedDependency: a dependency vendored as a .tgz in
// charts/ (as `helm dependency build` leaves it) is unpacked in memory.
func TestRenderHelmPackagedDependency(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range map[string]string{
		"cache/Chart.yaml":               "apiVersion: v2\nname: cache\nversion: 0.2.0\n",
		"cache/values.yaml":              "port: 6380\n",
		"cache/templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}-packed}\ndata: {PORT: {{ .Values.port | quote }}}\n",
	} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"deploy/app/Chart.yaml":             "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- {name: cache, version: 0.2.0, repository: https://charts.example.com}\n",
		"deploy/app/charts/cache-0.2.0.tgz": buf.String(),
	}
	_, snap := repo(t, files)
	objs, err := render.NewRenderer().RenderApp(context.Background(), snap(), "deploy/app", &render.Helm{ReleaseName: "r"})
	if err != nil {
		t.Fatal(err)
	}
	cm := find(objs, "ConfigMap", "r-packed")
	if cm == nil {
		t.Fatalf("objects: %s", ids(objs))
	}
	if p, _, _ := unstructured.NestedString(cm.Object, "data", "PORT"); p != "6380" {
		t.Errorf("PORT = %q", p)
	}
}
