package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/leader"
	"kdrift.dev/kdrift/ui/backend"
)

// handover takes an attached terminal to its own engine when the leader
// it follows is gone, inside the running UI: the engine starts in the
// background (the top line says "starting own compare…" meanwhile), the
// terminal becomes a candidate for the Lease (unless read-only) and the
// UI switches to the engine, keeping its place. It stays on its engine
// after that: a new leader makes it a standby (it never writes without
// the Lease), not a follower again.
type handover struct {
	e        uiEngine
	gate     *leader.Gate
	cs       kubernetes.Interface
	dyn      dynamic.Interface
	ns       string
	readonly bool
	opts     actions.RepoOptions
	nudge    func(actions.Result) string
	follow   *leader.Follower
	sw       *backend.Switch

	cancel context.CancelFunc
	done   chan struct{}
	// err is the engine's error, once done is closed.
	err error
}

// start waits in the background for the followed leader to be gone;
// stop ends it.
func (h *handover) start(ctx context.Context) {
	ctx, h.cancel = context.WithCancel(ctx)
	h.done = make(chan struct{})
	go func() {
		defer close(h.done)
		h.err = h.run(ctx)
	}()
}

// stop ends the terminal's own engine, if it started, after its last
// write, then releases the Lease if this terminal held it. It returns
// the engine's error, if it failed.
func (h *handover) stop() error {
	h.cancel()
	<-h.done
	return h.err
}

// run waits for the leader to be gone, then runs the engine until ctx
// ends.
func (h *handover) run(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-h.follow.Gone():
	}
	h.follow.Stop()
	went, at := h.follow.Went()
	prefix := fmt.Sprintf("leader %s/%s gone at %s: ", went.Namespace, went.Holder, at.Local().Format("15:04"))
	h.sw.Announce(prefix + "starting own compare…")

	role := func() string { return "not healing: read-only" }
	stopCandidate := func() {}
	if !h.readonly {
		role, stopCandidate = candidate(ctx, h.cs, h.dyn, h.ns, h.e, h.gate)
	}
	// After the engine's last write: the Lease is released only then.
	defer stopCandidate()
	be := backend.NewEngine(h.e, h.opts)
	be.SetLeader(func() string { return prefix + "comparing here; " + role() }, h.nudge)
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	engineDone := make(chan error, 1)
	since := time.Now()
	go func() { engineDone <- h.e.Run(ectx) }()
	what := "the leader is gone: this terminal compares"
	if !h.readonly {
		what += ", and heals only while it holds the Lease"
	}
	h.sw.Switch(be, what)
	if h.comparedAll(ctx, since) {
		h.sw.Reload("")
	}
	<-ctx.Done()
	cancel()
	if err := <-engineDone; err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("engine: %w", err)
	}
	return nil
}

// comparedAll waits until the engine has compared every App in Git
// since since (each pass ends with a comparison time, failed or not);
// false when ctx ended first.
func (h *handover) comparedAll(ctx context.Context, since time.Time) bool {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		rev, names := h.e.Declared()
		if rev == "" {
			continue
		}
		all := true
		for _, n := range names {
			if st, ok := h.e.App(n); !ok || st.ComparedAt.Before(since) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
}
