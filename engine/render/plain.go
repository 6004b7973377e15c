package render

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// readPlain reads the manifest files of plain folder dir as d says (nil:
// every one, subfolders included), in lexical path order: *.yaml, *.yml
// and *.json files several documents each (empty documents skipped, List
// kinds flattened, kustomize configuration documents left out), *.jsonnet
// files evaluated (see evalJsonnet). Files are read through fsys, within
// its budgets, past CheckYAML and decrypted in memory when they are SOPS
// files. A folder that gives no object while it holds files that were not
// read is a *NothingReadError: an app is never reported Synced on files
// kdrift skipped.
func readPlain(fsys *treeFS, dir string, d *Directory) ([]*unstructured.Unstructured, error) {
	tree := fsys.tree
	w, err := walkDirectory(tree, dir, d, false)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	var errs []error
	imported := map[string]bool{}
	for _, name := range w.read {
		if strings.ToLower(path.Ext(name)) == ".jsonnet" {
			var j *Jsonnet
			if d != nil {
				j = d.Jsonnet
			}
			got, err := evalJsonnet(fsys, dir, name, j, fsys.opts, imported)
			if le := fsys.limit(); le != nil {
				return nil, le
			}
			var lim *LimitError
			var imp *ImportError
			if errors.As(err, &lim) || errors.As(err, &imp) {
				return nil, err
			}
			errs = append(errs, err)
			objs = append(objs, got...)
			continue
		}
		fsys.allowSOPS(name, sopsManifest)
		data, err := fsys.ReadFile("/" + name)
		if le := fsys.limit(); le != nil {
			return nil, le
		}
		if err != nil {
			return nil, err
		}
		got, err := decodeFile(name, data)
		AfterDecode(len(data))
		errs = append(errs, err)
		objs = append(objs, got...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(objs) == 0 {
		skipped := w.skipped
		if !d.recursive() {
			all, err := walkDirectory(tree, dir, d, true)
			if err != nil {
				return nil, err
			}
			skipped = all.skipped
		}
		if err := nothingRead(skipped, imported); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// decodeFile decodes the documents of one file, naming the file and the
// document in errors.
func decodeFile(name string, data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	var errs []error
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for doc := 1; ; doc++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: document %d: %w", name, doc, err))
			break
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: document %d: invalid YAML: %w", name, doc, err))
			continue
		}
		js = bytes.TrimSpace(js)
		if len(js) == 0 || string(js) == "null" {
			continue
		}
		var obj map[string]any
		if err := utiljson.Unmarshal(js, &obj); err != nil {
			errs = append(errs, fmt.Errorf("%s: document %d: not a Kubernetes object: %w", name, doc, err))
			continue
		}
		got, err := objects(obj)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: document %d: %w", name, doc, err))
			continue
		}
		objs = append(objs, got...)
	}
	return objs, errors.Join(errs...)
}

// objects checks one decoded document and flattens a List.
func objects(obj map[string]any) ([]*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{Object: obj}
	if strings.HasPrefix(u.GetAPIVersion(), "kustomize.config.k8s.io/") {
		return nil, nil
	}
	if u.IsList() {
		var out []*unstructured.Unstructured
		items, _ := obj["items"].([]any)
		for i, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s item %d is not an object", u.GetKind(), i)
			}
			got, err := objects(m)
			if err != nil {
				return nil, fmt.Errorf("%s item %d: %w", u.GetKind(), i, err)
			}
			out = append(out, got...)
		}
		return out, nil
	}
	switch {
	case u.GetAPIVersion() == "":
		return nil, errors.New("apiVersion is missing")
	case u.GetKind() == "":
		return nil, errors.New("kind is missing")
	case u.GetName() == "" && u.GetGenerateName() == "":
		return nil, fmt.Errorf("%s has no metadata.name", u.GetKind())
	}
	return []*unstructured.Unstructured{u}, nil
}
