package sops

import (
	"crypto/sha512"
	"errors"
	"fmt"
	"hash"
	"strings"
	"time"
)

// The tree is the shape sops gives every file before it encrypts or
// decrypts it (its sops.Tree): a file is one or more branches (YAML
// documents; one for the other formats), a branch an ordered list of
// items whose key is a string or a comment, values scalars, branches or
// lists. Comments are items too, because sops encrypts them and lets them
// decide, through encrypted_comment_regex and unencrypted_comment_regex,
// which values are encrypted. Keeping sops' shape is what makes the MAC
// (one over every branch, in order) and the output match sops byte for
// byte.

// comment is a comment line without its '#', in a branch (as a key) or a
// list (as an element). Inline marks a comment after a value on its line.
type comment struct {
	Value  string
	Inline bool
}

// item is one key of a branch, or a comment (Key a comment, Value nil).
type item struct {
	Key   any // string or comment
	Value any
}

// branch is an ordered mapping: one document, or a nested map.
type branch []item

// tree is a file as sops models it, with its metadata once read.
type tree struct {
	branches []branch
	meta     *Metadata
}

// leafFunc sees each leaf (scalar or comment) with its path and the
// comments above it, per level, and returns what replaces it.
type leafFunc func(v any, path []string, comments [][]string) (any, error)

// walk visits every leaf of every branch in document order, as sops'
// TreeBranch.walkBranch does.
func (t *tree) walk(f leafFunc) error {
	for _, b := range t.branches {
		if err := walkBranch(b, nil, nil, f); err != nil {
			return err
		}
	}
	return nil
}

func walkValue(v any, path []string, stack [][]string, f leafFunc) (any, error) {
	switch x := v.(type) {
	case string, int, bool, float64, time.Time, comment:
		return f(x, path, stack)
	case []byte:
		return f(string(x), path, stack)
	case branch:
		return x, walkBranch(x, path, stack, f)
	case []any:
		return x, walkList(x, path, stack, f)
	case nil:
		return nil, nil
	}
	return nil, fmt.Errorf("%sa value of type %T is not something sops encrypts", adOf(path), v)
}

func walkList(l []any, path []string, stack [][]string, f leafFunc) error {
	stack = append(stack[:len(stack):len(stack)], nil)
	top := len(stack) - 1
	for i, v := range l {
		c, isComment := v.(comment)
		if isComment {
			stack[top] = append(stack[top], c.Value)
		}
		nv, err := walkValue(v, path, stack, f)
		if err != nil {
			return err
		}
		l[i] = nv
		if !isComment {
			stack[top] = nil
		}
	}
	return nil
}

func walkBranch(b branch, path []string, stack [][]string, f leafFunc) error {
	stack = append(stack[:len(stack):len(stack)], nil)
	top := len(stack) - 1
	for i, it := range b {
		if c, ok := it.Key.(comment); ok {
			stack[top] = append(stack[top], c.Value)
			nv, err := walkValue(c, path, stack, f)
			if err != nil {
				return err
			}
			switch x := nv.(type) {
			case comment:
				b[i].Key = x
			case string:
				b[i].Key = comment{Value: x, Inline: c.Inline}
			default:
				return fmt.Errorf("a comment became a %T", nv)
			}
			continue
		}
		c, valueIsComment := it.Value.(comment)
		if valueIsComment {
			stack[top] = append(stack[top], c.Value)
		}
		key, ok := it.Key.(string)
		if !ok {
			return fmt.Errorf("%sa key of type %T: sops supports string keys only", adOf(path), it.Key)
		}
		nv, err := walkValue(it.Value, append(path[:len(path):len(path)], key), stack, f)
		if err != nil {
			return err
		}
		b[i].Value = nv
		if !valueIsComment {
			stack[top] = nil
		}
	}
	return nil
}

// shouldEncrypt says whether sops encrypts the leaf at path under the
// comments stack, by the file's suffix, regex and comment-regex rules, in
// sops' order (a later rule overrides an earlier one).
func (m *Metadata) shouldEncrypt(path []string, stack [][]string, isComment bool) bool {
	enc := true
	anyPath := func(match func(string) bool) bool {
		for _, p := range path {
			if match(p) {
				return true
			}
		}
		return false
	}
	if m.UnencryptedSuffix != "" && anyPath(func(p string) bool { return strings.HasSuffix(p, m.UnencryptedSuffix) }) {
		enc = false
	}
	if m.EncryptedSuffix != "" {
		enc = anyPath(func(p string) bool { return strings.HasSuffix(p, m.EncryptedSuffix) })
	}
	if m.unencryptedRe != nil && anyPath(m.unencryptedRe.MatchString) {
		enc = false
	}
	if m.encryptedRe != nil {
		enc = anyPath(m.encryptedRe.MatchString)
	}
	if m.unencryptedCommentRe != nil {
	unenc:
		for _, cs := range stack {
			for _, c := range cs {
				if m.unencryptedCommentRe.MatchString(c) {
					enc = false
					break unenc
				}
			}
		}
	}
	if m.encryptedCommentRe != nil {
		enc = false
		last := len(stack) - 1
	encd:
		for i, cs := range stack {
			for j, c := range cs {
				// The comment that matches is itself left clear: only
				// what follows it is encrypted.
				if isComment && i == last && j == len(stack[last])-1 {
					continue
				}
				if m.encryptedCommentRe.MatchString(c) {
					enc = true
					break encd
				}
			}
		}
	}
	return enc
}

