package sops

import (
	"bytes"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"filippo.io/age"
	"filippo.io/age/armor"
	"gopkg.in/yaml.v3"
)

// maxFile bounds what Open parses: a repository is untrusted input.
const maxFile = 8 << 20

// Open reads file name (its path in the repository, which also gives its
// format) and, when it is a SOPS file, decrypts it with keys and returns
// the plaintext in the same format, as `sops --decrypt` prints it. A file
// without SOPS metadata comes back unchanged with encrypted false.
//
// When no identity of keys opens the file, the error is a *NoKeyError and
// out is still set: the file without its SOPS metadata, values still
// encrypted, so that key names can be compared and the ciphertext is
// recognised later. A MAC or value that does not check is an
// *IntegrityError, a malformed file a *FormatError; out is nil then.
func Open(name string, data []byte, keys *Keyring) (out []byte, encrypted bool, err error) {
	out, _, encrypted, err = OpenValues(name, data, keys)
	return out, encrypted, err
}

// OpenValues is Open that also returns the plaintext of every value it
// decrypted, so that a caller can scrub them from messages (an
// apiserver's or kustomize's error quoting a decrypted file).
func OpenValues(name string, data []byte, keys *Keyring) (out []byte, values []string, encrypted bool, err error) {
	if !LooksEncrypted(data) {
		return data, nil, false, nil
	}
	if len(data) > maxFile {
		return nil, nil, true, &FormatError{File: name, Err: fmt.Errorf("the file is larger than %d bytes", maxFile)}
	}
	o := &opener{name: name, keys: keys}
	switch FormatOf(name) {
	case YAML:
		out, encrypted, err = o.tree(data, YAML)
	case JSON:
		out, encrypted, err = o.tree(data, JSON)
	case Dotenv:
		out, encrypted, err = o.flat(data, parseDotenv, emitDotenv)
	case INI:
		out, encrypted, err = o.flat(data, parseINI, emitINI)
	default:
		out, encrypted, err = o.binary(data)
	}
	if err != nil && out == nil {
		return nil, nil, encrypted, err
	}
	return out, o.values, encrypted, err
}

// opener opens one file and collects the plaintexts it decrypted.
type opener struct {
	name   string
	keys   *Keyring
	values []string
}

// file is one SOPS document being opened.
type file struct {
	name string
	meta *Metadata
	key  []byte // nil when no identity opened the data key
	mac  hash.Hash
	// values collects the plaintexts decrypted.
	values *[]string
}

// begin reads a document's metadata and unwraps its data key; a
// *NoKeyError leaves key nil.
func (o *opener) begin(raw map[string]any) (*file, error) {
	name, keys := o.name, o.keys
	m, err := parseMetadata(raw)
	if err != nil {
		return nil, &FormatError{File: name, Err: err}
	}
	key, err := m.dataKey(name, keys)
	if err != nil {
		return &file{name: name, meta: m}, err
	}
	h := macHash(m)
	return &file{name: name, meta: m, key: key, mac: h, values: &o.values}, nil
}

// leaf decrypts one value at path and adds it to the MAC.
func (f *file) leaf(path []string, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	enc := f.meta.encrypted(path, v)
	if enc {
		s, ok := v.(string)
		if !ok {
			return nil, &IntegrityError{File: f.name, Path: adOf(path), Err: fmt.Errorf("the value should be encrypted but is a plain %T", v)}
		}
		plain, err := decryptValue(s, f.key, adOf(path))
		if err != nil {
			return nil, &IntegrityError{File: f.name, Path: adOf(path), Err: err}
		}
		v = plain
		if b, err := macBytes(plain); err == nil && len(b) > 0 {
			*f.values = append(*f.values, string(b))
		}
	}
	if !f.meta.MACOnlyEncrypted || enc {
		b, err := macBytes(v)
		if err != nil {
			return nil, &FormatError{File: f.name, Err: fmt.Errorf("%s: %w", adOf(path), err)}
		}
		f.mac.Write(b)
	}
	return v, nil
}

// finish checks the MAC over every value read.
func (f *file) finish() error {
	want, err := decryptValue(f.meta.MAC, f.key, lastModifiedAD(f.meta))
	if err != nil {
		return &IntegrityError{File: f.name, Err: err}
	}
	got := macString(f.mac)
	if s, _ := want.(string); s != got {
		return &IntegrityError{File: f.name, Err: errors.New("the MAC does not match the values: the file was changed after it was encrypted")}
	}
	return nil
}

// adOf is the additional data a value is bound to: its path, "a:b:".
func adOf(path []string) string { return strings.Join(path, ":") + ":" }

