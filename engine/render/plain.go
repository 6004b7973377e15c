package render

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// readPlain reads every *.yaml, *.yml and *.json file in dir and below, in
// lexical path order, several documents per file; empty documents are
// skipped, List kinds are flattened into their items, and kustomize
// configuration documents (kustomize.config.k8s.io) are left out. Files are
// read through fsys, within its budgets, past CheckYAML and decrypted in
// memory when they are SOPS files.
func readPlain(fsys *treeFS, dir string) ([]*unstructured.Unstructured, error) {
	tree := fsys.tree
	var objs []*unstructured.Unstructured
	var errs []error
	err := fs.WalkDir(tree, dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		switch strings.ToLower(path.Ext(name)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		data, err := fsys.ReadFile("/" + name)
		if le := fsys.limit(); le != nil {
			return le
		}
		if err != nil {
			return err
		}
		got, err := decodeFile(name, data)
		errs = append(errs, err)
		objs = append(objs, got...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
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
