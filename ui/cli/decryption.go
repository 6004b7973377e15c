package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/engine/engine"
)

// decryptionFlags are the controller's flags for SOPS decryption.
type decryptionFlags struct {
	// secret is NAMESPACE/NAME of the Secret holding age identities.
	secret string
}

// register adds --decryption-secret to fs.
func (d *decryptionFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.secret, "decryption-secret", "", "NAMESPACE/NAME of a Secret whose keys ending in .agekey hold age identities for SOPS-encrypted files (like Flux's spec.decryption.secretRef); re-read every minute")
}

// parse splits the flag's value; ok is false when the flag is unset.
func (d *decryptionFlags) parse() (namespace, name string, ok bool, err error) {
	if d.secret == "" {
		return "", "", false, nil
	}
	namespace, name, found := strings.Cut(d.secret, "/")
	if !found || namespace == "" || name == "" || strings.Contains(name, "/") {
		return "", "", false, fmt.Errorf("--decryption-secret %q: want NAMESPACE/NAME, e.g. kdrift/sops-age", d.secret)
	}
	return namespace, name, true, nil
}

// keyedEngine is the engine as the controller's key loading uses it: its
// keys, and a fresh pass once they changed.
type keyedEngine interface {
	engine.Keys
	engine.Runner
}

// decryptionKeyPoll is how often the controller re-reads its decryption
// Secret, so that a rotated key is used without a restart.
const decryptionKeyPoll = time.Minute

// loadDecryptionKeys reads the decryption Secret once, then re-reads it
// every decryptionKeyPoll until ctx ends, reporting failures on warn
// (keeping the keys it had).
func (d *decryptionFlags) loadDecryptionKeys(ctx context.Context, e keyedEngine, warn func(error)) error {
	ns, name, ok, err := d.parse()
	if err != nil {
		return err
	}
	if !ok {
		// Flux's own: each Kustomization's spec.decryption.secretRef,
		// read from its namespace, decrypts that Kustomization's files.
		return loadFluxKeys(ctx, e, warn)
	}
	id, err := e.LoadDecryptionSecret(ctx, ns, name)
	if err != nil {
		return err
	}
	go func() {
		t := time.NewTicker(decryptionKeyPoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			// LoadDecryptionSecret swaps the keys (and drops cached
			// renders) only when it succeeds.
			got, err := e.LoadDecryptionSecret(ctx, ns, name)
			if err != nil {
				if ctx.Err() == nil {
					warn(err)
				}
				continue
			}
			if got != id {
				id = got
				e.Refresh()
			}
		}
	}()
	return nil
}

// loadFluxKeys scopes the keys of the Flux Kustomizations' decryption
// Secrets to their Apps (see engine.Keys.LoadFluxDecryptionKeys), then
// again every decryptionKeyPoll until ctx ends, so that a rotated key, a
// new Kustomization or a new Secret is used without a restart. Secrets
// named by the repository, not by the person: what cannot be read is a
// warning, and the controller runs on with those files Encrypted.
func loadFluxKeys(ctx context.Context, e keyedEngine, warn func(error)) error {
	load := func() (string, bool) {
		id, warnings, err := e.LoadFluxDecryptionKeys(ctx)
		for _, w := range warnings {
			warn(w)
		}
		if err != nil {
			if ctx.Err() == nil {
				warn(fmt.Errorf("Flux decryption Secrets not read: %w", err))
			}
			return "", false
		}
		return id, true
	}
	id, _ := load()
	go func() {
		t := time.NewTicker(decryptionKeyPoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if got, ok := load(); ok && got != id {
				id = got
				e.Refresh()
			}
		}
	}()
	return nil
}
