package render

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"kdrift.dev/kdrift/engine/render/sandbox"
)

// webChartFS is the parent's side of a Helm render of testdata's web
// chart: its files under chartRoot and its values.
func webChartFS(t testing.TB) (filesys.FileSystem, []string) {
	t.Helper()
	mem := filesys.MakeFsInMemory()
	root := filepath.Join("testdata", "charts", "web")
	var names []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		names = append(names, filepath.ToSlash(rel))
		return mem.WriteFile(chartRoot+filepath.ToSlash(rel), data)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.WriteFile(valuesFile, []byte(`{"replicaCount":2}`)); err != nil {
		t.Fatal(err)
	}
	return mem, names
}

// FuzzHelmRequest: whatever a Helm request holds (a render worker decodes
// it from its pipe), the worker's renderer answers with manifests or an
// error, and a typed error comes back to the parent with its message.
func FuzzHelmRequest(f *testing.F) {
	mem, names := webChartFS(f)
	good, err := json.Marshal(&helmRequest{Dir: "apps/web", Files: names, Release: "r", Namespace: "n", Options: DefaultOptions()})
	if err != nil {
		f.Fatal(err)
	}
	if out, err := runInProcess(helmHandler, mem, good, 1<<20, kindHelm); err != nil || len(out) == 0 {
		f.Fatalf("the web chart: %d manifests, %v", len(out), err)
	}
	f.Add(good)
	withParams, _ := json.Marshal(&helmRequest{Dir: "web", Files: names, Parameters: []HelmParameter{{Name: "image.tag", Value: "1"}, {Name: "a[3]", Value: "x,y"}}, KubeVersion: "v1.30.0", APIVersions: []string{"x/v1"}, SkipCRDs: true, Options: Options{MaxRenderBytes: 100}})
	f.Add(withParams)
	f.Add([]byte(`{"dir":"c","files":["../../etc/passwd"]}`))
	f.Add([]byte(`{"dir":"c","files":["Chart.yaml"],"options":{"MaxRenderBytes":-1}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"parameters":[{"name":"a[99999999]","value":"1"}]}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		if !json.Valid(payload) {
			return // the pipe carries it inside a JSON frame
		}
		parent := newTreeFS(t.Context(), nil, DefaultOptions(), nil)
		out, err := runInProcess(helmHandler, mem, payload, 1<<20, kindHelm)
		if err != nil {
			back := fromWorker(parent, kindHelm, err)
			if back == nil || back.Error() == "" {
				t.Fatalf("error %v came back as %v", err, back)
			}
			var ce *sandbox.CodedError
			if errors.As(err, &ce) && back.Error() != ce.Msg {
				t.Fatalf("coded error %q came back as %q", ce.Msg, back.Error())
			}
			return
		}
		for _, raw := range out {
			var f renderedFile
			if err := json.Unmarshal(raw, &f); err != nil || f.Name == "" {
				t.Fatalf("manifest %s: %v", raw, err)
			}
		}
	})
}

// FuzzCodedError: whatever code, data and message a worker's result
// carries, the parent turns it into an error with that message, and a
// known code with data of its type into that type.
func FuzzCodedError(f *testing.F) {
	for _, c := range []struct{ code, data, msg string }{
		{codeLimit, `{"File":"a.jsonnet","Limit":"jsonnet stack","Detail":"deep"}`, "a.jsonnet: jsonnet stack limit: deep"},
		{codeImport, `{"From":"a.jsonnet","Path":"/etc/passwd","Problem":"absolute"}`, "x"},
		{codeChart, `{"chart":"c","problem":"p","schemaRef":"https://x"}`, "chart c: p"},
		{codeChart, `[]`, "chart"},
		{"other", `{}`, "other"},
		{"", ``, ""},
	} {
		f.Add(c.code, []byte(c.data), c.msg)
	}
	f.Fuzz(func(t *testing.T, code string, data []byte, msg string) {
		if msg == "" {
			msg = "x"
		}
		parent := newTreeFS(t.Context(), nil, DefaultOptions(), nil)
		err := fromWorker(parent, kindJsonnet, &sandbox.CodedError{Code: code, Data: data, Msg: msg})
		if err == nil || err.Error() != msg {
			t.Fatalf("%s %s %q came back as %v", code, data, msg, err)
		}
		var le *LimitError
		var decoded LimitError
		if code == codeLimit && json.Unmarshal(data, &decoded) == nil && !errors.As(err, &le) {
			t.Fatalf("a limit came back as %T", err)
		}
	})
}