// dataKey unwraps the file's data key with an age identity of keys.
func (m *Metadata) dataKey(name string, keys *Keyring) ([]byte, error) {
	noKey := &NoKeyError{File: name, Recipients: m.Recipients(), KeyTypes: m.KeyTypes(), Looked: keys.Looked()}
	if len(m.Groups) > 1 {
		noKey.Unsupported = fmt.Sprintf("encrypted with Shamir secret sharing over %d key groups, which kdrift does not support; encrypt it for age recipients in one group", len(m.Groups))
		return nil, noKey
	}
	if keys.Len() == 0 {
		return nil, noKey
	}
	for _, g := range m.Groups {
		for _, ak := range g.Age {
			r, err := age.Decrypt(armor.NewReader(strings.NewReader(ak.Enc)), keys.ids...)
			if err != nil {
				continue
			}
			key, err := io.ReadAll(io.LimitReader(r, 64))
			if err != nil || len(key) != 32 {
				return nil, &FormatError{File: name, Err: fmt.Errorf("the data key for %s is not a 32-byte AES key", ak.Recipient)}
			}
			return key, nil
		}
	}
	return nil, noKey
}

// openTree opens a YAML file (one or more documents) or a JSON file.
func (o *opener) tree(data []byte, f Format) ([]byte, bool, error) {
	name := o.name
	docs, err := decodeDocs(data)
	if err != nil {
		return nil, true, &FormatError{File: name, Err: err}
	}
	if f == JSON && len(docs) == 1 && isBinaryDoc(docs[0]) && FormatOf(name) == Binary {
		return o.binary(data)
	}
	found := false
	var noKey error
	for _, d := range docs {
		root := d
		if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
			root = root.Content[0]
		}
		if root.Kind != yaml.MappingNode {
			continue
		}
		metaNode := takeKey(root, "sops")
		if metaNode == nil || metaNode.Kind != yaml.MappingNode {
			continue
		}
		found = true
		var raw map[string]any
		if err := metaNode.Decode(&raw); err != nil {
			return nil, true, &FormatError{File: name, Err: fmt.Errorf("sops: %w", err)}
		}
		fl, err := o.begin(raw)
		var nk *NoKeyError
		if errors.As(err, &nk) {
			noKey = err
			continue
		}
		if err != nil {
			return nil, true, err
		}
		if err := fl.walk(root, nil); err != nil {
			return nil, true, err
		}
		if err := fl.finish(); err != nil {
			return nil, true, err
		}
		stripComments(d)
	}
	if !found {
		return data, false, nil
	}
	out, err := emitTree(docs, f)
	if err != nil {
		return nil, true, &FormatError{File: name, Err: err}
	}
	return out, true, noKey
}

// decodeDocs decodes every YAML document of data (JSON is one).
func decodeDocs(data []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, &n)
	}
}

// takeKey removes key from mapping n and returns its value, or nil.
func takeKey(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Kind == yaml.ScalarNode && n.Content[i].Value == key {
			v := n.Content[i+1]
			n.Content = slices.Delete(n.Content, i, i+2)
			return v
		}
	}
	return nil
}

// walk decrypts every value under n, in document order, as sops walks
// its tree: keys extend the path, list items share their list's path.
func (f *file) walk(n *yaml.Node, path []string) error {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			if err := f.walk(c, path); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return &FormatError{File: f.name, Err: fmt.Errorf("%sa key is not a string", adOf(path))}
			}
			if err := f.walk(n.Content[i+1], append(slices.Clone(path), k.Value)); err != nil {
				return err
			}
		}
	case yaml.AliasNode:
		return &FormatError{File: f.name, Err: fmt.Errorf("%s: YAML aliases are not supported in SOPS files", adOf(path))}
	case yaml.ScalarNode:
		var v any
		if n.Tag != "!!null" {
			if err := n.Decode(&v); err != nil {
				return &FormatError{File: f.name, Err: err}
			}
		}
		plain, err := f.leaf(path, v)
		if err != nil {
			return err
		}
		if plain != nil {
			setScalar(n, plain)
		}
	}
	return nil
}

// setScalar makes n hold v with v's YAML type.
func setScalar(n *yaml.Node, v any) {
	n.Style = 0
	switch x := v.(type) {
	case string:
		n.Tag, n.Value = "!!str", x
	case []byte:
		n.Tag, n.Value = "!!str", string(x)
	case int:
		n.Tag, n.Value = "!!int", strconv.Itoa(x)
	case float64:
		n.Tag, n.Value = "!!float", strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		n.Tag, n.Value = "!!bool", strconv.FormatBool(x)
	case time.Time:
		n.Tag, n.Value = "!!timestamp", x.Format(time.RFC3339Nano)
	}
}

// stripComments drops comments: sops encrypts them, and nothing reads them.
func stripComments(n *yaml.Node) {
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	for _, c := range n.Content {
		stripComments(c)
	}
}

func isBinaryDoc(d *yaml.Node) bool {
	root := d
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode || len(root.Content) != 4 {
		return false
	}
	keys := []string{root.Content[0].Value, root.Content[2].Value}
	slices.Sort(keys)
	return keys[0] == "data" && keys[1] == "sops"
}

