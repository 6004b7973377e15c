package sops

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"regexp"
	"strconv"
	"time"
)

// encRe is one encrypted value: AES-256-GCM ciphertext, nonce and tag,
// base64, and the type the plaintext had.
var encRe = regexp.MustCompile(`^ENC\[AES256_GCM,data:([^,]+),iv:([^,]+),tag:([^,]+),type:([a-z]+)\]$`)

// nonceSize is the GCM nonce length sops uses (not the usual 12).
const nonceSize = 32

// errValue is a value that does not decrypt: tampered, or another key.
var errValue = errors.New("the value does not decrypt with the file's data key (tampered, or encrypted with another key)")

// decryptValue decrypts one ENC[…] value bound to additional data ad (the
// value's path, "data:password:") and gives it back with its type: string,
// int, float64, bool, []byte or time.Time. An empty string stays empty,
// as sops never encrypts it.
func decryptValue(s string, key []byte, ad string) (any, error) {
	if s == "" {
		return "", nil
	}
	m := encRe.FindStringSubmatch(s)
	if m == nil {
		return nil, fmt.Errorf("the value is not in sops' ENC[AES256_GCM,data:…,iv:…,tag:…,type:…] form")
	}
	var parts [3][]byte
	for i := range parts {
		b, err := base64.StdEncoding.DecodeString(m[i+1])
		if err != nil {
			return nil, fmt.Errorf("the value's %s is not base64: %w", [3]string{"data", "iv", "tag"}[i], err)
		}
		parts[i] = b
	}
	data, iv, tag := parts[0], parts[1], parts[2]
	if len(iv) == 0 || len(tag) != 16 {
		return nil, fmt.Errorf("the value's iv or tag has the wrong length")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, len(iv))
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, iv, append(append([]byte{}, data...), tag...), []byte(ad))
	if err != nil {
		return nil, errValue
	}
	switch t := m[4]; t {
	case "str":
		return string(plain), nil
	case "comment":
		return comment{Value: string(plain)}, nil
	case "bytes":
		return plain, nil
	case "int":
		return strconv.Atoi(string(plain))
	case "float":
		return strconv.ParseFloat(string(plain), 64)
	case "bool":
		return strconv.ParseBool(string(plain))
	case "time":
		var v time.Time
		err := v.UnmarshalText(plain)
		return v, err
	default:
		return nil, fmt.Errorf("the value has the unknown type %q", t)
	}
}

// encryptValue encrypts v (string, int, float64, bool, time.Time or a
// comment) with key, bound to ad, as sops' cipher does; an empty string
// or comment stays empty.
func encryptValue(v any, key []byte, ad string) (string, error) {
	var plain []byte
	var typ string
	switch x := v.(type) {
	case string:
		if x == "" {
			return "", nil
		}
		plain, typ = []byte(x), "str"
	case comment:
		if x.Value == "" {
			return "", nil
		}
		plain, typ = []byte(x.Value), "comment"
	case int:
		plain, typ = []byte(strconv.Itoa(x)), "int"
	case float64:
		plain, typ = []byte(strconv.FormatFloat(x, 'f', -1, 64)), "float"
	case bool:
		plain, typ = []byte("False"), "bool"
		if x {
			plain = []byte("True")
		}
	case time.Time:
		b, err := x.MarshalText()
		if err != nil {
			return "", err
		}
		plain, typ = b, "time"
	default:
		return "", fmt.Errorf("cannot encrypt a value of type %T", v)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return "", err
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, nonceSize)
	if err != nil {
		return "", err
	}
	iv := make([]byte, nonceSize)
	if _, err := rand.Read(iv); err != nil {
		return "", err
	}
	out := gcm.Seal(nil, iv, plain, []byte(ad))
	data, tag := out[:len(out)-gcm.Overhead()], out[len(out)-gcm.Overhead():]
	enc := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("ENC[AES256_GCM,data:%s,iv:%s,tag:%s,type:%s]", enc(data), enc(iv), enc(tag), typ), nil
}

// macBytes is a plaintext value as the MAC hashes it.
func macBytes(v any) ([]byte, error) {
	switch x := v.(type) {
	case string:
		return []byte(x), nil
	case []byte:
		return x, nil
	case int:
		return []byte(strconv.Itoa(x)), nil
	case float64:
		return []byte(strconv.FormatFloat(x, 'f', -1, 64)), nil
	case bool:
		if x {
			return []byte("True"), nil
		}
		return []byte("False"), nil
	case time.Time:
		return x.MarshalText()
	}
	return nil, fmt.Errorf("a value of type %T is not something sops encrypts", v)
}

// macOnlyEncryptedInit starts the hash when only encrypted values count,
// so such a MAC never equals one over all values: SHA-256 of "sops".
var macOnlyEncryptedInit = func() []byte {
	b, err := hex.DecodeString("8a3fd2ad54ce66527b1034f3d147be0b0b975b3bf44f72c6fdadec8176f27d69")
	if err != nil {
		panic(err)
	}
	return b
}()

// macString is the MAC as sops stores it before encrypting: upper-case hex.
func macString(h hash.Hash) string { return fmt.Sprintf("%X", h.Sum(nil)) }

// lastModifiedAD is the additional data the MAC is bound to: lastmodified
// in RFC 3339, as sops formats it after parsing.
func lastModifiedAD(m *Metadata) string {
	t, err := time.Parse(time.RFC3339, m.LastModified)
	if err != nil {
		return m.LastModified
	}
	return t.Format(time.RFC3339)
}
