package render_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/render"
)

// TestRenderHelmSchema: values are checked against the chart's
// values.schema.json and its dependency's, as Helm does before rendering,
// with Helm's message.
func TestRenderHelmSchema(t *testing.T) {
	_, snap := repo(t, chartFiles(t, "schema", "deploy/schema"))
	r := render.NewRenderer()
	objs, err := r.RenderApp(context.Background(), snap(), "deploy/schema", &render.Helm{ReleaseName: "shop"})
	if err != nil {
		t.Fatalf("valid values: %v", err)
	}
	if got := ids(objs); got != "ConfigMap/shop-queue Deployment/shop" {
		t.Errorf("objects: %s", got)
	}
	for _, tc := range []struct {
		name string
		h    *render.Helm
		want []string
	}{
		{"wrong type", &render.Helm{Values: "replicas: two\n"}, []string{"chart deploy/schema:", "values don't meet the specifications of the schema(s)", "schema:", "/replicas", "want integer"}},
		{"through a $ref", &render.Helm{Values: "image: {tag: latest}\n"}, []string{"/image/tag", "does not match pattern"}},
		{"missing", &render.Helm{Parameters: []render.HelmParameter{{Name: "image", Value: "null"}}}, []string{"missing property 'image'"}},
		{"dependency", &render.Helm{Values: "queue: {size: 1000}\n"}, []string{"queue:", "/size", "maximum"}},
	} {
		_, err := r.RenderApp(context.Background(), snap(), "deploy/schema", tc.h)
		if err == nil {
			t.Errorf("%s: rendered", tc.name)
			continue
		}
		t.Logf("%s: %v", tc.name, err)
		var ce *render.ChartError
		if !errors.As(err, &ce) {
			t.Errorf("%s: %v is not a ChartError", tc.name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, w)
			}
		}
	}
}

// TestRenderHelmSchemaRefs: a schema $ref to a URL or to a file is
// refused with its location named, and nothing is fetched or opened.
func TestRenderHelmSchemaRefs(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, `{"type": "object"}`)
	}))
	defer srv.Close()
	refs := map[string]string{
		"remote":   srv.URL + "/values.schema.json",
		"secret":   strings.Replace(srv.URL, "http://", "http://user:hunter2@", 1) + "/s.json",
		"file":     "file:///etc/passwd",
		"relative": "common.schema.json#/definitions/image",
		"escape":   "../../../etc/hostname",
	}
	files := map[string]string{}
	for name, ref := range refs {
		files["charts/"+name+"/Chart.yaml"] = "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n"
		files["charts/"+name+"/values.schema.json"] = `{"properties": {"image": {"$ref": "` + ref + `"}}}`
		files["charts/"+name+"/common.schema.json"] = `{"definitions": {"image": {"type": "object"}}}`
		files["charts/"+name+"/templates/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
	}
	_, snap := repo(t, files)
	r := render.NewRenderer()
	for name := range refs {
		_, err := r.RenderApp(context.Background(), snap(), "charts/"+name, nil)
		var re *render.SchemaRefError
		if !errors.As(err, &re) {
			t.Errorf("%s: %v, want a refused $ref", name, err)
			continue
		}
		msg := err.Error()
		for _, w := range []string{"chart charts/" + name, "$ref", "never fetches or opens", "inline what it refers to"} {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: error %q does not say %q", name, msg, w)
			}
		}
		if strings.Contains(msg, "hunter2") {
			t.Errorf("%s: error %q shows the password", name, msg)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the schema server was asked %d times", n)
	}
}

