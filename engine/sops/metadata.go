package sops

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Metadata is the sops section of an encrypted file.
type Metadata struct {
	// LastModified is when the file was last encrypted, as sops formats it
	// (RFC 3339); the MAC is bound to it.
	LastModified string
	// MAC is the encrypted SHA-512 of the plaintext values.
	MAC string
	// Version is the sops version that wrote the file.
	Version string
	// Groups are the key groups; a file without key_groups has one, made
	// of its top-level keys. More than one group means Shamir secret
	// sharing.
	Groups []KeyGroup
	// ShamirThreshold is how many groups must agree (0: all of them).
	ShamirThreshold int

	UnencryptedSuffix       string
	EncryptedSuffix         string
	UnencryptedRegex        string
	EncryptedRegex          string
	UnencryptedCommentRegex string
	EncryptedCommentRegex   string
	// MACOnlyEncrypted says the MAC covers only encrypted values.
	MACOnlyEncrypted bool

	unencryptedRe, encryptedRe               *regexp.Regexp
	unencryptedCommentRe, encryptedCommentRe *regexp.Regexp
}

// KeyGroup is one group of master keys, each holding the data key.
type KeyGroup struct {
	// Age are the age recipients and the data key encrypted to each.
	Age []AgeKey
	// Other counts the master keys of other types (kms, gcp_kms, azure_kv,
	// hc_vault, hckms, pgp), which kdrift never uses.
	Other map[string]int
}

// AgeKey is the data key encrypted to one age recipient.
type AgeKey struct {
	Recipient string
	// Enc is the armored age file holding the data key.
	Enc string
}

// otherKeyTypes are the master key types kdrift recognises and never
// uses: each needs the network (a cloud KMS, Vault) or a program (gpg).
var otherKeyTypes = []string{"kms", "gcp_kms", "azure_kv", "hc_vault", "hckms", "pgp"}

// Recipients lists every age recipient of the file.
func (m *Metadata) Recipients() []string {
	var out []string
	for _, g := range m.Groups {
		for _, k := range g.Age {
			out = append(out, k.Recipient)
		}
	}
	return out
}

