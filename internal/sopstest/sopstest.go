// Package sopstest makes SOPS-encrypted repository files for tests: a
// fresh age identity and a kustomize app whose Secrets are encrypted for
// it, as the sops CLI would encrypt them.
package sopstest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"

	"kdrift.dev/kdrift/engine/sops"
)

// Plaintexts of the app's secrets; tests grep every output for them.
const (
	DBPassword  = "pl41ntext-db-Passw0rd"
	APIToken    = "pl41ntext-api-T0ken"
	SecretRegex = "^(data|stringData)$"
)

// Identity generates an age identity.
func Identity(t testing.TB) *age.X25519Identity {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// KeyFile writes id to a keys.txt in a temporary folder and returns its
// path, for SOPS_AGE_KEY_FILE.
func KeyFile(t testing.TB, id *age.X25519Identity) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(p, []byte("# test key\n"+id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Encrypt encrypts a YAML or dotenv file for id's recipient; YAML files
// have only data and stringData encrypted, as Flux documents it.
func Encrypt(t testing.TB, name, plain string, id *age.X25519Identity) string {
	t.Helper()
	opts := sops.EncryptOptions{Recipients: []string{id.Recipient().String()}}
	if sops.FormatOf(name) == sops.YAML {
		opts.EncryptedRegex = SecretRegex
	}
	out, err := sops.Encrypt(name, []byte(plain), opts)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// AppFiles is a kustomize app under dir: a ConfigMap, an encrypted Secret
// manifest (db-credentials) and a secretGenerator over an encrypted dotenv
// file (api-env, with a hash suffix).
func AppFiles(t testing.TB, dir string, id *age.X25519Identity) map[string]string {
	t.Helper()
	return map[string]string{
		dir + "/kustomization.yaml": "resources: [configmap.yaml, secret.enc.yaml]\nsecretGenerator:\n- name: api-env\n  envs: [api.enc.env]\n",
		dir + "/configmap.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  color: blue\n",
		dir + "/secret.enc.yaml":    Encrypt(t, "secret.enc.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-credentials\ntype: Opaque\nstringData:\n  username: app\n  password: "+DBPassword+"\n", id),
		dir + "/api.enc.env":        Encrypt(t, "api.enc.env", "API_URL=https://api.example.com\nAPI_TOKEN="+APIToken+"\n", id),
	}
}

// NoPlaintext fails the test when any output holds DBPassword or APIToken.
func NoPlaintext(t testing.TB, what string, outputs ...string) {
	t.Helper()
	for _, o := range outputs {
		for _, p := range []string{DBPassword, APIToken} {
			if strings.Contains(o, p) {
				t.Fatalf("%s shows the plaintext %q:\n%s", what, p, o)
			}
		}
	}
}
