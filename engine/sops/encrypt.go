package sops

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"filippo.io/age"
	"filippo.io/age/armor"
	"gopkg.in/yaml.v3"
)

// EncryptOptions say how Encrypt encrypts, as the sops CLI's flags do.
type EncryptOptions struct {
	// Recipients are age public keys (age1…); at least one.
	Recipients []string
	// EncryptedRegex encrypts only values under a key matching it (sops
	// --encrypted-regex, e.g. ^(data|stringData)$); empty encrypts every
	// value but those under keys ending in _unencrypted.
	EncryptedRegex string
	// Now is the lastmodified time (default time.Now).
	Now time.Time
}

// Encrypt encrypts a YAML (every document), JSON, dotenv, INI or other
// (binary) file for age recipients in SOPS' format, as `sops --encrypt
// --age` does. It is how tests and the demo make SOPS files; kdrift itself
// only decrypts.
func Encrypt(name string, plain []byte, opts EncryptOptions) ([]byte, error) {
	if len(opts.Recipients) == 0 {
		return nil, errors.New("sops encrypt: no recipient")
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	meta := map[string]any{}
	m := &Metadata{LastModified: opts.Now.UTC().Format(time.RFC3339), EncryptedRegex: opts.EncryptedRegex}
	if opts.EncryptedRegex == "" {
		m.UnencryptedSuffix = "_unencrypted"
	}
	if _, err := parseRegexes(m); err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	var ageKeys []any
	for _, r := range opts.Recipients {
		rcp, err := age.ParseX25519Recipient(r)
		if err != nil {
			return nil, fmt.Errorf("sops encrypt: recipient %q: %w", r, err)
		}
		var buf bytes.Buffer
		aw := armor.NewWriter(&buf)
		w, err := age.Encrypt(aw, rcp)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(key); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		if err := aw.Close(); err != nil {
			return nil, err
		}
		ageKeys = append(ageKeys, map[string]any{"recipient": r, "enc": buf.String()})
	}
	meta["age"] = ageKeys
	meta["lastmodified"] = m.LastModified
	if m.EncryptedRegex != "" {
		meta["encrypted_regex"] = m.EncryptedRegex
	} else {
		meta["unencrypted_suffix"] = m.UnencryptedSuffix
	}
	meta["version"] = "3.13.3"
	h := macHash(m)
	reset := func() { h = macHash(m) }
	seal := func(path []string, v any) (any, error) {
		if v == nil {
			return nil, nil
		}
		b, err := macBytes(v)
		if err != nil {
			return nil, err
		}
		h.Write(b)
		if !m.encrypted(path, v) {
			return v, nil
		}
		return encryptValue(v, key, adOf(path))
	}
	mac := func() (string, error) { return encryptValue(macString(h), key, lastModifiedAD(m)) }
	switch FormatOf(name) {
	case YAML, JSON:
		return encryptTree(plain, FormatOf(name), meta, reset, seal, mac)
	case Binary:
		// The whole file is one value, under "data", in a JSON document.
		wrapped, err := json.Marshal(map[string]string{"data": string(plain)})
		if err != nil {
			return nil, err
		}
		return encryptTree(wrapped, JSON, meta, reset, seal, mac)
	case INI, Dotenv:
		parse, emit, prefix, sep, header := parseINI, emitINI, "", " = ", "[sops]\n"
		if FormatOf(name) == Dotenv {
			parse, emit, prefix, sep, header = parseDotenv, emitDotenv, "sops_", "=", ""
		}
		entries, _, err := parse(plain)
		if err != nil {
			return nil, err
		}
		for i, e := range entries {
			path := []string{e.key}
			if e.section != "" {
				path = []string{e.section, e.key}
			}
			v, err := seal(path, e.value)
			if err != nil {
				return nil, err
			}
			entries[i].value = v.(string)
		}
		macv, err := mac()
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		b.Write(emit(entries))
		b.WriteString(header)
		line := func(k, v string) { fmt.Fprintf(&b, "%s%s%s%s\n", prefix, k, sep, strings.ReplaceAll(v, "\n", `\n`)) }
		for i, k := range ageKeys {
			km := k.(map[string]any)
			line(fmt.Sprintf("age__list_%d__map_enc", i), km["enc"].(string))
			line(fmt.Sprintf("age__list_%d__map_recipient", i), km["recipient"].(string))
		}
		if m.EncryptedRegex != "" {
			line("encrypted_regex", m.EncryptedRegex)
		}
		line("lastmodified", m.LastModified)
		line("mac", macv)
		if m.UnencryptedSuffix != "" {
			line("unencrypted_suffix", m.UnencryptedSuffix)
		}
		line("version", meta["version"].(string))
		return b.Bytes(), nil
	}
	return nil, fmt.Errorf("sops encrypt: %s: unknown format", name)
}

func encryptTree(plain []byte, f Format, meta map[string]any, reset func(), seal func([]string, any) (any, error), mac func() (string, error)) ([]byte, error) {
	in, err := decodeDocs(plain)
	if err != nil {
		return nil, err
	}
	var docs []*yaml.Node
	for _, doc := range in {
		reset()
		var walk func(n *yaml.Node, path []string) error
		walk = func(n *yaml.Node, path []string) error {
			switch n.Kind {
			case yaml.DocumentNode, yaml.SequenceNode:
				for _, c := range n.Content {
					if err := walk(c, path); err != nil {
						return err
					}
				}
			case yaml.MappingNode:
				for i := 0; i+1 < len(n.Content); i += 2 {
					if err := walk(n.Content[i+1], append(append([]string(nil), path...), n.Content[i].Value)); err != nil {
						return err
					}
				}
			case yaml.ScalarNode:
				if n.Tag == "!!null" {
					return nil
				}
				var v any
				if err := n.Decode(&v); err != nil {
					return err
				}
				out, err := seal(path, v)
				if err != nil {
					return err
				}
				if s, ok := out.(string); ok && IsCiphertext(s) {
					n.Tag, n.Value, n.Style = "!!str", s, 0
				}
			}
			return nil
		}
		if err := walk(doc, nil); err != nil {
			return nil, err
		}
		macv, err := mac()
		if err != nil {
			return nil, err
		}
		meta["mac"] = macv
		var mn yaml.Node
		if err := mn.Encode(meta); err != nil {
			return nil, err
		}
		root := doc.Content[0]
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "sops"}, &mn)
		docs = append(docs, doc)
	}
	return emitTree(docs, f)
}
