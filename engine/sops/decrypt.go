package sops

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"filippo.io/age"
	"filippo.io/age/armor"
)

// maxFile bounds what Open parses: a repository is untrusted input.
const maxFile = 8 << 20

// Open reads file name (its path in the repository) and, when it is a
// SOPS file by its structure (see Detect), decrypts it with keys and
// returns the plaintext in its format, byte for byte as `sops --decrypt`
// prints it. A file without SOPS metadata comes back unchanged with
// encrypted false.
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
	format, ok := Detect(name, data)
	if !ok {
		return data, nil, false, nil
	}
	if len(data) > maxFile {
		return nil, nil, true, &FormatError{File: name, Err: fmt.Errorf("the file is larger than %d bytes", maxFile)}
	}
	t, err := load(format, data)
	if err != nil {
		return nil, nil, true, &FormatError{File: name, Err: fmt.Errorf("as %s: %w", format, err)}
	}
	key, err := t.meta.dataKey(name, keys)
	var nk *NoKeyError
	if errors.As(err, &nk) {
		if format == Binary {
			// Nothing of a whole-file encryption can be compared; the
			// ciphertext itself marks what it renders into.
			b, berr := binaryData(t.branches)
			if berr != nil {
				return nil, nil, true, &FormatError{File: name, Err: berr}
			}
			return b, nil, true, err
		}
		for i := range t.branches {
			t.branches[i] = stripComments(t.branches[i]).(branch)
		}
		b, eerr := emit(format, t.branches)
		if eerr != nil {
			return nil, nil, true, &FormatError{File: name, Err: eerr}
		}
		return b, nil, true, err
	}
	if err != nil {
		return nil, nil, true, err
	}
	if err := t.decrypt(name, key, &values); err != nil {
		return nil, nil, true, err
	}
	out, err = emit(format, t.branches)
	if err != nil {
		return nil, nil, true, &FormatError{File: name, Err: err}
	}
	return out, values, true, nil
}

// load reads data in format f and takes its metadata out, as sops'
// stores do (the metadata of the first document; the sops key removed
// from every one).
func load(f Format, data []byte) (*tree, error) {
	var branches []branch
	var err error
	switch f {
	case YAML:
		branches, err = loadYAML(data)
	case JSON, Binary:
		branches, err = loadJSON(data)
	case Dotenv:
		branches, err = loadDotenv(data)
	case INI:
		branches, err = loadINI(data)
	}
	if err != nil {
		return nil, err
	}
	if len(branches) == 0 {
		return nil, errors.New("the file is empty")
	}
	var raw map[string]any
	switch f {
	case Dotenv, INI:
		var flat map[string]string
		found := false
		if f == Dotenv {
			flat, found = dotenvMeta(branches)
		} else if flat, found, err = iniMeta(branches); err != nil {
			return nil, err
		}
		if !found {
			return nil, errors.New("no sops metadata")
		}
		if raw, err = unflatten(flat); err != nil {
			return nil, err
		}
	default:
		for bi, b := range branches {
			out := b[:0]
			for _, it := range b {
				if it.Key != "sops" {
					out = append(out, it)
					continue
				}
				if bi == 0 {
					if raw != nil {
						return nil, errors.New("more than one sops key")
					}
					mb, ok := it.Value.(branch)
					if !ok {
						return nil, errors.New("the sops key is not a map")
					}
					raw = toMap(mb)
				}
			}
			branches[bi] = out
		}
		if raw == nil {
			return nil, errors.New("the first document has no sops metadata (sops reads it from the first document)")
		}
	}
	m, err := parseMetadata(raw)
	if err != nil {
		return nil, err
	}
	return &tree{branches: branches, meta: m}, nil
}

// emit writes branches in format f, as sops' store for it does.
func emit(f Format, branches []branch) ([]byte, error) {
	switch f {
	case YAML:
		return emitYAML(branches)
	case JSON:
		return emitJSON(branches)
	case Dotenv:
		return emitDotenv(branches)
	case INI:
		return emitINI(branches)
	}
	return binaryData(branches)
}

// adOf is the additional data a value is bound to: its path, "a:b:".
func adOf(path []string) string { return strings.Join(path, ":") + ":" }

// dataKey unwraps the file's data key with an age identity of keys.
func (m *Metadata) dataKey(name string, keys *Keyring) ([]byte, error) {
	noKey := &NoKeyError{File: name, Recipients: m.Recipients(), KeyTypes: m.KeyTypes(), Looked: keys.Looked(), Refused: refusedRecipients(m.Recipients())}
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

// refusedRecipients names the recipients kdrift can never decrypt for, by
// design: SSH keys (kdrift reads no SSH private key) and age plugins
// (they run a program).
func refusedRecipients(rcps []string) []string {
	var out []string
	for _, r := range rcps {
		if why := recipientKind(r); why != "" {
			out = append(out, why)
		}
	}
	return out
}

// recipientKind describes r when it is an SSH or plugin recipient, else "".
func recipientKind(r string) string {
	short := r
	if len(short) > 32 {
		short = short[:32] + "…"
	}
	switch {
	case strings.HasPrefix(r, "ssh-ed25519 "), strings.HasPrefix(r, "ssh-rsa "):
		return fmt.Sprintf("%s is an SSH key (%s)", short, strings.Fields(r)[0])
	case strings.HasPrefix(r, "age1"):
		if _, err := age.ParseX25519Recipient(r); err == nil {
			return ""
		}
		hrp := r[:strings.LastIndexByte(r, '1')]
		if plugin := strings.TrimPrefix(hrp, "age1"); plugin != "" && plugin != hrp {
			return fmt.Sprintf("%s is for the age plugin age-plugin-%s", short, plugin)
		}
	}
	return ""
}
