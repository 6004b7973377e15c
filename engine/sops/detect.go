package sops

import (
	"bytes"

	"go.yaml.in/yaml/v3"
)

// Detect says whether data is a SOPS file, by its structure and not its
// name, and in which format to open it, as Flux recognises SOPS content
// by its markers: a top-level "sops" map holding "mac" or "version" in a
// YAML or JSON document (a JSON object of only "data" and "sops" is a
// binary file), sops_mac= or sops_version= lines in a dotenv file, a
// [sops] section with mac or version in an INI file. The name only
// breaks ties the way the sops CLI would: a .yaml or .json name keeps
// its store, so that a structured file is opened as sops would open it.
func Detect(name string, data []byte) (Format, bool) {
	if !bytes.Contains(data, []byte("sops")) {
		return 0, false
	}
	byName := FormatOf(name)
	if byName == Dotenv || byName == INI {
		if f, ok := detectFlat(data); ok {
			return f, true
		}
	}
	if f, ok := detectTree(data, byName); ok {
		return f, true
	}
	return detectFlat(data)
}

// detectTree finds a sops map at the top of a YAML or JSON document.
func detectTree(data []byte, byName Format) (Format, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for range 64 {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			return 0, false
		}
		root := &doc
		if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
			root = root.Content[0]
		}
		if root.Kind != yaml.MappingNode {
			continue
		}
		var keys []string
		isSOPS := false
		for i := 0; i+1 < len(root.Content); i += 2 {
			k, v := root.Content[i], root.Content[i+1]
			keys = append(keys, k.Value)
			if k.Value == "sops" && v.Kind == yaml.MappingNode && hasAnyKey(v, "mac", "version") {
				isSOPS = true
			}
		}
		if !isSOPS {
			continue
		}
		switch {
		case byName == YAML || byName == JSON:
			return byName, true
		case root.Style&yaml.FlowStyle != 0 && len(keys) == 2 && (keys[0] == "data" || keys[1] == "data"):
			return Binary, true
		case root.Style&yaml.FlowStyle != 0:
			return JSON, true
		}
		return YAML, true
	}
	return 0, false
}

func hasAnyKey(m *yaml.Node, names ...string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		for _, n := range names {
			if m.Content[i].Value == n {
				return true
			}
		}
	}
	return false
}

// detectFlat finds dotenv or INI metadata lines.
func detectFlat(data []byte) (Format, bool) {
	inSOPS := false
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("sops_mac=")) || bytes.HasPrefix(line, []byte("sops_version=")) {
			return Dotenv, true
		}
		t := bytes.TrimSpace(line)
		if bytes.HasPrefix(t, []byte("[")) {
			inSOPS = bytes.Equal(bytes.TrimSpace(bytes.Trim(t, "[]")), []byte("sops"))
			continue
		}
		if inSOPS {
			k, _, ok := bytes.Cut(t, []byte("="))
			if !ok {
				k, _, ok = bytes.Cut(t, []byte(":"))
			}
			if k = bytes.TrimSpace(k); ok && (string(k) == "mac" || string(k) == "version") {
				return INI, true
			}
		}
	}
	return 0, false
}
