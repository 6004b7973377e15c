package sopsref

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	gosops "github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/cmd/sops/common"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/decrypt"
	"github.com/getsops/sops/v3/keys"
	"github.com/getsops/sops/v3/keyservice"
	"github.com/getsops/sops/v3/version"

	"kdrift.dev/kdrift/engine/sops"
)

// update rewrites engine/sops/testdata/realsops/ from real sops.
var update = flag.Bool("update", false, "rewrite kdrift's real-sops fixtures")

// rules are the encryption rules a case uses, as sops' flags set them.
type rules struct {
	encryptedRegex, unencryptedSuffix, encryptedCommentRegex string
	macOnlyEncrypted                                         bool
}

func (r rules) kdrift(recipient string) sops.EncryptOptions {
	return sops.EncryptOptions{Recipients: []string{recipient}, EncryptedRegex: r.encryptedRegex, UnencryptedSuffix: r.unencryptedSuffix, EncryptedCommentRegex: r.encryptedCommentRegex, MACOnlyEncrypted: r.macOnlyEncrypted}
}

// identity is a fresh age identity, also put where sops looks for it.
func identity(t testing.TB) (*age.X25519Identity, *sops.Keyring) {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", home)
	t.Setenv("SOPS_AGE_KEY_FILE", "")
	t.Setenv("SOPS_AGE_KEY", id.String())
	k := &sops.Keyring{}
	if err := k.Add("test", []byte(id.String())); err != nil {
		t.Fatal(err)
	}
	return id, k
}

// formatOf is the format sops gives name.
func formatOf(name string) formats.Format { return formats.FormatForPath(name) }

// sopsEncrypt encrypts plain as `sops --encrypt --age` does.
func sopsEncrypt(t testing.TB, name string, plain []byte, recipient string, r rules) ([]byte, error) {
	t.Helper()
	store := common.StoreForFormat(formatOf(name), config.NewStoresConfig())
	branches, err := store.LoadPlainFile(plain)
	if err != nil {
		return nil, err
	}
	mks, err := sopsage.MasterKeysFromRecipients(recipient)
	if err != nil {
		t.Fatal(err)
	}
	var group gosops.KeyGroup
	for _, k := range mks {
		group = append(group, keys.MasterKey(k))
	}
	md := gosops.Metadata{
		KeyGroups:             []gosops.KeyGroup{group},
		EncryptedRegex:        r.encryptedRegex,
		UnencryptedSuffix:     r.unencryptedSuffix,
		EncryptedCommentRegex: r.encryptedCommentRegex,
		MACOnlyEncrypted:      r.macOnlyEncrypted,
		Version:               version.Version,
	}
	if md.EncryptedRegex == "" && md.UnencryptedSuffix == "" && md.EncryptedCommentRegex == "" {
		// The sops CLI's default.
		md.UnencryptedSuffix = gosops.DefaultUnencryptedSuffix
	}
	tree := gosops.Tree{Branches: branches, Metadata: md}
	dataKey, errs := tree.GenerateDataKeyWithKeyServices([]keyservice.KeyServiceClient{keyservice.NewLocalClient()})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if err := common.EncryptTree(common.EncryptTreeOpts{DataKey: dataKey, Tree: &tree, Cipher: aes.NewCipher()}); err != nil {
		return nil, err
	}
	return store.EmitEncryptedFile(tree)
}

// sopsDecrypt is `sops --decrypt` of data as the format of name.
func sopsDecrypt(name string, data []byte) ([]byte, error) {
	return decrypt.DataWithFormat(data, formatOf(name))
}

type refCase struct {
	name, plain string
	rules       rules
}

var cases = []refCase{
	{"secret.yaml", secretYAML, rules{}},
	{"secret.regex.yaml", secretYAML, rules{encryptedRegex: "^(data|stringData)$"}},
	{"secret.suffix.yaml", secretYAML + "extra_plain: visible\n", rules{unencryptedSuffix: "_plain"}},
	{"secret.comment.yaml", commentYAML, rules{encryptedCommentRegex: "sops:enc"}},
	{"secret.maconly.yaml", secretYAML, rules{encryptedRegex: "^(data|stringData)$", macOnlyEncrypted: true}},
	{"multidoc.yaml", secretYAML + "---\n" + strings.ReplaceAll(secretYAML, "name: db", "name: second") + "---\n# a third\nkind: ConfigMap\ndata:\n  k: v\n", rules{}},
	{"multidoc.regex.yaml", secretYAML + "---\n" + strings.ReplaceAll(secretYAML, "name: db", "name: second"), rules{encryptedRegex: "^(data|stringData)$"}},
	{"aliases.yaml", "base: &b\n  user: app\n  port: 5432\ncopy: *b\nlist: [*b, x]\n", rules{}},
	{"app.json", `{"apiVersion": "v1", "kind": "Secret", "stringData": {"a": "first <value> & more", "n": 5, "f": 2.5, "ok": true, "nil": null, "list": [1, "two", {"three": 3}]}}`, rules{}},
	{"app.regex.json", `{"metadata": {"name": "x"}, "stringData": {"a": "b"}}`, rules{encryptedRegex: "^stringData$"}},
	{"app.env", "# read by a secretGenerator\nDB_PASSWORD=pl41ntext-db\nMULTI=a\\nb\nEMPTY=\nURL=https://x/?a=1&b=2\n", rules{}},
	{"app.maconly.env", "TOKEN=abc\nNAME_plain=visible\n", rules{unencryptedSuffix: "_plain", macOnlyEncrypted: true}},
	{"app.ini", iniText, rules{}},
	{"app.regex.ini", iniText, rules{encryptedRegex: "^(password|token)$"}},
	{"token.bin", "-----BEGIN TOKEN-----\nAAAA\n-----END TOKEN-----\n", rules{}},
}