// KeyTypes lists the master key types the file has, age first.
func (m *Metadata) KeyTypes() []string {
	seen := map[string]bool{}
	var out []string
	for _, g := range m.Groups {
		if len(g.Age) > 0 && !seen["age"] {
			seen["age"] = true
			out = append(out, "age")
		}
		for _, t := range otherKeyTypes {
			if g.Other[t] > 0 && !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// parseMetadata reads the sops section, as a YAML or JSON map or as the
// map unflattened from dotenv or INI keys.
func parseMetadata(raw map[string]any) (*Metadata, error) {
	m := &Metadata{}
	str := func(k string) string {
		switch v := raw[k].(type) {
		case string:
			return v
		case nil:
			return ""
		default:
			return fmt.Sprint(v)
		}
	}
	m.LastModified = str("lastmodified")
	m.MAC = str("mac")
	m.Version = str("version")
	m.UnencryptedSuffix = str("unencrypted_suffix")
	m.EncryptedSuffix = str("encrypted_suffix")
	m.UnencryptedRegex = str("unencrypted_regex")
	m.EncryptedRegex = str("encrypted_regex")
	m.UnencryptedCommentRegex = str("unencrypted_comment_regex")
	m.EncryptedCommentRegex = str("encrypted_comment_regex")
	switch v := raw["mac_only_encrypted"].(type) {
	case bool:
		m.MACOnlyEncrypted = v
	case string:
		m.MACOnlyEncrypted, _ = strconv.ParseBool(v)
	}
	if t := str("shamir_threshold"); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil {
			return nil, fmt.Errorf("sops.shamir_threshold %q is not a number", t)
		}
		m.ShamirThreshold = n
	}
	if m.MAC == "" {
		return nil, fmt.Errorf("the sops section has no mac: the file is not a complete SOPS file")
	}
	if _, err := time.Parse(time.RFC3339, m.LastModified); err != nil {
		return nil, fmt.Errorf("sops.lastmodified %q is not an RFC 3339 time", m.LastModified)
	}
	if groups, ok := raw["key_groups"].([]any); ok {
		for i, g := range groups {
			gm, ok := g.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("sops.key_groups[%d] is not a map", i)
			}
			kg, err := parseGroup(gm)
			if err != nil {
				return nil, fmt.Errorf("sops.key_groups[%d]: %w", i, err)
			}
			m.Groups = append(m.Groups, kg)
		}
	} else {
		kg, err := parseGroup(raw)
		if err != nil {
			return nil, fmt.Errorf("sops: %w", err)
		}
		m.Groups = []KeyGroup{kg}
	}
	if len(m.Recipients()) == 0 && len(m.KeyTypes()) == 0 {
		return nil, fmt.Errorf("the sops section names no key: the file is not a complete SOPS file")
	}
	rules := 0
	for _, r := range []string{m.UnencryptedSuffix, m.EncryptedSuffix, m.UnencryptedRegex, m.EncryptedRegex, m.UnencryptedCommentRegex, m.EncryptedCommentRegex} {
		if r != "" {
			rules++
		}
	}
	switch {
	case rules > 1:
		return nil, fmt.Errorf("the sops section sets more than one of encrypted_suffix, unencrypted_suffix, encrypted_regex, unencrypted_regex, encrypted_comment_regex and unencrypted_comment_regex, which sops refuses")
	case rules == 0:
		// Files written before sops had these options leave them all
		// empty; sops then keeps keys ending in _unencrypted clear.
		m.UnencryptedSuffix = "_unencrypted"
	}
	return parseRegexes(m)
}

// parseRegexes compiles the file's regex rules.
func parseRegexes(m *Metadata) (*Metadata, error) {
	var err error
	if m.UnencryptedRegex != "" {
		if m.unencryptedRe, err = regexp.Compile(m.UnencryptedRegex); err != nil {
			return nil, fmt.Errorf("sops.unencrypted_regex: %w", err)
		}
	}
	if m.EncryptedRegex != "" {
		if m.encryptedRe, err = regexp.Compile(m.EncryptedRegex); err != nil {
			return nil, fmt.Errorf("sops.encrypted_regex: %w", err)
		}
	}
	if m.UnencryptedCommentRegex != "" {
		if m.unencryptedCommentRe, err = regexp.Compile(m.UnencryptedCommentRegex); err != nil {
			return nil, fmt.Errorf("sops.unencrypted_comment_regex: %w", err)
		}
	}
	if m.EncryptedCommentRegex != "" {
		if m.encryptedCommentRe, err = regexp.Compile(m.EncryptedCommentRegex); err != nil {
			return nil, fmt.Errorf("sops.encrypted_comment_regex: %w", err)
		}
	}
	return m, nil
}

func parseGroup(raw map[string]any) (KeyGroup, error) {
	kg := KeyGroup{Other: map[string]int{}}
	if list, ok := raw["age"].([]any); ok {
		for i, e := range list {
			em, ok := e.(map[string]any)
			if !ok {
				return kg, fmt.Errorf("age[%d] is not a map", i)
			}
			rcp, _ := em["recipient"].(string)
			enc, _ := em["enc"].(string)
			if rcp == "" || enc == "" {
				return kg, fmt.Errorf("age[%d] needs a recipient and an enc", i)
			}
			kg.Age = append(kg.Age, AgeKey{Recipient: rcp, Enc: enc})
		}
	}
	for _, t := range otherKeyTypes {
		if list, ok := raw[t].([]any); ok {
			kg.Other[t] = len(list)
		}
	}
	return kg, nil
}

// unflatten turns the flat metadata keys of dotenv and INI files
// (age__list_0__map_recipient) back into the nested map YAML has.
func unflatten(flat map[string]string) (map[string]any, error) {
	root := map[string]any{}
	for _, key := range slices.Sorted(maps.Keys(flat)) {
		toks, err := flatTokens(key)
		if err != nil {
			return nil, err
		}
		var cur any = root
		for i, t := range toks {
			last := i == len(toks)-1
			switch c := cur.(type) {
			case map[string]any:
				name, ok := t.(string)
				if !ok {
					return nil, fmt.Errorf("sops metadata key %q mixes a list and a map", key)
				}
				if last {
					c[name] = flat[key]
					break
				}
				next, ok := c[name]
				if !ok {
					next = newContainer(toks[i+1])
					c[name] = next
				}
				cur = next
			case *[]any:
				idx, ok := t.(int)
				if !ok {
					return nil, fmt.Errorf("sops metadata key %q mixes a list and a map", key)
				}
				for len(*c) <= idx {
					*c = append(*c, nil)
				}
				if last {
					(*c)[idx] = flat[key]
					break
				}
				if (*c)[idx] == nil {
					(*c)[idx] = newContainer(toks[i+1])
				}
				cur = (*c)[idx]
			default:
				return nil, fmt.Errorf("sops metadata key %q mixes a value and a list or map", key)
			}
		}
	}
	return derefLists(root).(map[string]any), nil
}

// newContainer is what holds token t: a map for a name, a list for an
// index (a pointer, so that appending is seen by its parent).
func newContainer(t any) any {
	if _, ok := t.(int); ok {
		return &[]any{}
	}
	return map[string]any{}
}

func derefLists(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = derefLists(e)
		}
		return x
	case *[]any:
		out := make([]any, len(*x))
		for i, e := range *x {
			out[i] = derefLists(e)
		}
		return out
	}
	return v
}

const (
	flatMap  = "__map_"
	flatList = "__list_"
)

// flatTokens splits age__list_0__map_recipient into "age", 0, "recipient".
func flatTokens(key string) ([]any, error) {
	var toks []any
	rest := key
	i := strings.Index(rest, "__")
	first := rest
	if i >= 0 {
		first, rest = rest[:i], rest[i:]
	} else {
		rest = ""
	}
	toks = append(toks, first)
	for rest != "" {
		switch {
		case strings.HasPrefix(rest, flatList):
			rest = rest[len(flatList):]
			j := 0
			for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
				j++
			}
			n, err := strconv.Atoi(rest[:j])
			if err != nil || n > 1000 {
				return nil, fmt.Errorf("sops metadata key %q has a bad list index", key)
			}
			toks = append(toks, n)
			rest = rest[j:]
		case strings.HasPrefix(rest, flatMap):
			rest = rest[len(flatMap):]
			j := strings.Index(rest, "__")
			for j >= 0 && !strings.HasPrefix(rest[j:], flatMap) && !strings.HasPrefix(rest[j:], flatList) {
				k := strings.Index(rest[j+2:], "__")
				if k < 0 {
					j = -1
					break
				}
				j += 2 + k
			}
			if j < 0 {
				toks = append(toks, rest)
				rest = ""
			} else {
				toks = append(toks, rest[:j])
				rest = rest[j:]
			}
		default:
			return nil, fmt.Errorf("sops metadata key %q is not in sops' flattened form", key)
		}
	}
	return toks, nil
}