// emitTree writes documents back as YAML, or JSON for a JSON file.
func emitTree(docs []*yaml.Node, f Format) ([]byte, error) {
	var buf bytes.Buffer
	if f == JSON {
		for _, d := range docs {
			if err := writeJSON(&buf, d); err != nil {
				return nil, err
			}
			buf.WriteByte('\n')
		}
		return buf.Bytes(), nil
	}
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			return nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// openBinary opens a file sops encrypted whole: {"data": ENC[…], "sops": …}.
func (o *opener) binary(data []byte) ([]byte, bool, error) {
	name := o.name
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || !isBinaryDoc(&doc) {
		return data, false, nil
	}
	root := doc.Content[0]
	metaNode := takeKey(root, "sops")
	var raw map[string]any
	if err := metaNode.Decode(&raw); err != nil {
		return nil, true, &FormatError{File: name, Err: fmt.Errorf("sops: %w", err)}
	}
	fl, err := o.begin(raw)
	if err != nil {
		var nk *NoKeyError
		if errors.As(err, &nk) {
			// Nothing of a whole-file encryption can be compared; the
			// ciphertext itself marks what it renders into.
			return []byte(root.Content[1].Value), true, err
		}
		return nil, true, err
	}
	v, err := fl.leaf([]string{"data"}, root.Content[1].Value)
	if err != nil {
		return nil, true, err
	}
	if err := fl.finish(); err != nil {
		return nil, true, err
	}
	b, _ := macBytes(v)
	return b, true, nil
}

// flatEntry is one line of a dotenv file or one key of an INI section.
type flatEntry struct {
	section string // INI only
	key     string
	value   string
}

// openFlat opens a dotenv or INI file: metadata in sops_-prefixed keys or
// a [sops] section, flattened.
func (o *opener) flat(data []byte, parse func([]byte) ([]flatEntry, map[string]string, error), emit func([]flatEntry) []byte) ([]byte, bool, error) {
	name := o.name
	entries, flat, err := parse(data)
	if err != nil {
		// Only a file that carries sops metadata is a broken SOPS file;
		// any other is kustomize's to judge.
		if !bytes.Contains(data, []byte("sops_mac")) && !bytes.Contains(data, []byte("[sops]")) {
			return data, false, nil
		}
		return nil, true, &FormatError{File: name, Err: err}
	}
	if len(flat) == 0 {
		return data, false, nil
	}
	raw, err := unflatten(flat)
	if err != nil {
		return nil, true, &FormatError{File: name, Err: err}
	}
	fl, err := o.begin(raw)
	if err != nil {
		var nk *NoKeyError
		if errors.As(err, &nk) {
			return emit(entries), true, err
		}
		return nil, true, err
	}
	for i, e := range entries {
		path := []string{e.key}
		if e.section != "" {
			path = []string{e.section, e.key}
		}
		v, err := fl.leaf(path, e.value)
		if err != nil {
			return nil, true, err
		}
		b, _ := macBytes(v)
		entries[i].value = string(b)
	}
	if err := fl.finish(); err != nil {
		return nil, true, err
	}
	return emit(entries), true, nil
}

// parseDotenv reads KEY=VALUE lines as sops does: # lines are comments,
// \n in a value is a newline, sops_ keys are the metadata.
func parseDotenv(data []byte) ([]flatEntry, map[string]string, error) {
	var entries []flatEntry
	flat := map[string]string{}
	for n, line := range bytes.Split(data, []byte("\n")) {
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(string(line), "=")
		if !ok {
			return nil, nil, fmt.Errorf("line %d is not KEY=VALUE", n+1)
		}
		v = strings.ReplaceAll(v, `\n`, "\n")
		if rest, ok := strings.CutPrefix(k, "sops_"); ok {
			flat[rest] = v
			continue
		}
		entries = append(entries, flatEntry{key: k, value: v})
	}
	return entries, flat, nil
}

func emitDotenv(entries []flatEntry) []byte {
	var b bytes.Buffer
	for _, e := range entries {
		fmt.Fprintf(&b, "%s=%s\n", e.key, strings.ReplaceAll(e.value, "\n", `\n`))
	}
	return b.Bytes()
}

// parseINI reads [section] and key = value lines; the [sops] section is
// the metadata, its values' \n being newlines.
func parseINI(data []byte) ([]flatEntry, map[string]string, error) {
	var entries []flatEntry
	flat := map[string]string{}
	section := "DEFAULT"
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = strings.TrimSpace(line[1 : len(line)-1])
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, nil, fmt.Errorf("line %d is not key = value", n+1)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			v = v[1 : len(v)-1]
		}
		if section == "sops" {
			flat[k] = strings.ReplaceAll(v, `\n`, "\n")
			continue
		}
		entries = append(entries, flatEntry{section: section, key: k, value: v})
	}
	return entries, flat, nil
}

func emitINI(entries []flatEntry) []byte {
	var b bytes.Buffer
	section := ""
	for _, e := range entries {
		if e.section != section {
			if e.section != "DEFAULT" || b.Len() > 0 {
				fmt.Fprintf(&b, "[%s]\n", e.section)
			}
			section = e.section
		}
		fmt.Fprintf(&b, "%s = %s\n", e.key, e.value)
	}
	return b.Bytes()
}