// errMAC is a MAC that does not match the values.
var errMAC = errors.New("the MAC does not match the values: the file was changed after it was encrypted")

// decrypt decrypts every value of t with key in place, collecting the
// plaintexts in values, and checks the one MAC over all branches.
func (t *tree) decrypt(file string, key []byte, values *[]string) error {
	m := t.meta
	h := macHash(m)
	err := t.walk(func(v any, path []string, stack [][]string) (any, error) {
		c, isComment := v.(comment)
		enc := m.shouldEncrypt(path, stack, isComment)
		out := v
		if enc {
			switch {
			case isComment:
				// sops keeps a comment that does not decrypt as it is
				// (written before sops encrypted comments).
				if p, err := decryptValue(c.Value, key, adOf(path)); err == nil {
					out = p
				}
			default:
				s, ok := v.(string)
				if !ok {
					return nil, &IntegrityError{File: file, Path: adOf(path), Err: fmt.Errorf("the value should be encrypted but is a plain %T", v)}
				}
				p, err := decryptValue(s, key, adOf(path))
				if err != nil {
					return nil, &IntegrityError{File: file, Path: adOf(path), Err: err}
				}
				out = p
				if b, err := macBytes(p); err == nil && len(b) > 0 {
					*values = append(*values, string(b))
				}
			}
		}
		if _, isC := out.(comment); (!m.MACOnlyEncrypted || enc) && !isC {
			b, err := macBytes(out)
			if err != nil {
				return nil, &FormatError{File: file, Err: fmt.Errorf("%s %w", adOf(path), err)}
			}
			h.Write(b)
		}
		return out, nil
	})
	if err != nil {
		return err
	}
	want, err := decryptValue(m.MAC, key, lastModifiedAD(m))
	if err != nil {
		return &IntegrityError{File: file, Err: err}
	}
	if s, _ := want.(string); s != macString(h) {
		return &IntegrityError{File: file, Err: errMAC}
	}
	return nil
}

// encrypt encrypts every value of t that m's rules select with key in
// place and returns the encrypted MAC over all branches, as sops'
// Tree.Encrypt does.
func (t *tree) encrypt(key []byte) (string, error) {
	m := t.meta
	h := macHash(m)
	err := t.walk(func(v any, path []string, stack [][]string) (any, error) {
		_, isComment := v.(comment)
		enc := m.shouldEncrypt(path, stack, isComment)
		if (!m.MACOnlyEncrypted || enc) && !isComment {
			b, err := macBytes(v)
			if err != nil {
				return nil, err
			}
			h.Write(b)
		}
		if !enc {
			return v, nil
		}
		return encryptValue(v, key, adOf(path))
	})
	if err != nil {
		return "", err
	}
	return encryptValue(macString(h), key, lastModifiedAD(m))
}

// macHash starts the MAC of a file with metadata m.
func macHash(m *Metadata) hash.Hash {
	h := sha512.New()
	if m.MACOnlyEncrypted {
		h.Write(macOnlyEncryptedInit)
	}
	return h
}

// stripComments drops every comment of b, recursively.
func stripComments(v any) any {
	switch x := v.(type) {
	case branch:
		out := x[:0]
		for _, it := range x {
			if _, ok := it.Key.(comment); ok {
				continue
			}
			it.Value = stripComments(it.Value)
			out = append(out, it)
		}
		return out
	case []any:
		out := x[:0]
		for _, e := range x {
			if _, ok := e.(comment); ok {
				continue
			}
			out = append(out, stripComments(e))
		}
		return out
	}
	return v
}

// toMap turns a branch into the map the metadata is read from, comments
// dropped, as sops' sopsToGoMap does.
func toMap(b branch) map[string]any {
	out := map[string]any{}
	for _, it := range b {
		k, ok := it.Key.(string)
		if !ok {
			continue
		}
		out[k] = toGo(it.Value)
	}
	return out
}

func toGo(v any) any {
	switch x := v.(type) {
	case branch:
		return toMap(x)
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			if _, ok := e.(comment); ok {
				continue
			}
			out = append(out, toGo(e))
		}
		return out
	}
	return v
}
