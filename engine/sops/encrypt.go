package sops

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"filippo.io/age"
	"filippo.io/age/armor"
)

// EncryptOptions say how Encrypt encrypts, as the sops CLI's flags do. At
// most one of the rules may be set; none keeps values under keys ending
// in _unencrypted clear, as sops does.
type EncryptOptions struct {
	// Recipients are age public keys (age1…); at least one.
	Recipients []string
	// EncryptedRegex encrypts only values under a key matching it (sops
	// --encrypted-regex, e.g. ^(data|stringData)$).
	EncryptedRegex string
	// UnencryptedSuffix keeps values under a key ending in it clear.
	UnencryptedSuffix string
	// EncryptedCommentRegex encrypts only values after a comment matching
	// it.
	EncryptedCommentRegex string
	// MACOnlyEncrypted makes the MAC cover encrypted values only.
	MACOnlyEncrypted bool
	// Now is the lastmodified time (default time.Now).
	Now time.Time
}

// Version is the sops version Encrypt writes into files.
const Version = "3.13.3"

// Encrypt encrypts a file for age recipients in SOPS' format, as `sops
// --encrypt --age` does, in the format sops gives its name (YAML with
// every document under one MAC, JSON, dotenv, INI, or binary for any
// other name). It is how tests and the demo make SOPS files; kdrift
// itself only decrypts.
func Encrypt(name string, plain []byte, opts EncryptOptions) ([]byte, error) {
	if len(opts.Recipients) == 0 {
		return nil, errors.New("sops encrypt: no recipient")
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	m := &Metadata{
		LastModified:          opts.Now.UTC().Format(time.RFC3339),
		EncryptedRegex:        opts.EncryptedRegex,
		UnencryptedSuffix:     opts.UnencryptedSuffix,
		EncryptedCommentRegex: opts.EncryptedCommentRegex,
		MACOnlyEncrypted:      opts.MACOnlyEncrypted,
		Version:               Version,
	}
	rules := 0
	for _, r := range []string{m.EncryptedRegex, m.UnencryptedSuffix, m.EncryptedCommentRegex} {
		if r != "" {
			rules++
		}
	}
	if rules > 1 {
		return nil, errors.New("sops encrypt: set at most one of EncryptedRegex, UnencryptedSuffix and EncryptedCommentRegex")
	}
	if rules == 0 {
		m.UnencryptedSuffix = "_unencrypted"
	}
	if _, err := parseRegexes(m); err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	for _, r := range opts.Recipients {
		enc, err := wrapKey(key, r)
		if err != nil {
			return nil, err
		}
		m.Groups = []KeyGroup{{Age: append(groupAge(m), AgeKey{Recipient: r, Enc: enc})}}
	}
	f := FormatOf(name)
	var branches []branch
	var err error
	switch f {
	case YAML:
		branches, err = loadYAML(plain)
	case JSON:
		branches, err = loadJSON(plain)
	case Dotenv:
		branches, err = loadDotenv(plain)
	case INI:
		branches, err = loadINI(plain)
	default:
		branches = []branch{{{Key: "data", Value: string(plain)}}}
	}
	if err != nil {
		return nil, fmt.Errorf("sops encrypt: %s: %w", name, err)
	}
	t := &tree{branches: branches, meta: m}
	if m.MAC, err = t.encrypt(key); err != nil {
		return nil, fmt.Errorf("sops encrypt: %s: %w", name, err)
	}
	switch f {
	case Dotenv, INI:
		return emitFlat(f, t)
	case Binary:
		f = JSON
	}
	md := metaBranch(m)
	for i := range t.branches {
		t.branches[i] = append(t.branches[i], item{Key: "sops", Value: md})
	}
	return emit(f, t.branches)
}

func groupAge(m *Metadata) []AgeKey {
	if len(m.Groups) == 0 {
		return nil
	}
	return m.Groups[0].Age
}

// wrapKey encrypts the data key to an age X25519 recipient, armored.
func wrapKey(key []byte, recipient string) (string, error) {
	rcp, err := age.ParseX25519Recipient(recipient)
	if err != nil {
		return "", fmt.Errorf("sops encrypt: recipient %q: %w", recipient, err)
	}
	var buf bytes.Buffer
	aw := armor.NewWriter(&buf)
	w, err := age.Encrypt(aw, rcp)
	if err != nil {
		return "", err
	}
	if _, err := w.Write(key); err != nil {
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	if err := aw.Close(); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// metaFields are m's metadata as sops writes it: keys sorted, empty
// options left out.
func metaFields(m *Metadata) map[string]any {
	out := map[string]any{"lastmodified": m.LastModified, "mac": m.MAC, "version": m.Version}
	var ages []any
	for _, k := range groupAge(m) {
		ages = append(ages, map[string]any{"recipient": k.Recipient, "enc": k.Enc})
	}
	out["age"] = ages
	for k, v := range map[string]string{
		"unencrypted_suffix": m.UnencryptedSuffix, "encrypted_suffix": m.EncryptedSuffix,
		"unencrypted_regex": m.UnencryptedRegex, "encrypted_regex": m.EncryptedRegex,
		"unencrypted_comment_regex": m.UnencryptedCommentRegex, "encrypted_comment_regex": m.EncryptedCommentRegex,
	} {
		if v != "" {
			out[k] = v
		}
	}
	if m.MACOnlyEncrypted {
		out["mac_only_encrypted"] = true
	}
	return out
}

// metaBranch is the sops map of a YAML or JSON file.
func metaBranch(m *Metadata) branch {
	return goToBranch(metaFields(m)).(branch)
}

func goToBranch(v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b := make(branch, 0, len(keys))
		for _, k := range keys {
			b = append(b, item{Key: k, Value: goToBranch(x[k])})
		}
		return b
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = goToBranch(e)
		}
		return out
	}
	return v
}

// emitFlat writes a dotenv or INI file with its flattened metadata.
func emitFlat(f Format, t *tree) ([]byte, error) {
	fields := metaFields(t.meta)
	flat := map[string]string{}
	for k, v := range fields {
		if k == "age" {
			for i, a := range v.([]any) {
				for ak, av := range a.(map[string]any) {
					flat[fmt.Sprintf("age__list_%d__map_%s", i, ak)] = av.(string)
				}
			}
			continue
		}
		flat[k] = valToString(v)
	}
	keys := slices.Sorted(maps.Keys(flat))
	if f == Dotenv {
		b := t.branches[0]
		for _, k := range keys {
			b = append(b, item{Key: "sops_" + k, Value: flat[k]})
		}
		return emitDotenv([]branch{b})
	}
	var sec branch
	for _, k := range keys {
		sec = append(sec, item{Key: k, Value: strings.ReplaceAll(flat[k], "\n", `\n`)})
	}
	b := append(t.branches[0], item{Key: "sops", Value: sec})
	return emitINI([]branch{b})
}
