package sops

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	"sigs.k8s.io/yaml"
)

const secretYAML = `apiVersion: v1
kind: Secret
metadata:
  name: db
type: Opaque
stringData:
  password: s3cr3t-Pa55
  port: "5432"
data:
  token: c2VjcmV0LXRva2Vu
`

func newIdentity(t *testing.T) (*age.X25519Identity, *Keyring) {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	k := &Keyring{}
	if err := k.Add("test", []byte(id.String()+"\n")); err != nil {
		t.Fatal(err)
	}
	return id, k
}

// TestKnownValue decrypts a value published with sops' own cipher tests
// (key 32×"f", additional data "bar:"): the value format is sops'.
func TestKnownValue(t *testing.T) {
	v, err := decryptValue(`ENC[AES256_GCM,data:oYyi,iv:MyIDYbT718JRr11QtBkcj3Dwm4k1aCGZBVeZf0EyV8o=,tag:t5z2Z023Up0kxwCgw1gNxg==,type:str]`, []byte(strings.Repeat("f", 32)), "bar:")
	if err != nil || v != "foo" {
		t.Fatalf("decrypt = %v, %v; want foo", v, err)
	}
	if _, err := decryptValue(`ENC[AES256_GCM,data:oYyi,iv:MyIDYbT718JRr11QtBkcj3Dwm4k1aCGZBVeZf0EyV8o=,tag:t5z2Z023Up0kxwCgw1gNxg==,type:str]`, []byte(strings.Repeat("f", 32)), "baz:"); err == nil {
		t.Fatal("a value moved to another path decrypted")
	}
}

func TestYAMLRoundTrip(t *testing.T) {
	for _, regex := range []string{"", "^(data|stringData)$"} {
		id, keys := newIdentity(t)
		enc, err := Encrypt("secret.yaml", []byte(secretYAML), EncryptOptions{Recipients: []string{id.Recipient().String()}, EncryptedRegex: regex})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(enc), "s3cr3t") {
			t.Fatalf("ciphertext holds the plaintext:\n%s", enc)
		}
		out, isEnc, err := Open("apps/db/secret.yaml", enc, keys)
		if err != nil || !isEnc {
			t.Fatalf("Open = %v, %v\n%s", isEnc, err, enc)
		}
		var got, want map[string]any
		if err := yaml.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal([]byte(secretYAML), &want); err != nil {
			t.Fatal(err)
		}
		if !equalJSON(t, got, want) {
			t.Fatalf("regex %q: decrypted\n%s\nwant\n%s", regex, out, secretYAML)
		}

		// Another identity: no key, metadata gone, ciphertext kept.
		_, other := newIdentity(t)
		out, _, err = Open("apps/db/secret.yaml", enc, other)
		var nk *NoKeyError
		if !errors.As(err, &nk) {
			t.Fatalf("Open with another key = %v; want *NoKeyError", err)
		}
		if !strings.Contains(err.Error(), id.Recipient().String()) || !strings.Contains(err.Error(), "apps/db/secret.yaml") {
			t.Fatalf("NoKeyError says %q", err)
		}
		var stripped map[string]any
		if err := yaml.Unmarshal(out, &stripped); err != nil {
			t.Fatal(err)
		}
		if _, ok := stripped["sops"]; ok {
			t.Fatal("the stripped file still has sops metadata")
		}
		if c, ok := Find(stripped); !ok || !strings.HasPrefix(c.Path, "/") {
			t.Fatalf("Find on the stripped file = %+v, %v", c, ok)
		}

		// Tampering: a value moved to another key, or the MAC.
		tampered := strings.Replace(string(enc), "password:", "passwd:", 1)
		if _, _, err := Open("s.yaml", []byte(tampered), keys); !isIntegrity(err) {
			t.Fatalf("a renamed key decrypted: %v", err)
		}
		if regex != "" {
			tampered = strings.Replace(string(enc), "name: db", "name: dc", 1)
			if _, _, err = Open("s.yaml", []byte(tampered), keys); !isIntegrity(err) {
				t.Fatalf("a changed clear value passed the MAC (sops covers every value): %v", err)
			}
		}
	}
}

func isIntegrity(err error) bool {
	var ie *IntegrityError
	return errors.As(err, &ie)
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := yaml.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := yaml.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}

