package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	tea "charm.land/bubbletea/v2"
	"k8s.io/klog/v2"

	"kdrift.dev/kdrift/keymap"
	"kdrift.dev/kdrift/ui/backend"
)

// Options are the UI's settings from the command line.
type Options struct {
	// Readonly disables every mutating key (sync, freeze, unfreeze,
	// revert, ignore); `readonly: true` in the config file does too.
	Readonly bool
	// LogFile receives the UI's log; empty means no log. Nothing is ever
	// written to the screen but the UI.
	LogFile string
	// ConfigPath is the config file; empty means keymap.ConfigPath()
	// ($XDG_CONFIG_HOME/kdrift/config.yaml or ~/.config/kdrift/config.yaml).
	ConfigPath string
	// Context is the initial `:ctx` filter: only apps whose destination
	// context it is are listed. Empty lists every app.
	Context string
	// NoColor drops every colour (--no-color); NO_COLOR in the environment
	// does too.
	NoColor bool
	// ProgramOptions are extra Bubble Tea options (input, output, size),
	// for tests and embedding.
	ProgramOptions []tea.ProgramOption
	// Forge is what the app view shows from the forge (kdrift's open pull
	// requests) and CODEOWNERS; its nil functions show nothing.
	Forge Forge
}

// Run shows the UI until the person quits (q, ctrl+c, :q) or ctx ends
// (SIGTERM), and restores the terminal either way. It returns nil on
// those exits.
func Run(ctx context.Context, be backend.Backend, opts Options) error {
	cfg, closeLog, err := buildConfig(opts)
	if err != nil {
		return err
	}
	defer closeLog()
	routeLibraryLogs(cfg.Log)
	m := NewModel(ctx, be, cfg)
	cfg.Log.Info("ui started", "readonly", cfg.Readonly, "context", cfg.Context)
	popts := append([]tea.ProgramOption{tea.WithContext(ctx)}, opts.ProgramOptions...)
	_, err = tea.NewProgram(m, popts...).Run()
	if errors.Is(err, tea.ErrInterrupted) {
		// SIGINT from outside (ctrl+c inside is a key and quits).
		cfg.Log.Info("ui stopped", "reason", "interrupted")
		return nil
	}
	if err != nil && errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		cfg.Log.Info("ui stopped", "reason", ctx.Err())
		return nil
	}
	if err != nil {
		cfg.Log.Error("ui failed", "err", err)
		return fmt.Errorf("terminal UI: %w", err)
	}
	cfg.Log.Info("ui stopped", "reason", "quit")
	return nil
}

// routeLibraryLogs sends what client-go (klog: API warnings, watch errors
// while a cluster is down) and kustomize (the log package: deprecation
// warnings) would write to stderr, which is the screen, to l instead.
func routeLibraryLogs(l *slog.Logger) {
	slog.SetDefault(l)
	klog.SetSlogLogger(l)
}

// buildConfig reads the config file and opens the log.
func buildConfig(opts Options) (Config, func(), error) {
	path := opts.ConfigPath
	if path == "" {
		p, err := keymap.ConfigPath()
		if err != nil {
			return Config{}, nil, err
		}
		path = p
	}
	fc, err := keymap.LoadConfig(path)
	if err != nil {
		return Config{}, nil, err
	}
	keys, err := fc.Apply(keymap.DefaultKeyMap())
	if err != nil {
		return Config{}, nil, fmt.Errorf("config %s: %w", path, err)
	}
	var w io.Writer = io.Discard
	closeLog := func() {}
	if opts.LogFile != "" {
		f, err := os.OpenFile(opts.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return Config{}, nil, fmt.Errorf("log file %s cannot be opened: %w", opts.LogFile, err)
		}
		w = f
		closeLog = func() {
			if err := f.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "kdrift: log file %s: %v\n", opts.LogFile, err)
			}
		}
	}
	return Config{
		Keys:     keys,
		Readonly: opts.Readonly || fc.Readonly,
		Context:  opts.Context,
		NoColor:  opts.NoColor || os.Getenv("NO_COLOR") != "",
		Log:      slog.New(slog.NewTextHandler(w, nil)),
		Forge:    opts.Forge,
	}, closeLog, nil
}
