package controller

import (
	"context"
	"log/slog"
	"sync"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/render/sandbox"
	"kdrift.dev/kdrift/engine/status"
)

// Options configure the operable parts of a controller.
type Options struct {
	// MetricsAddr serves /metrics, /healthz and /readyz; empty serves
	// nothing.
	MetricsAddr string
	// Kubeconfig and Context are the engine's, so that Events go to the
	// cluster each App's objects live in.
	Kubeconfig, Context string
	// Leader says this process heals and prunes, when Leading is nil.
	Leader bool
	// Leading, when set, says whether this process heals now: it holds
	// the repository's Lease, or, sharded, a shard (leader.Gate.Leads).
	// The kdrift_leader gauge follows it, and only a healer records
	// Kubernetes Events (a standby would repeat the leader's; a sharded
	// replica's engine has events of its own shards' Apps only).
	Leading func() bool
	// Log is where the controller logs.
	Log *slog.Logger
	// Recorder tunes the Events; SinkFor defaults to the clusters of
	// Kubeconfig.
	Recorder RecorderOptions
}

// Ops is a controller's metrics, probes and Events. Make it with New,
// hand Observer() to engine.Options.Observer, then Start it with the
// engine.
type Ops struct {
	opts    Options
	metrics *Metrics
	probes  *Probes
	rec     *Recorder
	server  *Server

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New prepares the metrics (so the engine can report to them from its
// first step); nothing runs until Start.
func New(opts Options) *Ops {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	o := &Ops{opts: opts}
	o.metrics = NewMetrics(Source{
		Apps: func() []status.AppStatus { return nil },
		Leader: func() bool {
			if opts.Leading != nil {
				return opts.Leading()
			}
			return opts.Leader
		},
	})
	return o
}

// Observer is what the engine reports step timings and requests to.
func (o *Ops) Observer() engine.Observer { return o.metrics }

// Metrics is the controller's metrics.
func (o *Ops) Metrics() *Metrics { return o.metrics }

// Start points the metrics and probes at e, opens the metrics address
// (a busy or bad address is an error here), and starts serving and
// recording Events until Stop.
func (o *Ops) Start(ctx context.Context, e Engine) error {
	o.metrics.src.Apps = e.Apps
	o.metrics.src.GitError = e.FetchError
	o.probes = &Probes{Heartbeat: o.metrics.LastHeartbeat, Declared: e.Declared, Apps: e.Apps}
	ropts := o.opts.Recorder
	if ropts.SinkFor == nil {
		ropts.SinkFor = newClusterSinks(o.opts.Kubeconfig, o.opts.Context).For
	}
	if ropts.Log == nil {
		ropts.Log = o.opts.Log
	}
	o.rec = NewRecorder(ropts)
	if o.opts.MetricsAddr != "" {
		s, err := Listen(o.opts.MetricsAddr, o.metrics, o.probes, o.opts.Log)
		if err != nil {
			return err
		}
		o.server = s
		o.opts.Log.Info("serving metrics and probes", "addr", s.Addr().String(), "paths", "/metrics /healthz /readyz")
	}
	// What confines the render workers, said once; the worker it starts
	// is the pool's first.
	if rep, err := sandbox.Shared().Report(ctx); err != nil {
		o.opts.Log.Error("render sandbox: no render worker started; kustomize Apps will be Error", "err", err)
	} else {
		o.opts.Log.Info("render sandbox", "exec", rep.Exec, "network", rep.Network, "fs", rep.FS)
	}
	ctx, o.cancel = context.WithCancel(ctx)
	events, stop := e.SubscribeAll()
	recCtx, stopRec := context.WithCancel(context.WithoutCancel(ctx))
	o.wg.Add(2)
	go func() {
		defer o.wg.Done()
		o.rec.Run(recCtx)
	}()
	go func() {
		defer o.wg.Done()
		defer stopRec()
		go func() {
			<-ctx.Done()
			stop()
		}()
		for ev := range events {
			o.metrics.Count(ev)
			if oc, ok := OccurrenceOf(ev); ok && (o.opts.Leading == nil || o.opts.Leading()) {
				oc.Context = o.contextOf(e, oc.App)
				o.rec.Record(oc)
			}
		}
	}()
	if o.server != nil {
		o.wg.Add(1)
		go func() {
			defer o.wg.Done()
			if err := o.server.Serve(ctx); err != nil {
				o.opts.Log.Error("metrics server failed", "err", err)
			}
		}()
	}
	return nil
}

// contextOf is the kubeconfig context of app's destination.
func (o *Ops) contextOf(e engine.Reader, app string) string {
	if a, ok := e.App(app); ok {
		return a.Destination.Context
	}
	return ""
}

// Addr is the metrics address served, "" when none.
func (o *Ops) Addr() string {
	if o.server == nil {
		return ""
	}
	return o.server.Addr().String()
}

// Stop stops serving, writes the Event counts still pending and waits
// for every goroutine Start began.
func (o *Ops) Stop() {
	if o.cancel != nil {
		o.cancel()
	}
	o.wg.Wait()
}
