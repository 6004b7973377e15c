package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	yaml3 "gopkg.in/yaml.v3"
)

// parsedNodes is how many nodes yaml.v3 builds for data, aliases not
// expanded; ok is false when data does not parse.
func parsedNodes(data []byte) (int, bool) {
	dec := yaml3.NewDecoder(bytes.NewReader(data))
	total := 0
	var count func(n *yaml3.Node) int
	count = func(n *yaml3.Node) int {
		c := 1
		for _, ch := range n.Content {
			c += count(ch)
		}
		return c
	}
	for {
		var n yaml3.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return total, true
		}
		if err != nil {
			return 0, false
		}
		total += count(&n)
	}
}

// nodeSeeds are YAML texts whose nodes yamlNodes must not undercount.
var nodeSeeds = []string{
	"a: b\n",
	"- a\n- b\n",
	"-\n-\n-\n",
	"? \n? \n",
	"?\n",
	"{a, b, c}",
	"{:,:}",
	"[:, :, :]",
	"[a: b, c]",
	"[a,a,a,a]",
	"--- |\n  text\n---\n---\n",
	"key: |\n  line: one\n  - two\n  [x, y]\nother: x\n",
	"- key: >-\n    folded\n    - text: x\n  b: [1, 2]\n",
	"a: 'it''s: # not a comment'\nb: \"x\\\" [y, z]\"\n",
	"a: b # comment: [x, y]\n# - c\n",
	"a: &x [1, 2]\nb: *x\nc: !!str 3\n",
	"description: a plain scalar\n  that goes on: over\n  several lines\nnext: 1\n",
	"a:\n  - b:\n    - c: d\n      e:\n",
	"[[[[]]]]",
	"{\"a\": {\"b\": [1, 2.5, true, null, \"x\"]}}",
	"a:b: c\n",
	"- - - x\n",
	"%YAML 1.2\n---\na: 1\n...\n---\nb: 2\n",
	"a: |+\n\n  x\n\nb: 1\n",
}

func TestYAMLNodesIsAnUpperBound(t *testing.T) {
	check := func(name string, data []byte) {
		want, ok := parsedNodes(data)
		if !ok {
			return
		}
		if got, _ := yamlNodes(data, 1<<30, 1<<20); got < want {
			t.Errorf("%s: yamlNodes = %d, yaml.v3 builds %d nodes\n%s", name, got, want, data)
		}
	}
	for i, s := range nodeSeeds {
		check(string(rune('a'+i)), []byte(s))
	}
	// Every YAML file of the repository's test data.
	root := filepath.Join("..", "..")
	files := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		check(p, data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read %d YAML files of the repository, want many", files)
	}
}

// TestYAMLNodesStaysClose: the bound is close enough to the truth on
// real manifests that a legitimate file is not refused for its count.
func TestYAMLNodesStaysClose(t *testing.T) {
	var got, want int
	err := filepath.WalkDir(filepath.Join("..", ".."), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if w, ok := parsedNodes(data); ok {
			g, _ := yamlNodes(data, 1<<30, 1<<20)
			got, want = got+g, want+w
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if ratio := float64(got) / float64(want); ratio > 2.5 {
		t.Errorf("yamlNodes counts %d over the repository's YAML, yaml.v3 builds %d: %.2f times", got, want, ratio)
	} else {
		t.Logf("yamlNodes counts %d, yaml.v3 builds %d (%.2f times)", got, want, ratio)
	}
}

func FuzzYAMLNodes(f *testing.F) {
	for _, s := range nodeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, ok := parsedNodes([]byte(s))
		if !ok {
			return
		}
		if got, _ := yamlNodes([]byte(s), 1<<30, 1<<20); got < want {
			t.Fatalf("yamlNodes = %d, yaml.v3 builds %d nodes for %q", got, want, s)
		}
	})
}

// jsonValues counts a decoded JSON value's nodes, object keys included.
func jsonValues(v any) int {
	switch x := v.(type) {
	case map[string]any:
		n := 1
		for _, e := range x {
			n += 1 + jsonValues(e)
		}
		return n
	case []any:
		n := 1
		for _, e := range x {
			n += jsonValues(e)
		}
		return n
	}
	return 1
}

func FuzzJSONNodes(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e3,true,null,"x\"y"]}`, `[]`, `"s"`, `{"a":{"b":{}}}`, `[ 1 , [ 2 ] ]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			return
		}
		if got, _ := jsonNodes([]byte(s), 1<<30, 1<<20); got.nodes < jsonValues(v) {
			t.Fatalf("jsonNodes = %d, decoded %d for %q", got.nodes, jsonValues(v), s)
		}
	})
}

func TestNodeBudgetsRefuseBeforeDecoding(t *testing.T) {
	list := "[" + strings.Repeat("a,", 500_000) + "a]"
	err := CheckYAML("big.yaml", []byte("# argoproj.io\n"+list), DefaultOptions())
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "nodes" || le.File != "big.yaml" {
		t.Fatalf("CheckYAML = %v, want a nodes limit naming big.yaml", err)
	}
	if c, ok := jsonNodes([]byte(`{"k":`+strings.Replace(list, "a", "1", -1)+`}`), 1000, 200); ok || c.nodes <= 1000 {
		t.Fatalf("jsonNodes = %d, %v; want refused past 1000", c.nodes, ok)
	}
}
