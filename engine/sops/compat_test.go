package sops

import (
	"errors"
	"strings"
	"testing"
)

// TestMultiDocumentOneMAC: sops writes one MAC over every document of a
// YAML file and the same sops block into each; kdrift's Encrypt does too,
// and Open checks that one MAC (a document moved, dropped or changed
// fails it).
func TestMultiDocumentOneMAC(t *testing.T) {
	id, keys := newIdentity(t)
	plain := secretYAML + "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: second\nstringData:\n  token: second-t0ken\n"
	enc, err := Encrypt("two.yaml", []byte(plain), EncryptOptions{Recipients: []string{id.Recipient().String()}, EncryptedRegex: "^(data|stringData)$"})
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(enc), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("encrypted into %d documents:\n%s", len(docs), enc)
	}
	block := func(d string) string { return strings.TrimSpace(d[strings.Index(d, "sops:"):]) }
	if block(docs[0]) != block(docs[1]) {
		t.Fatalf("the documents carry different sops blocks:\n%s", enc)
	}
	out, values, isEnc, err := OpenValues("two.yaml", enc, keys)
	if err != nil || !isEnc {
		t.Fatalf("Open = %v, %v", isEnc, err)
	}
	for _, want := range []string{"s3cr3t-Pa55", "second-t0ken"} {
		if !strings.Contains(string(out), want) || !strings.Contains(strings.Join(values, " "), want) {
			t.Fatalf("decrypted file misses %s:\n%s", want, out)
		}
	}
	// The second document alone, or the first alone, no longer matches
	// the MAC over both.
	for i, one := range docs {
		if _, _, err := Open("one.yaml", []byte(one), keys); !isIntegrity(err) {
			t.Errorf("document %d alone: err = %v, want an integrity error", i+1, err)
		}
	}
	swapped := docs[1] + "\n---\n" + docs[0]
	if _, _, err := Open("two.yaml", []byte(swapped), keys); err == nil {
		t.Error("documents swapped: decrypted")
	}
}

// TestStructureNotName: a SOPS file is recognised by its content under
// any name (a generator's .enc, .yaml.enc or .txt file) and opened in the
// format its content shows, never passed through as ciphertext.
func TestStructureNotName(t *testing.T) {
	id, keys := newIdentity(t)
	r := []string{id.Recipient().String()}
	cases := []struct{ encName, name, plain string }{
		{"s.yaml", "secret.yaml.enc", "user: app\npassword: hunter2-yaml\n"},
		{"s.json", "settings.enc", `{"password": "hunter2-json"}` + "\n"},
		{"s.env", "api.enc", "API_TOKEN=hunter2-env\n"},
		{"s.ini", "db.conf", "[db]\npassword = hunter2-ini\n"},
		{"s.bin", "token.txt", "hunter2-binary\n"},
	}
	for _, c := range cases {
		enc, err := Encrypt(c.encName, []byte(c.plain), EncryptOptions{Recipients: r})
		if err != nil {
			t.Fatal(err)
		}
		out, isEnc, err := Open(c.name, enc, keys)
		if err != nil || !isEnc {
			t.Fatalf("%s: Open = %v, %v", c.name, isEnc, err)
		}
		if !strings.Contains(string(out), "hunter2-") || strings.Contains(string(out), "ENC[") {
			t.Fatalf("%s: opened as\n%s", c.name, out)
		}
		// Without a key the file is still recognised: a NoKeyError,
		// never plain data.
		if _, isEnc, err := Open(c.name, enc, &Keyring{}); !isEnc || err == nil {
			t.Fatalf("%s without a key: encrypted %v, err %v", c.name, isEnc, err)
		}
	}
	// A sops block that is not complete is refused, not passed through.
	broken := "password: ENC[AES256_GCM,data:x,iv:y,tag:z,type:str]\nsops:\n    version: 3.13.3\n"
	if _, isEnc, err := Open("x.txt", []byte(broken), keys); !isEnc || err == nil {
		t.Fatalf("an incomplete SOPS file: encrypted %v, err %v", isEnc, err)
	}
}

