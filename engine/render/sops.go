package render

import (
	"errors"
	"path"
	"regexp"
	"strings"
	"sync"

	"kdrift.dev/kdrift/engine/sops"
)

// SetKeys sets the age identities SOPS files are decrypted with (nil:
// none) and forgets every cached render, since what a build reads
// depends on them. Decrypted files stay in memory: the treeFS hands them
// to kustomize, and plain YAML is decoded from them directly.
func (r *Renderer) SetKeys(keys *sops.Keyring) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = keys
	r.cache = map[string][]*cacheEntry{}
}

// SetAppKeys scopes keyrings to Apps, as Flux scopes a Kustomization's
// decryption Secret to that Kustomization: a render of a folder in keys
// (an App's spec.path) decrypts with that folder's keyring only, every
// other render with the keyring of SetKeys. nil removes every scoped
// keyring. Cached renders are forgotten when a keyring changed.
func (r *Renderer) SetAppKeys(keys map[string]*sops.Keyring) {
	scoped := make(map[string]*sops.Keyring, len(keys))
	for dir, k := range keys {
		scoped[path.Clean(strings.TrimPrefix(dir, "./"))] = k
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	same := len(scoped) == len(r.appKeys)
	for dir, k := range scoped {
		if old, ok := r.appKeys[dir]; !ok || old.ID() != k.ID() {
			same = false
		}
	}
	r.appKeys = scoped
	if !same {
		r.cache = map[string][]*cacheEntry{}
	}
}

// Undecrypted says why the ciphertext value ct, found in a rendered
// object, could not be decrypted: the file it came from, its recipients
// and where kdrift looked for keys. It is nil when ct comes from no SOPS
// file a cached render read.
func (r *Renderer) Undecrypted(ct string) *sops.NoKeyError {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, entries := range r.cache {
		for _, e := range entries {
			if nk := e.sealed[ct]; nk != nil {
				return nk
			}
		}
	}
	return nil
}

// Origin names the repository file a ciphertext value came from, or "";
// apply.Options.Origin takes it.
func (r *Renderer) Origin(ct string) string {
	if nk := r.Undecrypted(ct); nk != nil {
		return nk.File
	}
	return ""
}

// sopsReader decrypts the SOPS files one build reads, and remembers the
// ciphertext of those no identity opened.
type sopsReader struct {
	keys *sops.Keyring

	mu     sync.Mutex
	sealed map[string]*sops.NoKeyError
	// values are the plaintexts decrypted, to scrub from messages.
	values []string
}

// newSOPSReader decrypts the files of a render of folder dir (cleaned),
// with dir's scoped keyring when it has one.
func (r *Renderer) newSOPSReader(dir string) *sopsReader {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := r.keys
	if k, ok := r.appKeys[dir]; ok {
		keys = k
	}
	return &sopsReader{keys: keys, sealed: map[string]*sops.NoKeyError{}}
}

// ciphertextRe finds each SOPS value in a file left encrypted.
var ciphertextRe = regexp.MustCompile(`ENC\[AES256_GCM,data:[^,\]]+,iv:[^,\]]+,tag:[^,\]]+,type:[a-z]+\]`)

// open returns the file as the build must see it: decrypted when it is a
// SOPS file an identity opens; without its SOPS metadata but still
// encrypted when none does (the objects made from it are then Encrypted,
// compared by key names and never applied). A file that fails its
// integrity check is an error.
func (s *sopsReader) open(name string, data []byte) ([]byte, error) {
	if s == nil {
		return data, nil
	}
	out, values, _, err := sops.OpenValues(name, data, s.keys)
	if len(values) > 0 {
		s.mu.Lock()
		s.values = append(s.values, values...)
		s.mu.Unlock()
	}
	var nk *sops.NoKeyError
	if errors.As(err, &nk) {
		s.mu.Lock()
		for _, ct := range ciphertextRe.FindAll(out, -1) {
			s.sealed[string(ct)] = nk
		}
		s.mu.Unlock()
		return out, nil
	}
	return out, err
}

// undecrypted is what the build could not decrypt, by ciphertext.
func (s *sopsReader) undecrypted() map[string]*sops.NoKeyError {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sealed) == 0 {
		return nil
	}
	return s.sealed
}

// secrets are the plaintexts the build decrypted.
func (s *sopsReader) secrets() []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.values
}

// scrub keeps the build's plaintexts out of its error: kustomize and YAML
// errors may quote the file they failed on.
func (s *sopsReader) scrub(err error) error {
	if err == nil || len(s.secrets()) == 0 {
		return err
	}
	msg := sops.Scrub(err.Error(), s.secrets())
	if msg == err.Error() {
		return err
	}
	return errors.New(msg)
}

// Scrub replaces in msg every plaintext that a cached render decrypted
// from a SOPS file (an apiserver error quoting a decrypted object).
func (r *Renderer) Scrub(msg string) string {
	r.mu.Lock()
	var secrets []string
	for _, entries := range r.cache {
		for _, e := range entries {
			secrets = append(secrets, e.secrets...)
		}
	}
	r.mu.Unlock()
	return sops.Scrub(msg, secrets)
}
