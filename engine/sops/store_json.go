package sops

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The JSON store follows sops' stores/json: objects read token by token
// in their order, numbers as int when they fit, written back with a tab
// indent. A binary file is a JSON object whose "data" holds it whole.

// loadJSON reads the top-level object of data.
func loadJSON(data []byte) ([]branch, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("sops reads JSON files whose top level is an object")
	}
	b, err := jsonObject(dec, 0)
	if err != nil {
		return nil, err
	}
	return []branch{b}, nil
}

func jsonNumber(t any) (any, error) {
	n, ok := t.(json.Number)
	if !ok {
		return t, nil
	}
	if i, err := n.Int64(); err == nil {
		return int(i), nil
	}
	return n.Float64()
}

func jsonValue(dec *json.Decoder, tok any, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested more than %d levels deep", maxDepth)
	}
	switch tok {
	case json.Delim('{'):
		return jsonObject(dec, depth+1)
	case json.Delim('['):
		return jsonArray(dec, depth+1)
	}
	return jsonNumber(tok)
}

func jsonArray(dec *json.Decoder, depth int) ([]any, error) {
	var out []any
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if tok == json.Delim(']') {
			return out, nil
		}
		v, err := jsonValue(dec, tok, depth)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

func jsonObject(dec *json.Decoder, depth int) (branch, error) {
	var b branch
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		if tok == json.Delim('}') {
			return b, nil
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("expected an object key, got %v", tok)
		}
		tok, err = dec.Token()
		if err != nil {
			return nil, err
		}
		v, err := jsonValue(dec, tok, depth)
		if err != nil {
			return nil, err
		}
		b = append(b, item{Key: key, Value: v})
	}
}

// emitJSON writes the first branch as sops' JSON store does.
func emitJSON(branches []branch) ([]byte, error) {
	if len(branches) == 0 {
		return nil, errors.New("no JSON object")
	}
	var raw bytes.Buffer
	if err := jsonEncode(&raw, branches[0]); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw.Bytes(), "", "\t"); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func jsonEncode(w *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case branch:
		w.WriteByte('{')
		first := true
		for _, it := range x {
			k, ok := it.Key.(string)
			if !ok {
				continue
			}
			if !first {
				w.WriteByte(',')
			}
			first = false
			kb, err := json.Marshal(k)
			if err != nil {
				return err
			}
			w.Write(kb)
			w.WriteString(": ")
			if err := jsonEncode(w, it.Value); err != nil {
				return err
			}
		}
		w.WriteByte('}')
	case []any:
		w.WriteByte('[')
		first := true
		for _, e := range x {
			if _, ok := e.(comment); ok {
				continue
			}
			if !first {
				w.WriteByte(',')
			}
			first = false
			if err := jsonEncode(w, e); err != nil {
				return err
			}
		}
		w.WriteByte(']')
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		w.Write(b)
	}
	return nil
}

// binaryData is the plaintext of a binary file: its "data" string.
func binaryData(branches []branch) ([]byte, error) {
	if len(branches) != 1 {
		return nil, errors.New("a binary SOPS file is one JSON object")
	}
	for _, it := range branches[0] {
		if it.Key == "data" {
			switch v := it.Value.(type) {
			case string:
				return []byte(v), nil
			case []byte:
				return v, nil
			}
			return nil, errors.New(`"data" is not a string`)
		}
	}
	return nil, errors.New(`no "data" key`)
}
