package sops

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/ini.v1"
)

// The dotenv and INI stores follow sops' stores/dotenv and stores/ini:
// dotenv is KEY=VALUE and # lines, its metadata sops_-prefixed keys; INI
// is read and written by the same INI library sops uses, its metadata a
// [sops] section. Both flatten the metadata (age__list_0__map_enc).

// loadDotenv reads data as sops' dotenv store does.
func loadDotenv(data []byte) ([]branch, error) {
	var b branch
	for n, line := range bytes.Split(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if line[0] == '#' {
			b = append(b, item{Key: comment{Value: string(line[1:])}})
			continue
		}
		k, v, ok := bytes.Cut(line, []byte("="))
		if !ok {
			return nil, fmt.Errorf("line %d is not KEY=VALUE", n+1)
		}
		b = append(b, item{Key: string(k), Value: strings.ReplaceAll(string(v), `\n`, "\n")})
	}
	return []branch{b}, nil
}

// emitDotenv writes a branch as sops' dotenv store does.
func emitDotenv(branches []branch) ([]byte, error) {
	var buf bytes.Buffer
	if len(branches) == 0 {
		return nil, nil
	}
	for _, it := range branches[0] {
		if c, ok := it.Key.(comment); ok {
			fmt.Fprintf(&buf, "#%s\n", c.Value)
			continue
		}
		switch it.Value.(type) {
		case branch, []any:
			return nil, fmt.Errorf("%v: a dotenv value cannot be a map or a list", it.Key)
		}
		v, ok := it.Value.(string)
		if ok {
			v = strings.ReplaceAll(v, "\n", `\n`)
		} else {
			v = valToString(it.Value)
		}
		fmt.Fprintf(&buf, "%s=%s\n", it.Key, v)
	}
	return buf.Bytes(), nil
}

// dotenvMeta takes the sops_ keys out of a dotenv file's branch.
func dotenvMeta(branches []branch) (map[string]string, bool) {
	flat := map[string]string{}
	b := branches[0]
	out := b[:0]
	for _, it := range b {
		if k, ok := it.Key.(string); ok && strings.HasPrefix(k, "sops_") {
			flat[k[len("sops_"):]] = valToString(it.Value)
			continue
		}
		out = append(out, it)
	}
	branches[0] = out
	return flat, len(flat) > 0
}

// iniOptions are the options sops reads and writes INI files with.
var iniOptions = ini.LoadOptions{AllowNonUniqueSections: true}

// loadINI reads data as sops' INI store does: one branch whose items are
// the sections (DEFAULT first), each a branch of its keys and comments.
func loadINI(data []byte) ([]branch, error) {
	f, err := ini.LoadSources(iniOptions, data)
	if err != nil {
		return nil, err
	}
	var b branch
	for _, s := range f.Sections() {
		var items branch
		if s.Comment != "" {
			items = append(items, item{Key: comment{Value: stripCommentChar(s.Comment)}})
		}
		for _, k := range s.Keys() {
			items = append(items, item{Key: k.Name(), Value: k.Value()})
			if k.Comment != "" {
				items = append(items, item{Key: comment{Value: stripCommentChar(k.Comment)}})
			}
		}
		b = append(b, item{Key: s.Name(), Value: items})
	}
	return []branch{b}, nil
}

func stripCommentChar(c string) string {
	switch {
	case strings.HasPrefix(c, ";"):
		return strings.TrimLeft(c, "; ")
	case strings.HasPrefix(c, "#"):
		return strings.TrimLeft(c, "# ")
	}
	return c
}

// emitINI writes branches as sops' INI store does.
func emitINI(branches []branch) ([]byte, error) {
	f := ini.Empty(iniOptions)
	f.DeleteSection(ini.DefaultSection)
	for _, b := range branches {
		for _, it := range b {
			name, ok := it.Key.(string)
			if !ok {
				continue
			}
			s, err := f.NewSection(name)
			if err != nil {
				return nil, fmt.Errorf("section %s: %w", name, err)
			}
			items, ok := it.Value.(branch)
			if !ok {
				return nil, fmt.Errorf("section %s is not a map of keys", name)
			}
			first := 0
			if len(items) > 0 {
				if c, ok := items[0].Key.(comment); ok {
					s.Comment = c.Value
					first = 1
				}
			}
			var last *ini.Key
			for _, kv := range items[first:] {
				if c, ok := kv.Key.(comment); ok {
					if last != nil {
						last.Comment = c.Value
					}
					continue
				}
				k, _ := kv.Key.(string)
				if last, err = s.NewKey(k, valToString(kv.Value)); err != nil {
					return nil, fmt.Errorf("section %s key %s: %w", name, k, err)
				}
			}
		}
	}
	var buf bytes.Buffer
	if _, err := f.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// iniMeta takes the [sops] section out of an INI file's branch, its
// escaped newlines restored.
func iniMeta(branches []branch) (map[string]string, bool, error) {
	b := branches[0]
	var meta branch
	found := false
	out := b[:0]
	for _, it := range b {
		if it.Key == "sops" {
			if found {
				return nil, true, fmt.Errorf("more than one [sops] section")
			}
			found = true
			m, ok := it.Value.(branch)
			if !ok {
				return nil, true, fmt.Errorf("[sops] is not a section")
			}
			meta = m
			continue
		}
		out = append(out, it)
	}
	branches[0] = out
	flat := map[string]string{}
	for _, it := range meta {
		if k, ok := it.Key.(string); ok {
			flat[k] = strings.ReplaceAll(valToString(it.Value), `\n`, "\n")
		}
	}
	return flat, found, nil
}

// valToString is a scalar as sops writes it into a dotenv or INI file.
func valToString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case float64:
		s := strconv.FormatFloat(x, 'G', -1, 64)
		if !strings.ContainsAny(s, ".E") {
			s = strconv.FormatFloat(x, 'f', 1, 64)
		}
		return s
	case bool:
		return strconv.FormatBool(x)
	case time.Time:
		return x.Format(time.RFC3339)
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprintf("%v", v)
}