func TestDotenvRoundTrip(t *testing.T) {
	id, keys := newIdentity(t)
	plain := "DB_USER=app\nDB_PASSWORD=hunter2-xyz\nMULTI=a\\nb\n"
	enc, err := Encrypt("db.env", []byte(plain), EncryptOptions{Recipients: []string{id.Recipient().String()}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(enc), "hunter2") || !strings.Contains(string(enc), "sops_mac=ENC[") {
		t.Fatalf("encrypted dotenv:\n%s", enc)
	}
	out, isEnc, err := Open("secrets/db.env", enc, keys)
	if err != nil || !isEnc {
		t.Fatalf("Open = %v, %v", isEnc, err)
	}
	if string(out) != plain {
		t.Fatalf("decrypted %q, want %q", out, plain)
	}
	out, _, err = Open("secrets/db.env", enc, &Keyring{looked: []string{"SOPS_AGE_KEY (unset)"}})
	var nk *NoKeyError
	if !errors.As(err, &nk) || strings.Contains(string(out), "sops_") || !strings.Contains(string(out), "DB_PASSWORD=ENC[") {
		t.Fatalf("no key: %v\n%s", err, out)
	}
	if !strings.Contains(err.Error(), "no matching identity in SOPS_AGE_KEY (unset)") {
		t.Fatalf("NoKeyError says %q", err)
	}
}

func TestPlainFilesPassThrough(t *testing.T) {
	for name, data := range map[string]string{
		"a.yaml": secretYAML,
		"b.env":  "A=1\n",
		"c.txt":  "sops is a tool; mac and cheese",
	} {
		out, isEnc, err := Open(name, []byte(data), nil)
		if err != nil || isEnc || string(out) != data {
			t.Fatalf("%s: Open = %q, %v, %v", name, out, isEnc, err)
		}
	}
}

func TestOnlyKMS(t *testing.T) {
	doc := `a: ENC[AES256_GCM,data:oYyi,iv:MyIDYbT718JRr11QtBkcj3Dwm4k1aCGZBVeZf0EyV8o=,tag:t5z2Z023Up0kxwCgw1gNxg==,type:str]
sops:
  kms:
    - arn: arn:aws:kms:us-east-1:1:key/x
      enc: abc
  pgp:
    - fp: ABCD
      enc: xyz
  lastmodified: "2026-01-01T00:00:00Z"
  mac: ENC[AES256_GCM,data:oYyi,iv:MyIDYbT718JRr11QtBkcj3Dwm4k1aCGZBVeZf0EyV8o=,tag:t5z2Z023Up0kxwCgw1gNxg==,type:str]
  version: 3.13.3
`
	_, _, err := Open("k.yaml", []byte(doc), nil)
	var nk *NoKeyError
	if !errors.As(err, &nk) || !strings.Contains(err.Error(), "encrypted only with kms, pgp") {
		t.Fatalf("Open = %v", err)
	}
}

func TestLoadKeyring(t *testing.T) {
	id, _ := newIdentity(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "keys.txt")
	if err := os.WriteFile(file, []byte("# created: now\n"+id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SOPS_AGE_KEY_FILE": file, "HOME": dir}
	k, err := LoadKeyring(func(s string) string { return env[s] })
	if err != nil {
		t.Fatal(err)
	}
	if k.Len() != 1 || k.Recipients()[0] != id.Recipient().String() {
		t.Fatalf("keyring holds %d identities", k.Len())
	}
	if got := strings.Join(k.Looked(), ", "); got != "SOPS_AGE_KEY (unset), SOPS_AGE_KEY_FILE ("+file+"), ~/.config/sops/age/keys.txt (absent)" {
		t.Fatalf("looked = %s", got)
	}
	env = map[string]string{"SOPS_AGE_KEY": "AGE-SECRET-KEY-1NOTAKEY"}
	if _, err := LoadKeyring(func(s string) string { return env[s] }); err == nil || strings.Contains(err.Error(), "NOTAKEY") {
		t.Fatalf("a bad key: %v", err)
	}
	env = map[string]string{"XDG_CONFIG_HOME": dir, "HOME": "/nonexistent"}
	if err := os.MkdirAll(filepath.Join(dir, "sops", "age"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sops", "age", "keys.txt"), []byte(id.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if k, err := LoadKeyring(func(s string) string { return env[s] }); err != nil || k.Len() != 1 {
		t.Fatalf("XDG_CONFIG_HOME: %v", err)
	}
}

func TestFind(t *testing.T) {
	obj := map[string]any{"apiVersion": "v1", "kind": "Secret", "data": map[string]any{
		"ok":  "c2VjcmV0",
		"enc": "RU5DW0FFUzI1Nl9HQ00sZGF0YTp4LGl2OnksdGFnOnosdHlwZTpzdHJd", // base64 of ENC[AES256_GCM,data:x,iv:y,tag:z,type:str]
	}}
	c, ok := Find(obj)
	if !ok || c.Path != "/data/enc" {
		t.Fatalf("Find = %+v, %v", c, ok)
	}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"x": "ENC[AES256_GCM,data:x,iv:y,tag:z,type:str]"}}
	if _, ok := Find(cm); !ok {
		t.Fatal("ciphertext in a ConfigMap not found")
	}
	if _, ok := Find(map[string]any{"kind": "ConfigMap", "data": map[string]any{"x": "ENCODED"}}); ok {
		t.Fatal("plain value taken for ciphertext")
	}
}

func TestScrub(t *testing.T) {
	msg := `Secret "db" is invalid: data[password]: "hunter2-xyz" (aHVudGVyMi14eXo=) not allowed; port 5432`
	got := Scrub(msg, []string{"hunter2-xyz", "54"})
	if strings.Contains(got, "hunter2") || strings.Contains(got, "aHVudGVyMi14eXo=") || !strings.Contains(got, "port 5432") || !strings.Contains(got, Mask) {
		t.Fatalf("Scrub = %q", got)
	}
}

// TestFormats: JSON, INI and binary files round-trip, and a value moved
// within one is caught.
func TestFormats(t *testing.T) {
	id, keys := newIdentity(t)
	for name, plain := range map[string]string{
		"app.json":   `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"j"},"stringData":{"a":"first-value","n":5,"ok":true}}` + "\n",
		"app.ini":    "[database]\nuser = app\npassword = s3cr3t-ini\n[cache]\nurl = redis://x\n",
		"ca.crt":     "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
		"nested.yml": "a:\n  b: [1, two, {c: 3.5}]\n  d: null\n  e: \"\"\nf_unencrypted: clear\n",
	} {
		enc, err := Encrypt(name, []byte(plain), EncryptOptions{Recipients: []string{id.Recipient().String()}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out, isEnc, err := Open(name, enc, keys)
		if err != nil || !isEnc {
			t.Fatalf("%s: Open = %v, %v\n%s", name, isEnc, err, enc)
		}
		if FormatOf(name) == YAML || FormatOf(name) == JSON {
			var a, b any
			if err := yaml.Unmarshal(out, &a); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal([]byte(plain), &b); err != nil {
				t.Fatal(err)
			}
			if !equalJSON(t, a, b) {
				t.Fatalf("%s: decrypted\n%s\nwant\n%s", name, out, plain)
			}
		} else if name == "app.ini" {
			// As the INI library sops uses writes it: keys aligned,
			// sections apart.
			if want := "[database]\nuser     = app\npassword = s3cr3t-ini\n\n[cache]\nurl = redis://x\n"; string(out) != want {
				t.Fatalf("%s: decrypted %q, want %q", name, out, want)
			}
		} else if string(out) != plain {
			t.Fatalf("%s: decrypted %q, want %q", name, out, plain)
		}
		if name == "nested.yml" && !strings.Contains(string(enc), "f_unencrypted: clear") {
			t.Fatalf("a key ending in _unencrypted was encrypted:\n%s", enc)
		}
		if _, _, err := Open(name, enc, &Keyring{}); err == nil {
			t.Fatalf("%s opened without a key", name)
		}
	}
}

func TestNotSOPS(t *testing.T) {
	for name, data := range map[string]string{
		"notes.ini": "[sops]\nthis line is a continuation of nothing\nmac = x\n",
		"cfg.ini":   "; about sops and machines\nplain line without equals\n",
		"app.env":   "# sops machine\nNOT A PAIR\n",
	} {
		out, isEnc, err := Open(name, []byte(data), nil)
		switch name {
		case "notes.ini":
			if err == nil {
				t.Fatalf("%s: a broken [sops] section was accepted", name)
			}
		default:
			if err != nil || isEnc || string(out) != data {
				t.Fatalf("%s: Open = %q, %v, %v", name, out, isEnc, err)
			}
		}
	}
	if IsCiphertext("ENC[not really]") || !IsCiphertext(" ENC[AES256_GCM,data:x,iv:y,tag:z,type:str] ") {
		t.Fatal("IsCiphertext")
	}
}
