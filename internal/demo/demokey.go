package demo

import (
	"os"
	"path/filepath"

	"kdrift.dev/kdrift/engine/sops"
)

// AgeIdentity is the age identity prod's tts-vendor-credentials.enc.yaml
// is SOPS-encrypted for.
//
// DEMO ONLY. This private key is public, in kdrift's source: it protects
// nothing and must never encrypt a real secret.
const AgeIdentity = "AGE-SECRET-KEY-1Y2PNFDHKK60MJNCCSP7X03004TG7FTLYD5WX326K22530HGNAE5QKF7EKG"

// AgeKeyFile is the file, in the demo's folder (outside the repository),
// that holds AgeIdentity, for SOPS_AGE_KEY_FILE.
const AgeKeyFile = "demo-age-key.txt"

// WriteAgeKey writes AgeIdentity to dir/AgeKeyFile and returns its path
// and a keyring holding it.
func WriteAgeKey(dir string) (string, *sops.Keyring, error) {
	p := filepath.Join(dir, AgeKeyFile)
	body := "# DEMO ONLY: the public test key of kdrift's demo; it protects nothing.\n" + AgeIdentity + "\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		return "", nil, err
	}
	keys := &sops.Keyring{}
	if err := keys.Add(p, []byte(body)); err != nil {
		return "", nil, err
	}
	return p, keys, nil
}
