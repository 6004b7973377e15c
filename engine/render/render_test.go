package render_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/engine/sops"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/gittest"
	"kdrift.dev/kdrift/internal/sopstest"
)

var overlayFiles = map[string]string{
	"deploy/base/kustomization.yaml": "resources: [deployment.yaml, service.yaml]\nconfigMapGenerator:\n- name: settings\n  literals: [color=blue]\n",
	"deploy/base/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        envFrom: [{configMapRef: {name: settings}}]
`,
	"deploy/base/service.yaml":                "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  selector: {app: web}\n  ports: [{port: 80}]\n",
	"deploy/overlays/prod/kustomization.yaml": "namespace: prod\nnamePrefix: prod-\nresources: [../../base]\npatches:\n- path: replicas.yaml\n",
	"deploy/overlays/prod/replicas.yaml":      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 6}\n",
	"deploy/other/cm.yaml":                    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n",
	"README.md":                               "docs\n",
}

// repo commits files and returns the repository and a function that opens
// a snapshot of its head.
func repo(t testing.TB, files map[string]string) (*gittest.Repo, func() *source.Snapshot) {
	t.Helper()
	g := gittest.Init(t)
	g.Commit("init", files)
	r, err := source.Open(context.Background(), source.Options{Location: g.Dir})
	if err != nil {
		t.Fatal(err)
	}
	return g, func() *source.Snapshot {
		t.Helper()
		if err := r.Fetch(context.Background()); err != nil {
			t.Fatal(err)
		}
		rev, err := r.Head(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		s, err := r.Snapshot(rev.Hash)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func ids(objs []*unstructured.Unstructured) string {
	var out []string
	for _, o := range objs {
		id := o.GetKind() + "/" + o.GetName()
		if o.GetNamespace() != "" {
			id = o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
		}
		out = append(out, id)
	}
	return strings.Join(out, " ")
}

func TestRenderOverlay(t *testing.T) {
	_, snap := repo(t, overlayFiles)
	objs, err := render.NewRenderer().Render(snap(), "deploy/overlays/prod")
	if err != nil {
		t.Fatal(err)
	}
	// kustomize's legacy order: ConfigMap, Service, Deployment.
	cm := objs[0].GetName()
	if !strings.HasPrefix(cm, "prod-settings-") {
		t.Fatalf("generated ConfigMap name = %q", cm)
	}
	if got, want := ids(objs), "ConfigMap/prod/"+cm+" Service/prod/prod-web Deployment/prod/prod-web"; got != want {
		t.Fatalf("objects = %s, want %s", got, want)
	}
	replicas, _, _ := unstructured.NestedInt64(objs[2].Object, "spec", "replicas")
	if replicas != 6 {
		t.Errorf("replicas = %d, want the overlay's 6", replicas)
	}
	ref, _, _ := unstructured.NestedSlice(objs[2].Object, "spec", "template", "spec", "containers")
	if !strings.Contains(fmt.Sprint(ref), cm) {
		t.Errorf("envFrom does not name the hashed ConfigMap %s: %v", cm, ref)
	}
}

// TestWarmThenRender: Warm's background build of its own is neither
// cached nor counted, and a render started while it runs gives exactly
// what a renderer that was never warmed gives.
func TestWarmThenRender(t *testing.T) {
	_, snap := repo(t, overlayFiles)
	cold, err := render.NewRenderer().Render(snap(), "deploy/overlays/prod")
	if err != nil {
		t.Fatal(err)
	}
	r := render.NewRenderer()
	r.Warm()
	r.Warm()
	warm, err := r.Render(snap(), "deploy/overlays/prod")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cold, warm) {
		t.Fatalf("warmed render = %s, want %s", ids(warm), ids(cold))
	}
	if st := r.Stats(); st.Builds != 1 || st.Hits != 0 {
		t.Fatalf("stats %+v, want the one build of the App", st)
	}
}

func TestRenderPlainYAML(t *testing.T) {
	_, snap := repo(t, map[string]string{
		"apps/plain/b.yaml":             "---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b1}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b2}\n---\n",
		"apps/plain/a.yml":              "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n",
		"apps/plain/nested/list.yaml":   "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: s1}\n- apiVersion: v1\n  kind: ServiceList\n  items:\n  - {apiVersion: v1, kind: Service, metadata: {name: svc}, spec: {ports: [{port: 80}]}}\n",
		"apps/plain/nested/c.json":      `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}`,
		"apps/plain/notes.txt":          "not YAML: ignored\n",
		"apps/plain/sub/kustomize.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n",
	})
	objs, err := render.NewRenderer().Render(snap(), "apps/plain")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(objs), "Namespace/a ConfigMap/b1 ConfigMap/b2 ConfigMap/c Secret/s1 Service/svc"; got != want {
		t.Fatalf("objects = %s, want %s", got, want)
	}
	ports, _, _ := unstructured.NestedSlice(objs[5].Object, "spec", "ports")
	if port, ok := ports[0].(map[string]any)["port"].(int64); !ok || port != 80 {
		t.Errorf("port = %#v, want int64 80 as in any unstructured object", ports[0])
	}
}

func TestRenderPlainYAMLErrors(t *testing.T) {
	_, snap := repo(t, map[string]string{
		"apps/bad/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\nkind: ConfigMap\nmetadata: {name: x}\n",
		"apps/bad/b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n",
	})
	_, err := render.NewRenderer().Render(snap(), "apps/bad")
	var re *render.Error
	if !errors.As(err, &re) || re.Path != "apps/bad" {
		t.Fatalf("error = %v, want a render.Error for apps/bad", err)
	}
	for _, want := range []string{"apps/bad: ", "apps/bad/a.yaml: document 2: apiVersion is missing", "apps/bad/b.yaml: document 1: invalid YAML"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestRenderInvalidKustomization(t *testing.T) {
	files := map[string]string{
		"deploy/broken/kustomization.yaml":  "resources: [missing.yaml]\n",
		"deploy/unknown/kustomization.yaml": "resourcez: [a.yaml]\n",
		"deploy/good/kustomization.yaml":    "resources: [cm.yaml]\n",
		"deploy/good/cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good}\n",
	}
	_, snap := repo(t, files)
	s := snap()
	r := render.NewRenderer()
	_, err := r.Render(s, "deploy/broken")
	if err == nil || !strings.HasPrefix(err.Error(), "deploy/broken: ") || !strings.Contains(err.Error(), `resources entry "missing.yaml"`) || !strings.Contains(err.Error(), "is neither a file nor a folder") {
		t.Fatalf("broken error = %v", err)
	}
	_, err = r.Render(s, "deploy/unknown")
	if err == nil || !strings.HasPrefix(err.Error(), "deploy/unknown: ") || !strings.Contains(err.Error(), `unknown field "resourcez"`) {
		t.Fatalf("unknown-field error = %v", err)
	}
	// The other App still renders, and the same broken input is not built again.
	if objs, err := r.Render(s, "deploy/good"); err != nil || ids(objs) != "ConfigMap/good" {
		t.Fatalf("good = %s, %v", ids(objs), err)
	}
	before := r.Stats()
	if _, err := r.Render(s, "deploy/broken"); err == nil {
		t.Fatal("cached broken render lost its error")
	}
	if after := r.Stats(); after.Builds != before.Builds || after.Hits != before.Hits+1 {
		t.Fatalf("stats %+v -> %+v, want a cache hit", before, after)
	}
	if _, err := r.Render(s, "deploy/nowhere"); err == nil || !strings.Contains(err.Error(), "deploy/nowhere: folder does not exist") {
		t.Fatalf("missing folder error = %v", err)
	}
	if _, err := r.Render(s, "../etc"); err == nil {
		t.Fatal("a path outside the repository rendered")
	}
}

func TestRenderCacheFollowsBase(t *testing.T) {
	g, snap := repo(t, overlayFiles)
	r := render.NewRenderer()
	s1 := snap()
	first, err := r.Render(s1, "deploy/overlays/prod")
	if err != nil {
		t.Fatal(err)
	}
	// Unchanged snapshot, then an unrelated commit: both cache hits.
	first[2].SetName("mutated-by-caller")
	again, err := r.Render(s1, "deploy/overlays/prod")
	if err != nil || again[2].GetName() != "prod-web" {
		t.Fatalf("cached render = %s, %v (a caller's change leaked into the cache?)", ids(again), err)
	}
	g.Commit("docs", map[string]string{"README.md": "more docs\n", "deploy/other/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other2}\n"})
	if _, err := r.Render(snap(), "deploy/overlays/prod"); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Builds != 1 || st.Hits != 2 {
		t.Fatalf("stats = %+v, want 1 build and 2 hits", st)
	}

	// Change only the base: the overlay folder's hash stays, the render changes.
	g.Commit("bump image", map[string]string{"deploy/base/deployment.yaml": strings.Replace(overlayFiles["deploy/base/deployment.yaml"], "nginx:1.27", "nginx:1.28", 1)})
	s3 := snap()
	h1, _ := s1.TreeHash("deploy/overlays/prod")
	h3, _ := s3.TreeHash("deploy/overlays/prod")
	if h1 != h3 {
		t.Fatal("test setup: the overlay folder changed")
	}
	objs, err := r.Render(s3, "deploy/overlays/prod")
	if err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Builds != 2 {
		t.Fatalf("stats = %+v, want a second build after the base changed", st)
	}
	if !strings.Contains(fmt.Sprint(objs[2].Object["spec"]), "nginx:1.28") {
		t.Errorf("re-render does not carry the base change: %v", objs[2].Object["spec"])
	}
	// The older revision is still cached too.
	if _, err := r.Render(s1, "deploy/overlays/prod"); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Builds != 2 {
		t.Fatalf("stats = %+v, the older revision was rendered again", st)
	}
}

func TestRenderCacheSeesNewKustomization(t *testing.T) {
	g, snap := repo(t, map[string]string{"apps/x/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"})
	r := render.NewRenderer()
	if objs, err := r.Render(snap(), "apps/x"); err != nil || ids(objs) != "ConfigMap/x" {
		t.Fatalf("plain = %s, %v", ids(objs), err)
	}
	g.Commit("kustomize it", map[string]string{"apps/x/kustomization.yaml": "namespace: team\nresources: [cm.yaml]\n"})
	if objs, err := r.Render(snap(), "apps/x"); err != nil || ids(objs) != "ConfigMap/team/x" {
		t.Fatalf("kustomized = %s, %v", ids(objs), err)
	}
}

// panicTree is a real snapshot whose reads of one file panic, standing in
// for a kustomize bug hit in the middle of a build.
type panicTree struct {
	*source.Snapshot
	file string
}

func (p panicTree) Open(name string) (fs.File, error) {
	if name == p.file {
		panic("boom in " + name)
	}
	return p.Snapshot.Open(name)
}

func (p panicTree) ReadFile(name string) ([]byte, error) {
	if name == p.file {
		panic("boom in " + name)
	}
	return p.Snapshot.ReadFile(name)
}

func TestRenderRecoversPanic(t *testing.T) {
	_, snap := repo(t, overlayFiles)
	s := snap()
	r := render.NewRenderer()
	_, err := r.Render(panicTree{s, "deploy/overlays/prod/replicas.yaml"}, "deploy/overlays/prod")
	var pe *render.PanicError
	if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "deploy/overlays/prod: kustomize panicked: boom in deploy/overlays/prod/replicas.yaml") || len(pe.Stack) == 0 {
		t.Fatalf("error = %v, want a recovered panic", err)
	}
	// The build lock was released: another build runs.
	if _, err := r.Render(s, "deploy/base"); err != nil {
		t.Fatal(err)
	}
}

func TestRenderConcurrentSamePathBuildsOnce(t *testing.T) {
	_, snap := repo(t, overlayFiles)
	s := snap()
	r := render.NewRenderer()
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := r.Render(s, "deploy/overlays/prod")
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if st := r.Stats(); st.Builds != 1 || st.Hits != 7 {
		t.Fatalf("stats = %+v, want 1 build and 7 hits", st)
	}
}

// TestRenderEveryApp walks the path the engine takes: the Apps declared at a
// revision, each rendered; a broken App fails alone.
func TestRenderEveryApp(t *testing.T) {
	files := map[string]string{
		".kdrift/apps.yaml": `apiVersion: kdrift.dev/v1alpha1
