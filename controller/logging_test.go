package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestLogsRedactSecrets: no password or token reaches a log line, whether
// in a URL in the message, in an attribute, in an error, or under a
// secret-sounding key; levels and formats are checked.
func TestLogsRedactSecrets(t *testing.T) {
	var buf bytes.Buffer
	log, err := NewLogger(&buf, "debug", "json")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("fetch https://bot:s3cret-1@git.example/team/deploy.git failed")
	log.Info("fetch", "repo", "https://ghp_T0KEN2@github.com/team/deploy.git")
	log.Warn("fetch", "err", errors.New("git remote https://u:s3cret-3@h/x: fetch failed"))
	log.Debug("auth", "token", "s3cret-4", "password", "s3cret-5")
	log.With("repo", "https://u:s3cret-6@h/x").Info("with")
	out := buf.String()
	for _, secret := range []string{"s3cret-1", "T0KEN2", "s3cret-3", "s3cret-4", "s3cret-5", "s3cret-6"} {
		if strings.Contains(out, secret) {
			t.Errorf("log carries %q:\n%s", secret, out)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON log line: %q", line)
		}
	}
	if !strings.Contains(out, "git.example/team/deploy.git") {
		t.Errorf("redaction removed the URL itself:\n%s", out)
	}

	buf.Reset()
	log, err = NewLogger(&buf, "warn", "text")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hidden")
	log.Warn("shown")
	if strings.Contains(buf.String(), "hidden") || !strings.Contains(buf.String(), "level=WARN msg=shown") {
		t.Fatalf("warn level, text format: %q", buf.String())
	}
	for _, bad := range [][2]string{{"verbose", "text"}, {"info", "xml"}} {
		if _, err := NewLogger(&buf, bad[0], bad[1]); err == nil {
			t.Errorf("NewLogger(%q, %q) accepted", bad[0], bad[1])
		}
	}
}

// TestCanceledRequestIsInformation: client-go reports a request cut short
// by kdrift's own stop as an error; routed library logs carry it as
// information (and drop it when only warnings show), while real errors
// keep their level.
func TestCanceledRequestIsInformation(t *testing.T) {
	var buf bytes.Buffer
	log, err := NewLogger(&buf, "info", "json")
	if err != nil {
		t.Fatal(err)
	}
	h := canceledIsInfo{log.Handler()}
	lib := slog.New(h)
	lib.Error("Couldn't get current server API group list", "err", fmt.Errorf("Get %q: %w", "https://127.0.0.1/api", context.Canceled))
	lib.Error("watch failed", "err", errors.New("connection refused"))
	var levels []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec struct{ Level string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		levels = append(levels, rec.Level)
	}
	if strings.Join(levels, ",") != "INFO,ERROR" {
		t.Fatalf("levels %v, want INFO,ERROR:\n%s", levels, buf.String())
	}
	buf.Reset()
	warnOnly, _ := NewLogger(&buf, "warn", "json")
	slog.New(canceledIsInfo{warnOnly.Handler()}).Error("cut short", "err", context.Canceled)
	if buf.Len() != 0 {
		t.Fatalf("a canceled request shows at level warn: %s", buf.String())
	}
}
