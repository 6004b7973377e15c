// Package sops reads files encrypted with SOPS (getsops/sops) for age keys:
// it recognises them, decrypts them in memory (AES-256-GCM per value with
// the file's data key, the data key unwrapped with an age identity, the
// MAC checked), and finds ciphertext left in an object so that it is never
// applied. It implements the documented SOPS file format itself rather
// than importing the sops module, whose root package links every cloud KMS,
// Vault and PGP client: kdrift never uses a key source that needs the
// network or a program (ARCHITECTURE.md, "Trust model").
//
// The package never writes plaintext anywhere: Decrypt returns bytes that
// the caller keeps in memory.
package sops

import (
	"encoding/base64"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Format is a file format SOPS encrypts.
type Format int

// Formats SOPS writes; the format follows the file name as the sops CLI
// decides it.
const (
	// Binary is any other file: a JSON document holding the whole file,
	// encrypted, under "data".
	Binary Format = iota
	// YAML is .yaml and .yml, one or more documents.
	YAML
	// JSON is .json.
	JSON
	// Dotenv is .env: KEY=VALUE lines.
	Dotenv
	// INI is .ini.
	INI
)

// String names the format as the sops CLI's --input-type does.
func (f Format) String() string {
	switch f {
	case YAML:
		return "yaml"
	case JSON:
		return "json"
	case Dotenv:
		return "dotenv"
	case INI:
		return "ini"
	}
	return "binary"
}

// FormatOf is the format sops gives a file by its name.
func FormatOf(name string) Format {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml":
		return YAML
	case ".json":
		return JSON
	case ".env":
		return Dotenv
	case ".ini":
		return INI
	}
	return Binary
}

// encPrefix starts every value SOPS encrypted.
const encPrefix = "ENC["

// IsCiphertext reports whether s is a value SOPS encrypted:
// ENC[CIPHER,data:…], whatever the cipher.
func IsCiphertext(s string) bool {
	s = strings.TrimSpace(s)
	return strings.HasPrefix(s, encPrefix) && strings.HasSuffix(s, "]") && strings.Contains(s, ",data:")
}

// LooksEncrypted is a cheap test for a file worth parsing as SOPS: it
// names the sops metadata and holds a MAC or an encrypted value.
func LooksEncrypted(data []byte) bool {
	s := string(data)
	return strings.Contains(s, "sops") && (strings.Contains(s, "ENC[AES256_GCM,") || strings.Contains(s, "mac"))
}

// Ciphertext is an encrypted value found in an object.
type Ciphertext struct {
	// Path is the field as a JSON pointer, e.g. /data/DB_PASSWORD; "/sops"
	// for left-over SOPS metadata.
	Path string
	// Value is the encrypted value as it appears (base64-decoded for a
	// Secret's data).
	Value string
}

// Find returns the first encrypted value in obj (an object as
// unstructured holds it), looking through every string, base64-decoded
// values under a Secret's data, and a top-level sops map. Fields are
// visited in sorted order, so the answer is stable.
func Find(obj map[string]any) (Ciphertext, bool) {
	if m, ok := obj["sops"].(map[string]any); ok && m != nil {
		return Ciphertext{Path: "/sops", Value: firstString(m)}, true
	}
	secret := obj["kind"] == "Secret" && (obj["apiVersion"] == "v1")
	return find(obj, "", secret, 0)
}

func find(v any, ptr string, secret bool, depth int) (Ciphertext, bool) {
	switch x := v.(type) {
	case string:
		if IsCiphertext(x) {
			return Ciphertext{Path: ptr, Value: strings.TrimSpace(x)}, true
		}
		if secret && depth == 2 && strings.HasPrefix(ptr, "/data/") {
			if raw, err := base64.StdEncoding.DecodeString(x); err == nil && IsCiphertext(string(raw)) {
				return Ciphertext{Path: ptr, Value: strings.TrimSpace(string(raw))}, true
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if c, ok := find(x[k], ptr+"/"+escapePointer(k), secret, depth+1); ok {
				return c, true
			}
		}
	case []any:
		for i, e := range x {
			if c, ok := find(e, ptr+"/"+strconv.Itoa(i), secret, depth+1); ok {
				return c, true
			}
		}
	}
	return Ciphertext{}, false
}

func firstString(m map[string]any) string {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if s, ok := m[k].(string); ok {
			return s
		}
	}
	return ""
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// Mask replaces a secret value wherever kdrift would otherwise show it.
const Mask = "●●●●"

// minScrub is the shortest value Scrub replaces: shorter ones (a port, a
// flag) would garble ordinary words of a message.
const minScrub = 4

// Scrub replaces every secret value in msg, and its base64 form, with
// Mask; longer values first, so that one containing another goes whole.
func Scrub(msg string, secrets []string) string {
	if msg == "" || len(secrets) == 0 {
		return msg
	}
	var all []string
	for _, s := range secrets {
		if len(s) < minScrub {
			continue
		}
		all = append(all, s, base64.StdEncoding.EncodeToString([]byte(s)))
	}
	slices.SortFunc(all, func(a, b string) int { return len(b) - len(a) })
	for _, s := range all {
		msg = strings.ReplaceAll(msg, s, Mask)
	}
	return msg
}