// TestRenderHostileSchema: a schema is untrusted: one that would take
// exponential time stops at the render's time limit (and the check ends,
// leaving nothing running), one nesting too deep or with a regular
// expression too large is refused.
func TestRenderHostileSchema(t *testing.T) {
	// Each level tries the next one twice: 2^40 checks for a value that
	// matches none.
	var defs []string
	for i := range 40 {
		defs = append(defs, fmt.Sprintf(`"d%d": {"anyOf": [{"$ref": "#/definitions/d%d"}, {"$ref": "#/definitions/d%d", "minimum": 0}]}`, i, i+1, i+1))
	}
	defs = append(defs, `"d40": {"type": "string"}`)
	exponential := `{"properties": {"x": {"$ref": "#/definitions/d0"}}, "definitions": {` + strings.Join(defs, ",") + `}}`
	deep := strings.Repeat(`{"properties": {"a": `, 300) + "{}" + strings.Repeat("}}", 300)
	cases := map[string]string{
		"exponential": exponential,
		"deep":        deep,
		"regex":       `{"properties": {"x": {"pattern": "((((a{1000}){1000}){1000}){1000})"}}}`,
		"self":        `{"$ref": "#"}`,
		"huge-number": `{"properties": {"x": {"multipleOf": 1e-999999999, "maximum": 1e999999999}}}`,
	}
	files := map[string]string{}
	for name, schema := range cases {
		files["charts/"+name+"/Chart.yaml"] = "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n"
		files["charts/"+name+"/values.yaml"] = "x: 1\n"
		files["charts/"+name+"/values.schema.json"] = schema
		files["charts/"+name+"/templates/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
	}
	_, snap := repo(t, files)
	for name, want := range map[string]string{"exponential": "time", "deep": "nesting depth", "regex": "", "self": "", "huge-number": ""} {
		r := render.NewRenderer()
		r.Options.Timeout = time.Second
		start := time.Now()
		_, err := r.RenderApp(context.Background(), snap(), "charts/"+name, nil)
		if err == nil {
			t.Errorf("%s: rendered", name)
			continue
		}
		t.Logf("%s: %v", name, err)
		var le *render.LimitError
		if want != "" && (!errors.As(err, &le) || le.Limit != want) {
			t.Errorf("%s: %v, want the %s budget", name, err, want)
		}
		var ce *render.ChartError
		if want == "" && !errors.As(err, &ce) {
			t.Errorf("%s: %v, want the chart's error", name, err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: returned after %s", name, d)
		}
		// The abandoned build ends too: it is counted when it returns.
		for wait := time.Now(); r.Stats().Builds == 0; time.Sleep(10 * time.Millisecond) {
			if time.Since(wait) > 10*time.Second {
				t.Errorf("%s: the schema check still runs 10s after the render's time limit", name)
				break
			}
		}
	}
}

// TestRenderHelmCapabilities: .Capabilities is the destination's version
// and API versions when the engine passes them, kdrift's own defaults
// otherwise.
func TestRenderHelmCapabilities(t *testing.T) {
	_, snap := repo(t, chartFiles(t, "caps", "deploy/caps"))
	r := render.NewRenderer()
	for _, tc := range []struct {
		name       string
		h          *render.Helm
		version    string
		apiVersion string
		monitor    bool
	}{
		{"defaults", &render.Helm{ReleaseName: "shop"}, "", "networking.k8s.io/v1", false},
		{"old cluster", &render.Helm{ReleaseName: "shop", KubeVersion: "v1.18.20"}, "v1.18.20", "networking.k8s.io/v1beta1", false},
		{"vendor version", &render.Helm{ReleaseName: "shop", KubeVersion: "v1.33.4-gke.1245000"}, "v1.33.4-gke.1245000", "networking.k8s.io/v1", false},
		{"not a version", &render.Helm{ReleaseName: "shop", KubeVersion: "latest"}, "", "networking.k8s.io/v1", false},
		{"with the CRD", &render.Helm{ReleaseName: "shop", KubeVersion: "v1.31.2", APIVersions: []string{"monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor"}}, "v1.31.2", "networking.k8s.io/v1", true},
	} {
		objs, err := r.RenderApp(context.Background(), snap(), "deploy/caps", tc.h)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		ing := find(objs, "Ingress", "shop")
		if ing == nil {
			t.Fatalf("%s: no Ingress in %s", tc.name, ids(objs))
		}
		if ing.GetAPIVersion() != tc.apiVersion {
			t.Errorf("%s: Ingress is %s, want %s", tc.name, ing.GetAPIVersion(), tc.apiVersion)
		}
		got := ing.GetAnnotations()["kube-version"]
		if tc.version != "" && got != tc.version {
			t.Errorf("%s: .Capabilities.KubeVersion.Version = %q, want %q", tc.name, got, tc.version)
		}
		if tc.version == "" && !strings.HasPrefix(got, "v1.") {
			t.Errorf("%s: default .Capabilities.KubeVersion.Version = %q", tc.name, got)
		}
		if m := find(objs, "ServiceMonitor", "shop") != nil; m != tc.monitor {
			t.Errorf("%s: ServiceMonitor rendered = %v, want %v", tc.name, m, tc.monitor)
		}
	}
}
