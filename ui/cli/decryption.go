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

// decryptionKeyPoll is how often the controller re-reads its decryption
// Secret, so that a rotated key is used without a restart.
const decryptionKeyPoll = time.Minute

// loadDecryptionKeys reads the decryption Secret once, then re-reads it
// every decryptionKeyPoll until ctx ends, reporting failures on warn
// (keeping the keys it had).
func (d *decryptionFlags) loadDecryptionKeys(ctx context.Context, e *engine.Engine, warn func(error)) error {
	ns, name, ok, err := d.parse()
	if err != nil {
		return err
	}
	if !ok {
		// Flux's own: the Secret the repository's Kustomizations name
		// in spec.decryption.secretRef, when they agree on one.
		refs, err := e.FluxDecryptionSecrets(ctx)
		switch {
		case err != nil:
			// Git is not readable yet: the engine says so per app; the
			// controller runs on without Flux's keys.
			warn(fmt.Errorf("Flux decryption Secrets not read: %w", err))
			return nil
		case len(refs) == 0:
			return nil
		case len(refs) > 1:
			warn(fmt.Errorf("the Flux Kustomizations name %d decryption Secrets (%s); kdrift reads one: pass --decryption-secret NAMESPACE/NAME", len(refs), strings.Join(refs, ", ")))
			return nil
		}
		ns, name, _ = strings.Cut(refs[0], "/")
	}
	id, err := e.LoadDecryptionSecret(ctx, ns, name)
	if err != nil && !ok {
		// Named by the repository, not by the person: the controller
		// runs on, and the files stay Encrypted.
		warn(fmt.Errorf("Flux's decryption %w", err))
		return nil
	}
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