kind: App
metadata: {name: prod}
spec: {path: deploy/overlays/prod}
---
apiVersion: kdrift.dev/v1alpha1
kind: App
metadata: {name: broken}
spec: {path: deploy/broken}
---
apiVersion: kdrift.dev/v1alpha1
kind: App
metadata: {name: other}
spec: {path: ./deploy/other}
`,
		"deploy/broken/kustomization.yaml": "resources: [../nowhere]\n",
	}
	for k, v := range overlayFiles {
		files[k] = v
	}
	_, snap := repo(t, files)
	s := snap()
	apps := s.Apps()
	if len(apps.Apps) != 3 || len(apps.Invalid) != 0 {
		t.Fatalf("apps = %+v", apps)
	}
	r := render.NewRenderer()
	got := map[string]string{}
	for _, a := range apps.Apps {
		objs, err := r.Render(s, a.Spec.Path)
		if err != nil {
			got[a.Metadata.Name] = "error: " + err.Error()
			continue
		}
		got[a.Metadata.Name] = fmt.Sprint(len(objs))
	}
	if got["prod"] != "3" || got["other"] != "1" || !strings.HasPrefix(got["broken"], "error: deploy/broken: ") {
		t.Fatalf("renders = %v", got)
	}
}

func TestRenderRefusesRemoteBase(t *testing.T) {
	upstream := gittest.Init(t)
	upstream.Commit("upstream", map[string]string{
		"base/kustomization.yaml": "resources: [cm.yaml]\n",
		"base/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: upstream}\ndata: {v: one}\n",
	})
	_, snap := repo(t, map[string]string{
		"deploy/remote/kustomization.yaml": "namespace: team\nresources:\n- " + upstream.URL() + "//base?ref=main\n",
	})
	_, err := render.NewRenderer().Render(snap(), "deploy/remote")
	var re *render.RefusedError
	if !errors.As(err, &re) || re.File != "deploy/remote/kustomization.yaml" || re.Field != "resources" ||
		!strings.Contains(err.Error(), "vendor the base into the repository") {
		t.Fatalf("error = %v, want a refused remote base naming the file, the entry and the fix", err)
	}
}

func TestRenderSymlinks(t *testing.T) {
	g := gittest.Init(t)
	g.Write(map[string]string{
		"shared/kustomization.yaml": "resources: [labels.yaml]\n",
		"shared/labels.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared}\ndata: {v: one}\n",
		"apps/a/kustomization.yaml": "resources: [base]\n",
		"apps/b/kustomization.yaml": "resources: [cm.yaml]\n",
	})
	for link, target := range map[string]string{
		"apps/a/base":    "../../shared",             // a base through a linked folder
		"apps/b/cm.yaml": "../../shared/labels.yaml", // a file outside the kustomization root
	} {
		if err := os.Symlink(target, filepath.Join(g.Dir, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	g.Commit("init", nil)
	src, err := source.Open(context.Background(), source.Options{Location: g.Dir})
	if err != nil {
		t.Fatal(err)
	}
	snapshot := func() *source.Snapshot {
		if err := src.Fetch(context.Background()); err != nil {
			t.Fatal(err)
		}
		rev, err := src.Head(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		s, err := src.Snapshot(rev.Hash)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	r := render.NewRenderer()
	s1 := snapshot()
	if objs, err := r.Render(s1, "apps/a"); err != nil || ids(objs) != "ConfigMap/shared" {
		t.Fatalf("render = %s, %v", ids(objs), err)
	}
	// As with kustomize on disk, a linked file may not leave the root.
	if _, err := r.Render(s1, "apps/b"); err == nil || !strings.Contains(err.Error(), "security; file '/apps/b/cm.yaml' is not in or below '/apps/b'") {
		t.Fatalf("linked file outside the root = %v", err)
	}
	g.Commit("change shared", map[string]string{"shared/labels.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared}\ndata: {v: two}\n"})
	objs, err := r.Render(snapshot(), "apps/a")
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(objs[0].Object, "data", "v"); v != "two" || r.Stats().Builds != 3 {
		t.Fatalf("data.v = %q, stats %+v: a change behind a symbolic link was missed", v, r.Stats())
	}
}

// TestInputs: an overlay's inputs are its folder and its base, not its
// siblings.
func TestInputs(t *testing.T) {
	_, snap := repo(t, overlayFiles)
	r := render.NewRenderer()
	if got := r.Inputs("deploy/overlays/prod"); got != nil {
		t.Fatalf("inputs before a render: %v", got)
	}
	if _, err := r.Render(snap(), "deploy/overlays/prod"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.Inputs("deploy/overlays/prod"), " "); got != "deploy/base deploy/overlays/prod" {
		t.Fatalf("inputs %q, want the overlay and its base", got)
	}
}

// TestSOPS: SOPS files a build reads are decrypted in memory with the
// keyring, resource and generator input alike; without the key they stay
// encrypted, lose their metadata, and say why.
func TestSOPS(t *testing.T) {
	id := sopstest.Identity(t)
	files := sopstest.AppFiles(t, "apps/secure", id)
	files["apps/plain/secret.enc.yaml"] = sopstest.Encrypt(t, "secret.enc.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: plain}\nstringData: {password: "+sopstest.DBPassword+"}\n", id)
	_, snap := repo(t, files)
	s := snap()

	r := render.NewRenderer()
	for _, dir := range []string{"apps/secure", "apps/plain"} {
		objs, err := r.Render(s, dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if c, ok := sops.Find(o.Object); ok {
				nk := r.Undecrypted(c.Value)
				if nk == nil || !strings.HasPrefix(nk.File, dir+"/") || r.Origin(c.Value) != nk.File {
					t.Fatalf("%s: %s/%s: ciphertext at %s from no known file", dir, o.GetKind(), o.GetName(), c.Path)
				}
				if _, has := o.Object["sops"]; has {
					t.Fatalf("%s: sops metadata left in %s", dir, o.GetName())
				}
			} else if o.GetKind() == "Secret" {
				t.Fatalf("%s: Secret %s rendered without a key has no ciphertext", dir, o.GetName())
			}
		}
	}

	keys := &sops.Keyring{}
	if err := keys.Add("test", []byte(id.String())); err != nil {
		t.Fatal(err)
	}
	r.SetKeys(keys)
	objs, err := r.Render(s, "apps/secure")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, o := range objs {
		if c, ok := sops.Find(o.Object); ok {
			t.Fatalf("%s still holds ciphertext at %s", o.GetName(), c.Path)
		}
		switch o.GetKind() {
		case "Secret":
			found++
			js, _ := o.MarshalJSON()
			if o.GetName() == "db-credentials" && !strings.Contains(string(js), sopstest.DBPassword) {
				t.Fatalf("db-credentials not decrypted: %s", js)
			}
			if strings.HasPrefix(o.GetName(), "api-env-") {
				data, _, _ := unstructured.NestedStringMap(o.Object, "data")
				if len(data) != 2 || data["API_TOKEN"] == "" {
					t.Fatalf("api-env has data %v; want API_URL and API_TOKEN only", slices.Sorted(maps.Keys(data)))
				}
			}
		}
	}
	if found != 2 {
		t.Fatalf("rendered %s", ids(objs))
	}

	// A changed ciphertext fails the build with the file named.
	files["apps/secure/api.enc.env"] = strings.Replace(files["apps/secure/api.enc.env"], "API_URL=ENC[AES256_GCM,data:", "API_URL=ENC[AES256_GCM,data:AA", 1)
	_, snap = repo(t, files)
	if _, err := r.Render(snap(), "apps/secure"); err == nil || !strings.Contains(err.Error(), "apps/secure/api.enc.env") || !strings.Contains(err.Error(), "integrity") {
		t.Fatalf("tampered file rendered: %v", err)
	}
}

// TestSOPSByStructure: a generator's files: of any name (.enc,
// .yaml.enc, .txt) are recognised as SOPS by their content and
// decrypted, in the format the content shows; without the key their
// ciphertext is recognised in the object, never taken for data.
func TestSOPSByStructure(t *testing.T) {
	id := sopstest.Identity(t)
	enc := func(as, plain string) string {
		out, err := sops.Encrypt(as, []byte(plain), sops.EncryptOptions{Recipients: []string{id.Recipient().String()}})
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	files := map[string]string{
		"apps/gen/kustomization.yaml": "secretGenerator:\n- name: files\n  options: {disableNameSuffixHash: true}\n  files: [token.txt, config.yaml.enc, api.enc]\n",
		"apps/gen/token.txt":          enc("token.bin", sopstest.APIToken),
		"apps/gen/config.yaml.enc":    enc("config.yaml", "password: "+sopstest.DBPassword+"\n"),
		"apps/gen/api.enc":            enc("api.env", "API_TOKEN="+sopstest.APIToken+"\n"),
	}
	_, snap := repo(t, files)
	r := render.NewRenderer()
	objs, err := r.Render(snap(), "apps/gen")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 {
		t.Fatalf("rendered %s", ids(objs))
	}
	if c, ok := sops.Find(objs[0].Object); !ok || r.Undecrypted(c.Value) == nil {
		t.Fatalf("without the key: ciphertext not recognised (%+v, %v)", c, ok)
	}
	keys := &sops.Keyring{}
	if err := keys.Add("test", []byte(id.String())); err != nil {
		t.Fatal(err)
	}
	r.SetKeys(keys)
	objs, err = r.Render(snap(), "apps/gen")
	if err != nil {
		t.Fatal(err)
	}
	data, _, _ := unstructured.NestedStringMap(objs[0].Object, "data")
	want := map[string]string{
		"token.txt":       sopstest.APIToken,
		"config.yaml.enc": "password: " + sopstest.DBPassword + "\n",
		"api.enc":         "API_TOKEN=" + sopstest.APIToken + "\n",
	}
	for k, v := range want {
		got, err := base64.StdEncoding.DecodeString(data[k])
		if err != nil || string(got) != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

// TestSetAppKeys: a keyring scoped to an App's folder decrypts that
// folder's files only; another folder encrypted for the same identity
// stays encrypted, and renders with the unscoped keyring.
func TestSetAppKeys(t *testing.T) {
	id := sopstest.Identity(t)
	files := sopstest.AppFiles(t, "apps/mine", id)
	for k, v := range sopstest.AppFiles(t, "apps/theirs", id) {
		files[k] = v
	}
	_, snap := repo(t, files)
	keys := &sops.Keyring{}
	if err := keys.Add("scoped", []byte(id.String())); err != nil {
		t.Fatal(err)
	}
	r := render.NewRenderer()
	r.SetAppKeys(map[string]*sops.Keyring{"./apps/mine": keys})
	for dir, wantSealed := range map[string]bool{"apps/mine": false, "apps/theirs": true} {
		objs, err := r.Render(snap(), dir)
		if err != nil {
			t.Fatal(err)
		}
		sealed := 0
		for _, o := range objs {
			if _, ok := sops.Find(o.Object); ok {
				sealed++
			}
		}
		if (sealed > 0) != wantSealed {
			t.Errorf("%s: %d objects hold ciphertext; want sealed %v", dir, sealed, wantSealed)
		}
	}
}
