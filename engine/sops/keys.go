package sops

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"filippo.io/age"
)

// Keyring holds the age identities kdrift decrypts with, and says where it
// looked for them. The zero value holds no identity. A Keyring is not
// changed after it is built, so it is safe for concurrent use.
type Keyring struct {
	ids []age.Identity
	// looked names every place consulted, in order: "SOPS_AGE_KEY",
	// "SOPS_AGE_KEY_FILE (/path)", "~/.config/sops/age/keys.txt (absent)",
	// "Secret kdrift/sops-age".
	looked []string
	// sum identifies the identities, so that a cache of decrypted renders
	// can tell a new keyring from the old one.
	sum [sha256.Size]byte
}

// Environment variables and the default key file, as the sops CLI reads
// them.
const (
	EnvAgeKey     = "SOPS_AGE_KEY"
	EnvAgeKeyFile = "SOPS_AGE_KEY_FILE"
	// EnvAgeKeyCmd names a program sops runs for keys; kdrift never
	// runs it.
	EnvAgeKeyCmd = "SOPS_AGE_KEY_CMD"
	// EnvAgeSSHKeyFile names an SSH private key sops decrypts with;
	// kdrift never reads it.
	EnvAgeSSHKeyFile = "SOPS_AGE_SSH_PRIVATE_KEY_FILE"
	// DefaultKeyFile is under $XDG_CONFIG_HOME (else ~/.config).
	DefaultKeyFile = "sops/age/keys.txt"
)

// LoadKeyring reads age identities from the places sops reads them:
// SOPS_AGE_KEY (identities themselves), SOPS_AGE_KEY_FILE (a file of
// them) and $XDG_CONFIG_HOME/sops/age/keys.txt (~/.config when unset);
// every place found adds its identities. getenv is os.Getenv outside
// tests. A place that is set but cannot be read or parsed is an error
// that names it (never the key material). SOPS_AGE_KEY_CMD and age
// plugins are never used: they run programs.
func LoadKeyring(getenv func(string) string) (*Keyring, error) {
	k := &Keyring{}
	if getenv(EnvAgeKeyCmd) != "" {
		k.looked = append(k.looked, EnvAgeKeyCmd+" (set, not run: kdrift refuses by design to run a program for keys; put the identities in "+EnvAgeKey+" or "+EnvAgeKeyFile+")")
	}
	if getenv(EnvAgeSSHKeyFile) != "" {
		k.looked = append(k.looked, EnvAgeSSHKeyFile+" (set, not read: kdrift refuses SSH keys by design; use an age X25519 identity)")
	}
	if v := getenv(EnvAgeKey); strings.TrimSpace(v) != "" {
		if err := k.Add(EnvAgeKey, []byte(v)); err != nil {
			return nil, err
		}
	} else {
		k.looked = append(k.looked, EnvAgeKey+" (unset)")
	}
	if p := getenv(EnvAgeKeyFile); p != "" {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", EnvAgeKeyFile, p, err)
		}
		if err := k.Add(EnvAgeKeyFile+" ("+p+")", data); err != nil {
			return nil, err
		}
	} else {
		k.looked = append(k.looked, EnvAgeKeyFile+" (unset)")
	}
	def, shown := defaultKeyFile(getenv)
	if def != "" {
		data, err := os.ReadFile(def)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			k.looked = append(k.looked, shown+" (absent)")
		case err != nil:
			return nil, fmt.Errorf("%s: %w", def, err)
		default:
			if err := k.Add(shown, data); err != nil {
				return nil, err
			}
		}
	}
	return k, nil
}

// defaultKeyFile is sops' default key file and how to name it to a person.
func defaultKeyFile(getenv func(string) string) (path, shown string) {
	if x := getenv("XDG_CONFIG_HOME"); x != "" {
		p := filepath.Join(x, DefaultKeyFile)
		return p, p
	}
	home := getenv("HOME")
	if home == "" {
		return "", ""
	}
	return filepath.Join(home, ".config", DefaultKeyFile), "~/.config/" + DefaultKeyFile
}

// Add parses age identities (AGE-SECRET-KEY-1… lines; # comments) from
// data and adds them, recording source (a file, a variable, a Secret's
// key) among the places looked at. Its errors never quote key material.
func (k *Keyring) Add(source string, data []byte) error {
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "AGE-PLUGIN-"):
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "AGE-PLUGIN-"), "-1")
			return fmt.Errorf("%s line %d: an identity for the age plugin age-plugin-%s: kdrift refuses age plugins by design (they run a program); use an X25519 identity (AGE-SECRET-KEY-1…)", source, i+1, strings.ToLower(name))
		case strings.HasPrefix(line, "-----BEGIN") && strings.Contains(line, "PRIVATE KEY"):
			return fmt.Errorf("%s line %d: an SSH private key: kdrift refuses SSH keys by design; use an age X25519 identity (AGE-SECRET-KEY-1…)", source, i+1)
		}
	}
	ids, err := age.ParseIdentities(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s: no usable age identity: %v (kdrift reads AGE-SECRET-KEY-1… lines; plugin identities are not supported)", source, err)
	}
	k.ids = append(k.ids, ids...)
	k.looked = append(k.looked, source)
	h := sha256.New()
	h.Write(k.sum[:])
	for _, id := range ids {
		if s, ok := id.(fmt.Stringer); ok {
			h.Write([]byte(s.String()))
		}
	}
	copy(k.sum[:], h.Sum(nil))
	return nil
}

// Len is how many identities the keyring holds.
func (k *Keyring) Len() int {
	if k == nil {
		return 0
	}
	return len(k.ids)
}

// Looked names the places consulted, for messages.
func (k *Keyring) Looked() []string {
	if k == nil {
		return nil
	}
	return append([]string(nil), k.looked...)
}

// ID identifies the identities held (a hash, never the keys); "" when
// empty.
func (k *Keyring) ID() string {
	if k.Len() == 0 {
		return ""
	}
	return fmt.Sprintf("%x", k.sum[:8])
}

// Recipients lists the public keys of the X25519 identities held.
func (k *Keyring) Recipients() []string {
	if k == nil {
		return nil
	}
	var out []string
	for _, id := range k.ids {
		if x, ok := id.(*age.X25519Identity); ok {
			out = append(out, x.Recipient().String())
		}
	}
	return out
}