// TestRefusedByName: SSH and plugin recipients, SOPS_AGE_KEY_CMD and
// plugin identities are refused by design and said so by name.
func TestRefusedByName(t *testing.T) {
	doc := `a: ENC[AES256_GCM,data:oYyi,iv:MyIDYbT718JRr11QtBkcj3Dwm4k1aCGZBVeZf0EyV8o=,tag:t5z2Z023Up0kxwCgw1gNxg==,type:str]
sops:
    age:
        - recipient: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHyxY3ZqKQ
          enc: x
        - recipient: age1yubikey1qwt50d05nh5vutpdzmlg5wn80xq5negm4uj9ghv0snvdd3yysf5yw3rhl3t
          enc: y
    lastmodified: "2026-01-01T00:00:00Z"
    mac: ENC[AES256_GCM,data:oYyi,iv:MyIDYbT718JRr11QtBkcj3Dwm4k1aCGZBVeZf0EyV8o=,tag:t5z2Z023Up0kxwCgw1gNxg==,type:str]
    version: 3.13.3
`
	_, keys := newIdentity(t)
	_, _, err := Open("k.yaml", []byte(doc), keys)
	var nk *NoKeyError
	if !errors.As(err, &nk) {
		t.Fatalf("Open = %v", err)
	}
	for _, want := range []string{"is an SSH key (ssh-ed25519)", "age plugin age-plugin-yubikey", "by design"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
	env := map[string]string{EnvAgeKeyCmd: "pass show age", EnvAgeSSHKeyFile: "/home/x/.ssh/id_ed25519"}
	k, err := LoadKeyring(func(s string) string { return env[s] })
	if err != nil {
		t.Fatal(err)
	}
	looked := strings.Join(k.Looked(), ", ")
	if !strings.Contains(looked, "SOPS_AGE_KEY_CMD (set, not run") || !strings.Contains(looked, "SOPS_AGE_SSH_PRIVATE_KEY_FILE (set, not read") {
		t.Fatalf("looked = %s", looked)
	}
	if err := k.Add("keys.txt", []byte("# yubikey\nAGE-PLUGIN-YUBIKEY-1QQQ\n")); err == nil || !strings.Contains(err.Error(), "age-plugin-yubikey") {
		t.Fatalf("a plugin identity: %v", err)
	}
}

// TestAliases: aliases in an encrypted file are expanded as sops expands
// them (the MAC covers the expanded values), within the alias budget.
func TestAliases(t *testing.T) {
	id, keys := newIdentity(t)
	plain := "base:\n    k: v\ncopy:\n    k: v\ndata: s3cr3t-alias\n"
	enc, err := Encrypt("a.yaml", []byte(plain), EncryptOptions{Recipients: []string{id.Recipient().String()}, EncryptedRegex: "^data$"})
	if err != nil {
		t.Fatal(err)
	}
	s := string(enc)
	if !strings.HasPrefix(s, "base:\n    k: v\ncopy:\n    k: v\n") {
		t.Fatalf("unexpected encryption:\n%s", s)
	}
	aliased := "base: &b\n    k: v\ncopy: *b\n" + strings.TrimPrefix(s, "base:\n    k: v\ncopy:\n    k: v\n")
	out, _, err := Open("a.yaml", []byte(aliased), keys)
	if err != nil {
		t.Fatalf("Open with an alias: %v\n%s", err, aliased)
	}
	if !strings.Contains(string(out), "copy:\n    k: v\n") || !strings.Contains(string(out), "s3cr3t-alias") {
		t.Fatalf("decrypted:\n%s", out)
	}
	var bomb strings.Builder
	bomb.WriteString("a: &a [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 'b'; i <= 'h'; i++ {
		prev := string(i - 1)
		bomb.WriteString(string(i) + ": &" + string(i) + " [*" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n")
	}
	bomb.WriteString(strings.TrimPrefix(s, "base:\n    k: v\ncopy:\n    k: v\n"))
	if _, _, err := Open("a.yaml", []byte(bomb.String()), keys); err == nil || !strings.Contains(err.Error(), "alias") {
		t.Fatalf("an alias bomb: %v", err)
	}
}
