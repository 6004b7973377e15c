package report

import (
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// Formats of structured output, the values of every -o/--output flag
// besides the human "text".
const (
	FormatJSON = "json"
	FormatYAML = "yaml"
)

// WriteYAML writes v as YAML with the same field names as its JSON form
// (it goes through the JSON encoding, as kubectl -o yaml does).
func WriteYAML(w io.Writer, v any) error {
	data, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// WriteStructured writes v in format: FormatJSON or FormatYAML.
func WriteStructured(w io.Writer, format string, v any) error {
	switch format {
	case FormatJSON:
		return WriteJSON(w, v)
	case FormatYAML:
		return WriteYAML(w, v)
	}
	return fmt.Errorf("output format %q: want %s or %s", format, FormatJSON, FormatYAML)
}
