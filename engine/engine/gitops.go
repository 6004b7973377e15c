package engine

import (
	"context"
	"sort"
)

// FluxDecryptionSecrets are the Secrets (NAMESPACE/NAME) the Flux
// Kustomizations at the branch head name in spec.decryption.secretRef,
// sorted, each once. The controller reads its age identities from the one
// they name when it is given no --decryption-secret, as Flux's
// kustomize-controller does.
func (e *core) FluxDecryptionSecrets(ctx context.Context) ([]string, error) {
	if err := e.loadHead(ctx, false); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, a := range e.apps.Apps {
		if a.Origin == nil || a.Origin.Decryption == nil || a.Origin.Decryption.SecretRef == "" {
			continue
		}
		if ref := a.Origin.Decryption.SecretRef; !seen[ref] {
			seen[ref] = true
			out = append(out, ref)
		}
	}
	sort.Strings(out)
	return out, nil
}
