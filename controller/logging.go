package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"

	"k8s.io/klog/v2"

	"kdrift.dev/kdrift/engine/redact"
)

// NewLogger returns a logger writing to w at level (debug, info, warn,
// error) in format (text or json). Every line it writes is redacted:
// passwords and tokens in URLs are replaced, and so is the value of any
// attribute whose name says it holds a secret.
func NewLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil || !validLevel(level) {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: redactAttr}
	var h slog.Handler
	switch format {
	case "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", format)
	}
	return slog.New(redactingHandler{h}), nil
}

func validLevel(s string) bool {
	switch strings.ToLower(s) {
	case "debug", "info", "warn", "error":
		return true
	}
	return false
}

// RouteLibraryLogs sends what client-go (klog) and kustomize (the log
// package) would print to l, so that the controller's stderr carries one
// format only.
// A library error about a request kdrift itself canceled (it is stopping,
// or gave up on a slow call) is logged as information: nothing failed.
func RouteLibraryLogs(l *slog.Logger) {
	l = slog.New(canceledIsInfo{l.Handler()})
	slog.SetDefault(l)
	klog.SetSlogLogger(l)
}

// canceledIsInfo lowers to Info a warning or error whose error is a
// canceled context, as client-go reports every request cut short when its
// caller stops.
type canceledIsInfo struct{ slog.Handler }

func (h canceledIsInfo) Handle(ctx context.Context, r slog.Record) error {
	if r.Level > slog.LevelInfo && canceled(r) {
		nr := slog.NewRecord(r.Time, slog.LevelInfo, r.Message, r.PC)
		r.Attrs(func(a slog.Attr) bool { nr.AddAttrs(a); return true })
		r = nr
		if !h.Handler.Enabled(ctx, slog.LevelInfo) {
			return nil
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h canceledIsInfo) Enabled(ctx context.Context, l slog.Level) bool {
	// A lowered record must still reach Handle when only errors show, to
	// be dropped there by the wrapped handler's own level.
	return h.Handler.Enabled(ctx, l) || l > slog.LevelInfo
}

func (h canceledIsInfo) WithAttrs(as []slog.Attr) slog.Handler {
	return canceledIsInfo{h.Handler.WithAttrs(as)}
}

func (h canceledIsInfo) WithGroup(name string) slog.Handler {
	return canceledIsInfo{h.Handler.WithGroup(name)}
}

// canceled reports whether the record's error is a canceled context.
func canceled(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && errors.Is(err, context.Canceled) {
			found = true
		} else if a.Key == "err" && strings.HasSuffix(a.Value.String(), context.Canceled.Error()) {
			found = true
		}
		return !found
	})
	return found
}

// redactingHandler redacts the message of every record; redactAttr does
// the attributes.
type redactingHandler struct{ slog.Handler }

func (h redactingHandler) Handle(ctx context.Context, r slog.Record) error {
	if m := Redact(r.Message); m != r.Message {
		nr := slog.NewRecord(r.Time, r.Level, m, r.PC)
		r.Attrs(func(a slog.Attr) bool { nr.AddAttrs(a); return true })
		r = nr
	}
	return h.Handler.Handle(ctx, r)
}

func (h redactingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return redactingHandler{h.Handler.WithAttrs(as)}
}

func (h redactingHandler) WithGroup(name string) slog.Handler {
	return redactingHandler{h.Handler.WithGroup(name)}
}

// secretKey matches attribute names whose values must never be logged.
var secretKey = regexp.MustCompile(`(?i)(password|passwd|token|secret|credential|authorization|bearer|private[-_]?key)`)

func redactAttr(_ []string, a slog.Attr) slog.Attr {
	if secretKey.MatchString(a.Key) {
		return slog.String(a.Key, "xxxxx")
	}
	switch a.Value.Kind() {
	case slog.KindString:
		if s := a.Value.String(); strings.Contains(s, "://") {
			return slog.String(a.Key, Redact(s))
		}
	case slog.KindAny:
		if err, ok := a.Value.Any().(error); ok {
			return slog.String(a.Key, Redact(err.Error()))
		}
	}
	return a
}

// Redact replaces the credentials of every URL in s: the engine's one
// redaction (redact.Text).
func Redact(s string) string { return redact.Text(s) }
