package engine

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/ownerpause"
	"kdrift.dev/kdrift/engine/redact"
	"kdrift.dev/kdrift/engine/status"
)

// ownerCheckTimeout bounds the read of an owner's live declaration.
const ownerCheckTimeout = 5 * time.Second

// checkOwnerPaused reads, for an app another GitOps tool owns and that a
// freeze on the incident channel holds, the tool's live declaration: the
// tool reads the desired branch only, so the freeze holds for it only
// while that declaration stays paused (engine/ownerpause). When the tool
// heals again (a parent re-applied the declaration, or the pause was never
// written) the status says so, and an Error event says it once.
func (p *pass) checkOwnerPaused(ctx context.Context) {
	a := p.app
	if a.Origin == nil || p.status.FreezeChannel == "" || !a.Spec.Freeze.ActiveAt(p.now) {
		p.st.ownerResumed = ""
		return
	}
	if app.ToolOf(a.Origin).Edits().Heal == nil {
		return
	}
	msg := p.ownerResumed(ctx, a)
	p.status.OwnerResumed = msg
	if msg != "" && msg != p.st.ownerResumed {
		p.e.bus.publish(status.ErrorEvent{Base: status.Base{App: p.name, Time: p.e.opts.Now()},
			Message: fmt.Sprintf("%s %s %s", a.Origin.Engine, a.Origin.Kind, msg)})
	}
	p.st.ownerResumed = msg
}

// ownerResumed is ownerpause.Resumed of a's live declaration, or why it
// could not be read; "" when it is paused, absent, or the cluster cannot
// be reached (the pass reports that).
func (p *pass) ownerResumed(ctx context.Context, a app.App) string {
	cs, err := p.e.clients.For(a.Origin.LiveContext)
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, ownerCheckTimeout)
	defer cancel()
	obj, err := ownerpause.Get(ctx, ownerpause.ClusterOf(cs), a.Origin)
	switch {
	case err == nil:
		return ownerpause.Resumed(obj, app.OwnedFreeze{App: a.Metadata.Name, Origin: *a.Origin, Freeze: a.Spec.Freeze}, p.status.FreezeChannel)
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return ""
	case apierrors.IsForbidden(err):
		return fmt.Sprintf("cannot be checked: its live %s is not readable (%s); grant get on it to see whether %s honours the channel freeze", a.Origin.Kind, redact.Text(err.Error()), a.Origin.Engine)
	}
	return ""
}

// WriteOwnerFreezes writes each freeze of owned, what a record on the
// incident channel changed for apps another GitOps tool owns, on its live
// declaration in the cluster of the current kubeconfig context, sharing
// the engine's connection: the tool reads the desired branch only, so the
// record reaches it there (engine/ownerpause). Each outcome says what
// was written, or why not and the command that does it by hand.
func (e *core) WriteOwnerFreezes(ctx context.Context, owned []app.OwnedFreeze, channel string) []ownerpause.Outcome {
	return ownerpause.WriteWith(ctx, e.clients, "", owned, channel)
}
