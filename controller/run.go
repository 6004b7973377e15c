package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/healer"
	"kdrift.dev/kdrift/engine/leader"
	"kdrift.dev/kdrift/engine/publish"
	"kdrift.dev/kdrift/engine/status"
)

// Engine is the engine as the controller runs and observes it: the loop
// and its events (engine.Runner), the statuses its metrics, probes and
// Events read (engine.Reader), and the repository its log and Git metric
// name (engine.RepoInfo). It is what engine/healer asks for too.
type Engine interface {
	engine.Runner
	engine.Reader
	engine.RepoInfo
}

// RunOptions are what Run assembles `kdrift controller` from.
type RunOptions struct {
	// Engine is the engine to run, made with Ops.Observer as its observer
	// and Gate.Open as its write gate.
	Engine Engine
	// Ops are its metrics, probes and Events (New).
	Ops *Ops
	// Gate opens the engine's writes while this process holds the
	// repository's Lease.
	Gate *leader.Gate
	// Client and Dynamic reach the cluster that holds the Lease and the
	// AppStatuses, in Namespace.
	Client    kubernetes.Interface
	Dynamic   dynamic.Interface
	Namespace string
	// Lease tunes the election.
	Lease leader.Settings
	// Shards, when 2 or more, makes this process one replica of a sharded
	// controller (healer.Options.Shards): Gate must be marked Sharded and
	// the engine's Options.Serves be Gate.Serves.
	Shards int
	// LoadKeys, when set, loads the decryption keys once the healer is a
	// candidate (its error stops the controller).
	LoadKeys func(ctx context.Context) error
	// Apps are the Apps the controller runs (none: all), for its log.
	Apps []string
	// Events receive every engine event as one JSON line (EventLine).
	Events io.Writer
	// Log is the controller's log.
	Log *slog.Logger
}

// ErrUnwritableEvent is Run's error when an event could not be encoded as
// a line: the rest ran, and the line's error was logged.
var ErrUnwritableEvent = errors.New("an event could not be written as a JSON line")

// Run is `kdrift controller`: it makes sure the AppStatus resource and the
// namespace exist, makes the process a candidate for the repository's
// Lease (only the holder heals, prunes and publishes), loads the
// decryption keys, serves the metrics and probes, and runs the engine
// until ctx ends, writing every event to Events. The Lease is released
// only after the engine's last write.
func Run(ctx context.Context, o RunOptions) error {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := o.Engine
	if err := publish.Ensure(ctx, o.Client, o.Dynamic, o.Namespace); err != nil {
		return err
	}
	// The healer outlives the engine's Run: the Lease is released only
	// once the engine wrote its last write.
	hctx, stopHealer := context.WithCancel(context.WithoutCancel(ctx))
	h, err := healer.Start(hctx, healer.Options{Engine: e, Gate: o.Gate, Client: o.Client, Dynamic: o.Dynamic, Namespace: o.Namespace, Settings: o.Lease, Log: log, Shards: o.Shards})
	if err != nil {
		stopHealer()
		return err
	}
	defer h.Wait()
	defer stopHealer()
	if o.Shards > 1 {
		log.Info("replica of a sharded controller: candidate for the repository's Lease and its shards", "lease", o.Namespace+"/"+leader.LeaseName(e.RepoIdentity()), "shards", o.Shards, "holder", h.Holder(), "settings", o.Lease.String())
	} else {
		log.Info("candidate for the repository's Lease", "lease", o.Namespace+"/"+leader.LeaseName(e.RepoIdentity()), "holder", h.Holder(), "settings", o.Lease.String())
	}
	if o.LoadKeys != nil {
		if err := o.LoadKeys(ctx); err != nil {
			return err
		}
	}
	if err := o.Ops.Start(ctx, e); err != nil {
		return err
	}
	defer o.Ops.Stop()
	location, branch := e.ReadsFrom()
	log.Info("controller started", "repo", Redact(location), "branch", branch, "apps", o.Apps)
	defer log.Info("controller stopped")
	events, stop := e.SubscribeAll()
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	unwritable := false
	write := func(ev status.Event) error {
		line, err := EventLine(ev)
		if err != nil {
			log.Error("event", "err", err)
			unwritable = true
			return nil
		}
		_, err = fmt.Fprintf(o.Events, "%s\n", line)
		return err
	}
	for {
		select {
		case ev := <-events:
			if err := write(ev); err != nil {
				stop()
				go func() {
					for range events {
					}
				}()
				<-done
				return fmt.Errorf("write event: %w", err)
			}
		case err := <-done:
			// Run has returned: no more events; write what is queued.
			stop()
			for ev := range events {
				_ = write(ev)
			}
			if err != nil {
				return err
			}
			if unwritable {
				return ErrUnwritableEvent
			}
			return nil
		}
	}
}

// EventLine renders one engine event as one JSON line (no newline): the
// event's own fields (see engine/status/events.go) plus "type". Every line
// has "time" (RFC 3339, nanoseconds), "type" (AppStatusChanged,
// DriftDetected, Healed, Pruned, Fight, Override, FreezeExpiring, Error)
// and "app" (empty for engine-wide errors). Keys are sorted at every
// level, so lines are stable.
func EventLine(ev status.Event) ([]byte, error) {
	raw, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("event %s of app %s: %w", ev.Type(), ev.AppName(), err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	m["type"] = string(ev.Type())
	m["app"] = ev.AppName()
	m["time"] = ev.When().UTC().Format(time.RFC3339Nano)
	return json.Marshal(m)
}
