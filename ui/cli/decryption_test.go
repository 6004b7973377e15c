package cli

import (
	"strings"
	"testing"

	flag "github.com/spf13/pflag"
)

func TestDecryptionSecretFlag(t *testing.T) {
	for arg, want := range map[string]string{
		"kdrift/sops-age": "kdrift sops-age",
		"sops-age":        "want NAMESPACE/NAME",
		"a/b/c":           "want NAMESPACE/NAME",
		"/b":              "want NAMESPACE/NAME",
	} {
		var d decryptionFlags
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		d.register(fs)
		if err := fs.Parse([]string{"--decryption-secret", arg}); err != nil {
			t.Fatal(err)
		}
		ns, name, ok, err := d.parse()
		got := ns + " " + name
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, want) || (err == nil) != ok {
			t.Fatalf("%q: got %q, %v; want %q", arg, got, ok, want)
		}
	}
	var d decryptionFlags
	if _, _, ok, err := d.parse(); ok || err != nil {
		t.Fatal("an unset flag is no Secret and no error")
	}
}
