package ui

import (
	"bytes"
	"context"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"k8s.io/klog/v2"

	"kdrift.dev/kdrift/keymap"
)

func runOpts(t *testing.T, in io.Reader) Options {
	t.Helper()
	return Options{
		ConfigPath: filepath.Join(t.TempDir(), "none.yaml"),
		LogFile:    filepath.Join(t.TempDir(), "kdrift.log"),
		ProgramOptions: []tea.ProgramOption{
			tea.WithInput(in), tea.WithOutput(io.Discard), tea.WithWindowSize(100, 30),
		},
	}
}

func TestRunQuitsOnQ(t *testing.T) {
	opts := runOpts(t, strings.NewReader("jjq"))
	if err := Run(t.Context(), newFake(), opts); err != nil {
		t.Fatalf("Run = %v", err)
	}
}

func TestRunStopsWhenTheContextEnds(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, newFake(), runOpts(t, r)) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel = %v, want nil (a clean exit on SIGTERM)", err)
	}
}

func TestRunLogsToTheLogFileOnly(t *testing.T) {
	opts := runOpts(t, strings.NewReader("q"))
	opts.Readonly = true
	if err := Run(t.Context(), newFake(), opts); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(opts.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "ui started") || !strings.Contains(string(data), "readonly=true") || !strings.Contains(string(data), "ui stopped") {
		t.Errorf("log lacks the failure:\n%s", data)
	}
}

func TestRunReadsConfig(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	if err := os.MkdirAll(filepath.Join(dir, "kdrift"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kdrift", "config.yaml"), []byte("readonly: true\nkeys:\n  quit: [Q]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, closeLog, err := buildConfig(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer closeLog()
	if !cfg.Readonly || cfg.Keys.Binding(keymap.ActQuit).Keys()[0] != "Q" {
		t.Errorf("config not applied: readonly=%v quit=%v", cfg.Readonly, cfg.Keys.Binding(keymap.ActQuit).Keys())
	}
	opts := runOpts(t, strings.NewReader("Q"))
	opts.ConfigPath = ""
	if err := Run(t.Context(), newFake(), opts); err != nil {
		t.Fatalf("Q (remapped quit) did not end Run: %v", err)
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	opts := runOpts(t, strings.NewReader("q"))
	if err := os.WriteFile(opts.ConfigPath, []byte("keys:\n  synk: [s]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := Run(t.Context(), newFake(), opts)
	if err == nil || !strings.Contains(err.Error(), "keys.synk: unknown action") {
		t.Fatalf("Run = %v", err)
	}
}

// TestLibraryLogsGoToTheLogFile: client-go's klog and kustomize's log
// package write to the UI's log, never to the screen.
func TestLibraryLogsGoToTheLogFile(t *testing.T) {
	var buf bytes.Buffer
	routeLibraryLogs(slog.New(slog.NewTextHandler(&buf, nil)))
	klog.Warning("watch of apps/v1 deployments failed: connection refused")
	log.Print("Warning: 'commonLabels' is deprecated")
	klog.Flush()
	for _, want := range []string{"connection refused", "commonLabels"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, buf.String())
		}
	}
}

// TestRunNoColor: --no-color (Options.NoColor) and NO_COLOR each turn the
// colours off; without either they stay on.
func TestRunNoColor(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, tc := range []struct {
		opt  bool
		env  string
		want bool
	}{{false, "", false}, {true, "", true}, {false, "1", true}} {
		t.Setenv("NO_COLOR", tc.env)
		cfg, closeLog, err := buildConfig(Options{NoColor: tc.opt})
		if err != nil {
			t.Fatal(err)
		}
		closeLog()
		if cfg.NoColor != tc.want {
			t.Errorf("Options.NoColor %v, NO_COLOR %q: Config.NoColor = %v, want %v", tc.opt, tc.env, cfg.NoColor, tc.want)
		}
	}
}
