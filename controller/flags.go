package controller

import (
	flag "github.com/spf13/pflag"
)

// Flags are the controller's operability flags.
type Flags struct {
	// MetricsAddr is where /metrics, /healthz and /readyz are served;
	// empty serves nothing.
	MetricsAddr string
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// LogFormat is text or json.
	LogFormat string
}

// Register adds the flags to fs (a pflag set, as cobra uses).
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.MetricsAddr, "metrics-addr", "", `serve Prometheus /metrics and the /healthz and /readyz probes on this address (default: off); a port alone (":8080") binds to loopback, give 0.0.0.0:8080 to serve other hosts`)
	fs.StringVar(&f.LogLevel, "log-level", "info", "log level on stderr (or --log-file): debug, info, warn or error")
	fs.StringVar(&f.LogFormat, "log-format", "text", "log format: text or json (the event lines on stdout are always JSON)")
}
