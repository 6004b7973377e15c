package cli

import (
	"fmt"
	"io"
	"strings"

	flag "github.com/spf13/pflag"

	"kdrift.dev/kdrift/ui/report"
)

// Output formats of -o/--output: text for people, json and yaml for
// scripts (the same document in both).
const (
	outputText = "text"
	outputJSON = report.FormatJSON
	outputYAML = report.FormatYAML
)

// outputFormats are the values -o takes, for its help and its completion.
var outputFormats = []string{outputText, outputJSON, outputYAML}

// outputFlag is a command's -o/--output flag.
type outputFlag struct {
	format string
}

func (o *outputFlag) register(fs *flag.FlagSet) {
	fs.StringVarP(&o.format, "output", "o", outputText, "output format: text, json or yaml")
}

// check returns an error naming the formats when -o is none of them; the
// root command runs it before every command.
func (o *outputFlag) check() error {
	for _, f := range outputFormats {
		if o.format == f {
			return nil
		}
	}
	return fmt.Errorf("-o %s: want text, json or yaml", o.format)
}

// structured says whether -o asks for json or yaml.
func (o *outputFlag) structured() bool { return o.format == outputJSON || o.format == outputYAML }

// write writes v as -o says (json or yaml).
func (o *outputFlag) write(w io.Writer, v any) error {
	return report.WriteStructured(w, o.format, v)
}

// outputFormatsAnnotation, on a command's -o flag, lists the formats that
// command takes when they are not text, json and yaml (owners writes
// markdown); the root checks -o against it.
const outputFormatsAnnotation = "kdrift-output-formats"

// checkFormat is bad usage unless format is one of formats.
func checkFormat(format string, formats []string) error {
	for _, f := range formats {
		if format == f {
			return nil
		}
	}
	return fmt.Errorf("-o %s: want %s", format, strings.Join(formats, ", "))
}