const secretYAML = `# the database credentials
apiVersion: v1
kind: Secret
metadata:
  name: db # inline
type: Opaque
stringData:
  password: pl41ntext-db-Passw0rd
  port: "5432"
  replicas: 3
  ratio: 0.5
  enabled: true
  none: null
  items:
    # first
    - a
    - 2
data:
  token: c2VjcmV0LXRva2Vu
`

const commentYAML = `apiVersion: v1
kind: Secret
metadata:
  name: commented
stringData:
  public: visible
  # sops:enc
  password: pl41ntext-comment
  other: also-visible
`

const iniText = `; top comment
name = app

[database]
user = app ; inline comment
password: "pl41ntext ini"
host = db.example.com
desc = """a long
value"""

[cache]
token = abc\
  def
`

// TestKdriftReadsSops: every file real sops encrypts, in every format and
// with every rule, kdrift decrypts to the bytes sops --decrypt prints.
func TestKdriftReadsSops(t *testing.T) {
	id, keyring := identity(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			enc, err := sopsEncrypt(t, c.name, []byte(c.plain), id.Recipient().String(), c.rules)
			if err != nil {
				t.Fatalf("sops encrypt: %v", err)
			}
			want, err := sopsDecrypt(c.name, enc)
			if err != nil {
				t.Fatalf("sops decrypt: %v", err)
			}
			got, isEnc, err := sops.Open(c.name, enc, keyring)
			if err != nil || !isEnc {
				t.Fatalf("kdrift Open = %v, %v\n%s", isEnc, err, enc)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("kdrift decrypted\n%q\nsops decrypted\n%q", got, want)
			}
			if *update {
				writeFixture(t, c.name, enc, want)
			}
		})
	}
	if *update {
		if err := os.WriteFile(filepath.Join(fixtures, "age-test-identity.txt"), []byte("# TEST-ONLY identity for these fixtures; protects no real secret\n"+id.String()+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// fixtures is where -update writes files for kdrift's own tests.
const fixtures = "../../engine/sops/testdata/realsops/ref"

func writeFixture(t *testing.T, name string, enc, want []byte) {
	t.Helper()
	if err := os.MkdirAll(fixtures, 0o755); err != nil {
		t.Fatal(err)
	}
	ext := filepath.Ext(name)
	base := strings.TrimSuffix(name, ext)
	if err := os.WriteFile(filepath.Join(fixtures, base+".enc"+ext), enc, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fixtures, base+".enc"+ext+".want"), want, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSopsReadsKdrift: every file kdrift's Encrypt writes, real sops
// decrypts, to the bytes kdrift itself decrypts it to.
func TestSopsReadsKdrift(t *testing.T) {
	id, keyring := identity(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			enc, err := sops.Encrypt(c.name, []byte(c.plain), c.rules.kdrift(id.Recipient().String()))
			if err != nil {
				t.Fatalf("kdrift Encrypt: %v", err)
			}
			want, err := sopsDecrypt(c.name, enc)
			if err != nil {
				t.Fatalf("sops cannot decrypt what kdrift wrote: %v\n%s", err, enc)
			}
			got, _, err := sops.Open(c.name, enc, keyring)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("kdrift decrypted\n%q\nsops decrypted\n%q", got, want)
			}
		})
	}
}

// names are the formats the fuzz target tries, by the name sops infers
// each from.
var names = []string{"f.yaml", "f.json", "f.env", "f.ini", "f.bin"}

// FuzzDifferential: for any input real sops encrypts, kdrift decrypts to
// the bytes sops decrypts to; for any input kdrift encrypts, sops
// decrypts it, to the bytes kdrift decrypts it to.
func FuzzDifferential(f *testing.F) {
	for i, c := range cases {
		f.Add(c.plain, uint8(i))
	}
	f.Fuzz(func(t *testing.T, plain string, which uint8) {
		if len(plain) > 4096 {
			return
		}
		id, keyring := identity(t)
		name := names[int(which)%len(names)]
		r := cases[int(which)%len(cases)].rules
		if enc, err := sopsEncrypt(t, name, []byte(plain), id.Recipient().String(), r); err == nil {
			want, err := sopsDecrypt(name, enc)
			if err != nil {
				// sops cannot read back what it wrote (an INI key sops
				// writes in another syntax): nothing to compare.
				return
			}
			got, _, err := sops.Open(name, enc, keyring)
			if err != nil {
				t.Fatalf("%s: sops encrypted %q; kdrift: %v\n%s", name, plain, err, enc)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: %q: kdrift decrypted\n%q\nsops decrypted\n%q", name, plain, got, want)
			}
		}
		enc, err := sops.Encrypt(name, []byte(plain), r.kdrift(id.Recipient().String()))
		if err != nil {
			return
		}
		got, _, kerr := sops.Open(name, enc, keyring)
		want, err := sopsDecrypt(name, enc)
		if err != nil {
			if kerr != nil {
				return // neither reads it back
			}
			t.Fatalf("%s: %q: sops cannot decrypt what kdrift wrote: %v\n%s", name, plain, err, enc)
		}
		if kerr != nil {
			t.Fatalf("%s: %q: kdrift cannot decrypt what it wrote: %v", name, plain, kerr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: %q: kdrift decrypted\n%q\nsops decrypted\n%q", name, plain, got, want)
		}
	})
}
