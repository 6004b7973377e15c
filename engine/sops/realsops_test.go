package sops

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// realDir holds files encrypted by the sops library itself (see its
// README): they prove kdrift reads what sops writes, not only what its
// own Encrypt writes.
const realDir = "testdata/realsops"

func realKeys(t *testing.T) *Keyring {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(realDir, "age-test-identity.txt"))
	if err != nil {
		t.Fatal(err)
	}
	k := &Keyring{}
	if err := k.Add("test identity", data); err != nil {
		t.Fatal(err)
	}
	return k
}

func readReal(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(realDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRealSOPSYAML decrypts Secret manifests sops encrypted with its
// default rules and with Flux's encrypted_regex.
func TestRealSOPSYAML(t *testing.T) {
	keys := realKeys(t)
	plain := readReal(t, "plain/secret.yaml")
	var want map[string]any
	if err := yaml.Unmarshal(plain, &want); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"secret.enc.yaml", "secret.regex.enc.yaml"} {
		t.Run(name, func(t *testing.T) {
			enc := readReal(t, name)
			if strings.Contains(string(enc), "pl41ntext") {
				t.Fatalf("the fixture holds the plaintext")
			}
			out, values, isEnc, err := OpenValues(name, enc, keys)
			if err != nil || !isEnc {
				t.Fatalf("OpenValues = %v, %v", isEnc, err)
			}
			var got map[string]any
			if err := yaml.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if !equalJSON(t, got, want) {
				t.Fatalf("decrypted\n%s\nwant\n%s", out, plain)
			}
			for _, v := range []string{"pl41ntext-db-Passw0rd", "c2VjcmV0LXRva2Vu", "host: db.apps.svc\nport: 5432\n"} {
				if !slices.Contains(values, v) {
					t.Errorf("the decrypted values %q miss %q", values, v)
				}
			}
			if strings.Contains(string(out), "sops") || strings.Contains(string(out), "ENC[") {
				t.Errorf("the output keeps sops metadata or ciphertext:\n%s", out)
			}
			tamperedMAC(t, name, enc, keys, "token:", "data:token:")
		})
	}
}

// TestRealSOPSDotenv decrypts a dotenv file as a secretGenerator reads it.
func TestRealSOPSDotenv(t *testing.T) {
	keys := realKeys(t)
	enc := readReal(t, "app.enc.env")
	out, isEnc, err := Open("app.enc.env", enc, keys)
	if err != nil || !isEnc {
		t.Fatalf("Open = %v, %v", isEnc, err)
	}
	// sops prints the file's comments too, decrypted.
	want := "# read by a secretGenerator\nDB_PASSWORD=pl41ntext-db-Passw0rd\nAPI_KEY=sk-test-0123456789abcdef\nAPI_URL=https://api.example.com/v1?x=1\n"
	if string(out) != want {
		t.Fatalf("decrypted\n%q\nwant\n%q", out, want)
	}
	tamperedMAC(t, "app.enc.env", enc, keys, "DB_PASSWORD=", "DB_PASSWORD:")
}

var (
	encValue     = regexp.MustCompile(`ENC\[AES256_GCM,[^\]]*\]`)
	lastModified = regexp.MustCompile(`lastmodified["':= ]+[0-9T:Z.-]+`)
)

// tamperedMAC checks that a real file is verified: two values swapped
// (each is bound to its path), lastmodified changed (the MAC is bound to
// it), and one value replaced by another properly encrypted with the
// file's data key at the right path, which only the MAC catches.
func tamperedMAC(t *testing.T, name string, enc []byte, keys *Keyring, field, ad string) {
	t.Helper()
	s := string(enc)
	vals := encValue.FindAllStringIndex(s, -1)
	if len(vals) < 2 {
		t.Fatalf("%s has fewer than two encrypted values", name)
	}
	a, b := s[vals[0][0]:vals[0][1]], s[vals[1][0]:vals[1][1]]
	swapped := s[:vals[0][0]] + b + s[vals[0][1]:vals[1][0]] + a + s[vals[1][1]:]
	if _, _, err := Open(name, []byte(swapped), keys); !isIntegrity(err) {
		t.Errorf("%s with two values swapped: err = %v, want an integrity error", name, err)
	}

	lm := lastModified.FindStringIndex(s)
	if lm == nil {
		t.Fatalf("%s has no lastmodified", name)
	}
	moved := s[:lm[0]] + strings.Replace(s[lm[0]:lm[1]], "20", "19", 1) + s[lm[1]:]
	if _, _, err := Open(name, []byte(moved), keys); !isIntegrity(err) {
		t.Errorf("%s with lastmodified changed: err = %v, want an integrity error", name, err)
	}

	// Re-encrypt one value with the real data key: every value still
	// decrypts, only the MAC tells.
	i := strings.Index(s, field)
	if i < 0 {
		t.Fatalf("%s has no %s", name, field)
	}
	loc := encValue.FindStringIndex(s[i:])
	if loc == nil {
		t.Fatalf("%s: %s is not encrypted", name, field)
	}
	key := dataKeyOf(t, name, enc, keys)
	forged, err := encryptValue("forged-value", key, ad)
	if err != nil {
		t.Fatal(err)
	}
	changed := s[:i+loc[0]] + forged + s[i+loc[1]:]
	_, _, err = Open(name, []byte(changed), keys)
	var ie *IntegrityError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "MAC") {
		t.Errorf("%s with %s re-encrypted: err = %v, want a MAC mismatch", name, field, err)
	}
}

// dataKeyOf unwraps the data key of a real file.
func dataKeyOf(t *testing.T, name string, enc []byte, keys *Keyring) []byte {
	t.Helper()
	f, _ := Detect(name, enc)
	tr, err := load(f, enc)
	if err != nil {
		t.Fatal(err)
	}
	m := tr.meta
	key, err := m.dataKey(name, keys)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// refDir holds files the sops library encrypted (every format, every
// rule, multi-document YAML) with what `sops --decrypt` prints for each
// (NAME.want), written by testdata/sopsref's TestKdriftReadsSops -update.
const refDir = "testdata/realsops/ref"

// TestRealSOPSReference: kdrift decrypts every reference file to the
// bytes sops printed, under its own name and under a name that says
// nothing (a generator's .enc or .txt file).
func TestRealSOPSReference(t *testing.T) {
	id, err := os.ReadFile(filepath.Join(refDir, "age-test-identity.txt"))
	if err != nil {
		t.Fatal(err)
	}
	keys := &Keyring{}
	if err := keys.Add("reference identity", id); err != nil {
		t.Fatal(err)
	}
	wants, err := filepath.Glob(filepath.Join(refDir, "*.want"))
	if err != nil || len(wants) < 10 {
		t.Fatalf("reference files: %v, %v", wants, err)
	}
	for _, w := range wants {
		name := strings.TrimSuffix(filepath.Base(w), ".want")
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(w)
			if err != nil {
				t.Fatal(err)
			}
			enc, err := os.ReadFile(filepath.Join(refDir, name))
			if err != nil {
				t.Fatal(err)
			}
			for _, as := range []string{name, name + ".enc", "data.txt"} {
				got, isEnc, err := Open(as, enc, keys)
				if err != nil || !isEnc {
					t.Fatalf("as %s: Open = %v, %v", as, isEnc, err)
				}
				if string(got) != string(want) {
					t.Fatalf("as %s: kdrift decrypted\n%q\nsops decrypted\n%q", as, got, want)
				}
			}
		})
	}
}
