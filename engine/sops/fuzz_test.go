package sops

import (
	"testing"

	"filippo.io/age"
)

// FuzzOpen: a repository is untrusted input; whatever a file holds, Open
// returns an error or a result, never panics.
func FuzzOpen(f *testing.F) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		f.Fatal(err)
	}
	keys := &Keyring{}
	if err := keys.Add("fuzz", []byte(id.String())); err != nil {
		f.Fatal(err)
	}
	for name, plain := range map[string]string{"s.yaml": secretYAML, "a.env": "A=1\nB=two\n", "c.ini": "[s]\nk = v\n", "d.json": `{"a":[1,{"b":"c"}]}`, "e.bin": "raw"} {
		enc, err := Encrypt(name, []byte(plain), EncryptOptions{Recipients: []string{id.Recipient().String()}})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(name, enc)
	}
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		for _, n := range []string{name, "f.yaml", "f.env", "f.ini", "f.json", "f.txt"} {
			_, _, _ = Open(n, data, keys)
		}
	})
}
