package sops

import (
	"fmt"
	"strings"
)

// NoKeyError says that no identity kdrift holds opens a file: it was
// encrypted for other recipients, or only for key types kdrift never uses.
// Objects rendered from such a file are Encrypted: compared by key names
// only, never applied.
type NoKeyError struct {
	// File is the file, relative to the repository root.
	File string
	// Recipients are the file's age recipients.
	Recipients []string
	// KeyTypes are the master key types the file has (age, kms, pgp…).
	KeyTypes []string
	// Looked names the places kdrift looked for identities.
	Looked []string
	// Unsupported says why no key of the file can be used, when that is
	// not a missing identity (Shamir key groups).
	Unsupported string
	// Refused describes the recipients kdrift never decrypts for, by
	// design: SSH keys and age plugins.
	Refused []string
}

// Error renders `FILE: encrypted for age1…; no matching identity in …`.
func (e *NoKeyError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	b.WriteString(": ")
	switch {
	case e.Unsupported != "":
		b.WriteString(e.Unsupported)
	case len(e.Recipients) > 0:
		fmt.Fprintf(&b, "encrypted for %s; no matching identity in %s", strings.Join(e.Recipients, ", "), lookedOrNone(e.Looked))
	default:
		fmt.Fprintf(&b, "encrypted only with %s; kdrift decrypts with age keys only (KMS and Vault need the network, PGP needs gpg)", strings.Join(e.KeyTypes, ", "))
	}
	if others := otherTypes(e.KeyTypes); len(others) > 0 && len(e.Recipients) > 0 {
		fmt.Fprintf(&b, " (its %s keys are not used: kdrift decrypts with age keys only)", strings.Join(others, ", "))
	}
	if len(e.Refused) > 0 && e.Unsupported == "" {
		fmt.Fprintf(&b, "; %s: kdrift refuses SSH and plugin recipients by design (it reads no SSH private key and runs no program), so add an age X25519 recipient (age1…) to the file with `sops updatekeys` and give kdrift its identity", strings.Join(e.Refused, "; "))
	}
	return b.String()
}

func lookedOrNone(l []string) string {
	if len(l) == 0 {
		return "no key source"
	}
	return strings.Join(l, ", ")
}

func otherTypes(types []string) []string {
	var out []string
	for _, t := range types {
		if t != "age" {
			out = append(out, t)
		}
	}
	return out
}

// IntegrityError is a file that does not decrypt although a key opened
// it: its MAC does not match its values, or a value was changed. Such a
// file is a render error, never applied.
type IntegrityError struct {
	File string
	// Path is the value that failed, sops-style (data:password:); empty
	// for the MAC.
	Path string
	Err  error
}

// Error renders `FILE: VALUE: PROBLEM`, never a plaintext.
func (e *IntegrityError) Error() string {
	where := "the MAC"
	if e.Path != "" {
		where = "value " + e.Path
	}
	return fmt.Sprintf("%s: SOPS integrity check failed at %s: %v; re-encrypt the file with sops", e.File, where, e.Err)
}

// Unwrap returns the cause.
func (e *IntegrityError) Unwrap() error { return e.Err }

// FormatError is a file with SOPS metadata that is not a valid SOPS file.
type FormatError struct {
	File string
	Err  error
}

// Error renders `FILE: not a valid SOPS file: PROBLEM`.
func (e *FormatError) Error() string {
	return fmt.Sprintf("%s: not a valid SOPS file: %v", e.File, e.Err)
}

// Unwrap returns the cause.
func (e *FormatError) Unwrap() error { return e.Err }
