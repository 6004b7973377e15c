package apply

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/sops"
	"kdrift.dev/kdrift/engine/status"
)

// CiphertextError is an object kdrift refused to send to the apiserver
// because it still carries SOPS ciphertext (a value ENC[…]) or SOPS
// metadata: applying it would put the ciphertext where the application
// reads its password.
type CiphertextError struct {
	Ref status.ObjectRef
	// Path is the field holding the ciphertext, as a JSON pointer.
	Path string
	// File is the repository file the ciphertext came from; empty when
	// unknown.
	File string
}

// Error names the object, the field and the file, and what to do.
func (e *CiphertextError) Error() string {
	from := ""
	if e.File != "" {
		from = " (from " + e.File + ")"
	}
	return fmt.Sprintf("%s still holds SOPS-encrypted data at %s%s: kdrift never applies ciphertext; give kdrift an age identity the file is encrypted for (SOPS_AGE_KEY_FILE, ~/.config/sops/age/keys.txt, or the controller's --decryption-secret)", e.Ref, e.Path, from)
}

// Guard refuses an object that still carries SOPS ciphertext anywhere
// (base64-decoded under a Secret's data too) or a top-level sops map.
// origin names the file a ciphertext came from; it may be nil.
func Guard(obj *unstructured.Unstructured, origin func(ciphertext string) string) error {
	c, ok := sops.Find(obj.Object)
	if !ok {
		return nil
	}
	e := &CiphertextError{Ref: RefOf(obj), Path: c.Path}
	if origin != nil {
		e.File = origin(c.Value)
	}
	return e
}
