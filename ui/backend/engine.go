package backend

import (
	"bytes"
	"context"
	"sync"
	"time"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/ui/report"
)

// historyLimit bounds how many commits the history view lists.
const historyLimit = 200

// Reconciler is the reconcile engine as the Engine and Attached backends
// use it: its passes and events, its reads and its syncs.
type Reconciler interface {
	engine.Runner
	engine.Reader
	engine.Actor
}

// Engine is the Backend of the real product: the reconcile engine
// for status, diffs and syncs, and the Git actions for every commit.
type Engine struct {
	eng    Reconciler
	events <-chan status.Event
	cancel func()

	openActions func(context.Context) (*actions.Repo, error)
	mu          sync.Mutex
	repo        *actions.Repo

	// role and nudge are set by SetLeader.
	role  func() string
	nudge func(actions.Result) string
	// pruneOf, when set, says from elsewhere than the engine's statuses
	// whether an app prunes (an attached UI's published statuses).
	pruneOf func(app string) bool
}

// SetLeader tells the backend who heals (role: the top line's text, ""
// for none) and how to ask the repository's leader to fetch a pushed
// commit now (nudge: it returns what happened, for the status line; nil
// for no leader at all). Call it before the UI starts.
func (b *Engine) SetLeader(role func() string, nudge func(actions.Result) string) {
	b.role, b.nudge = role, nudge
}

// NoApps is why the engine found no app; nil when it found one.
func (b *Engine) NoApps() *engine.NoApps { return b.eng.NoApps() }

// Role says who heals, "" when nobody said.
func (b *Engine) Role() string {
	if b.role == nil {
		return ""
	}
	return b.role()
}

// NewEngine subscribes to eng's events and opens the Git actions
// repository on first use with opts (a repository that cannot be opened
// fails only the action that needed it, with the reason). Close ends the
// subscription.
func NewEngine(eng Reconciler, opts actions.RepoOptions) *Engine {
	ch, cancel := eng.Subscribe()
	return &Engine{
		eng:    eng,
		events: ch,
		cancel: cancel,
		openActions: func(ctx context.Context) (*actions.Repo, error) {
			return actions.Open(ctx, opts)
		},
	}
}

// Close ends the event subscription.
func (b *Engine) Close() { b.cancel() }

// Events is the engine's event stream.
func (b *Engine) Events() <-chan status.Event { return b.events }

// Apps is the engine's latest status of every app.
func (b *Engine) Apps() []status.AppStatus { return b.eng.Apps() }

// Refresh asks the engine to re-read Git and re-compare every app.
func (b *Engine) Refresh() { b.eng.Refresh() }

// Detail is one object of an app, Git side and live side.
func (b *Engine) Detail(ctx context.Context, appName string, ref status.ObjectRef) (status.ObjectDetail, error) {
	return b.eng.Detail(ctx, appName, ref)
}

// PlanSync asks the apiserver (dry-run) what a sync would do.
func (b *Engine) PlanSync(ctx context.Context, appName string) (SyncPlan, error) {
	res, err := b.eng.Sync(ctx, appName, engine.SyncOptions{DryRun: true, Prune: b.prunes(appName)})
	if err != nil {
		return SyncPlan{}, err
	}
	plan := engine.PlanOf(res)
	plan.App = appName
	return plan, nil
}

// prunes reports whether the app's syncPolicy deletes objects that left Git.
func (b *Engine) prunes(appName string) bool {
	if b.pruneOf != nil {
		return b.pruneOf(appName)
	}
	a, ok := b.eng.App(appName)
	return ok && a.Prune
}

// Sync applies Git to the app now; the UI has already asked twice when the
// app is frozen (req.Freeze) or the prune is large (req.ConfirmPrune).
func (b *Engine) Sync(ctx context.Context, appName string, req SyncRequest) error {
	// The engine's error keeps its type: an app-level failure wraps its
	// cause, failed objects come as *engine.ObjectsFailedError.
	_, err := b.eng.Sync(ctx, appName, engine.SyncOptions{AllowFrozen: req.Freeze != nil, SeenFreeze: req.Freeze, OverwriteFrozen: req.OverwriteFrozen, ConfirmPrune: req.ConfirmPrune, AllowOwned: req.Owned, Prune: b.prunes(appName)})
	return err
}

func (b *Engine) actionsRepo(ctx context.Context) (*actions.Repo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.repo != nil {
		return b.repo, nil
	}
	r, err := b.openActions(ctx)
	if err != nil {
		return nil, err
	}
	b.repo = r
	return r, nil
}

// commit runs one Git action and has the engine read the new head at once.
func (b *Engine) commit(ctx context.Context, do func(*actions.Repo) (actions.Result, error)) (CommitResult, error) {
	r, err := b.actionsRepo(ctx)
	if err != nil {
		return CommitResult{}, err
	}
	res, err := do(r)
	if err != nil {
		return CommitResult{}, err
	}
	b.eng.Refresh()
	out := CommitResult{Hash: res.Commit, Subject: res.Subject, Pushed: res.Pushed || res.Upstream == ""}
	if len(res.Owned) > 0 {
		// The engine that heals these apps reads the branch only: the
		// channel record reaches it through its live declaration.
		for _, o := range b.eng.WriteOwnerFreezes(ctx, res.Owned, res.Channel) {
			if o.Done {
				out.Owners = append(out.Owners, o.App+": "+o.Message)
			} else {
				out.OwnerProblems = append(out.OwnerProblems, o.App+": "+o.Message)
				if o.Command != "" {
					out.OwnerProblems = append(out.OwnerProblems, "  by hand: "+o.Command)
				}
			}
		}
	}
	if b.nudge != nil {
		out.Note = b.nudge(res)
	}
	switch {
	case res.Channel != "":
		out.Channel, out.NotTaken = res.Channel, res.NotTaken
	case res.Refused != nil:
		out.Pushed = false
		out.Warning = res.Summary()
		out.Refused = append([]string{res.Refused.Error()}, res.Refused.Lines...)
		if res.ChannelError != "" {
			out.Refused = append(out.Refused, "incident channel: "+res.ChannelError)
		}
	case res.PushError != "":
		out.Pushed = false
		out.Warning = "committed locally; push failed: " + res.PushError + "; `kdrift push` (or the next action) retries"
	}
	return out, nil
}

// Freeze commits spec.freeze on the apps.
func (b *Engine) Freeze(ctx context.Context, apps []string, reason string, d time.Duration) (CommitResult, error) {
	return b.commit(ctx, func(r *actions.Repo) (actions.Result, error) {
		return r.Freeze(ctx, actions.FreezeRequest{Selection: actions.Selection{Apps: apps}, Reason: reason, For: d})
	})
}

// Unfreeze commits the removal of spec.freeze from the apps.
func (b *Engine) Unfreeze(ctx context.Context, apps []string, reason string, seen map[string]*app.Freeze) (CommitResult, error) {
	return b.commit(ctx, func(r *actions.Repo) (actions.Result, error) {
		return r.Unfreeze(ctx, actions.UnfreezeRequest{Selection: actions.Selection{Apps: apps}, Reason: reason, Seen: seen})
	})
}

// FreezeResource commits a resource or field freeze on the app.
func (b *Engine) FreezeResource(ctx context.Context, appName string, refs []app.ResourceRef, fields []string, reason string, d time.Duration) (CommitResult, error) {
	return b.commit(ctx, func(r *actions.Repo) (actions.Result, error) {
		return r.FreezeResource(ctx, actions.ResourceFreezeRequest{App: appName, Resources: refs, Fields: fields, Reason: reason, For: d})
	})
}

// UnfreezeResource commits lifting a resource or field freeze of the app.
func (b *Engine) UnfreezeResource(ctx context.Context, appName string, ref app.ResourceRef, fields []string, reason string, seen *app.Freeze) (CommitResult, error) {
	return b.commit(ctx, func(r *actions.Repo) (actions.Result, error) {
		return r.UnfreezeResource(ctx, actions.ResourceUnfreezeRequest{App: appName, Resource: ref, Fields: fields, Reason: reason, Seen: seen})
	})
}

// Ignore commits an ignoreDifferences rule on the app.
func (b *Engine) Ignore(ctx context.Context, appName string, rule app.IgnoreRule, reason string) (CommitResult, error) {
	return b.commit(ctx, func(r *actions.Repo) (actions.Result, error) {
		return r.Ignore(ctx, actions.IgnoreRequest{App: appName, Rule: rule, Reason: reason})
	})
}

// Revert commits the undoing of a commit.
func (b *Engine) Revert(ctx context.Context, hash, reason string) (CommitResult, error) {
	return b.commit(ctx, func(r *actions.Repo) (actions.Result, error) {
		return r.Revert(ctx, actions.RevertRequest{Commit: hash, Reason: reason})
	})
}

// Owners is the field ownership map of every app the engine compared.
func (b *Engine) Owners(ctx context.Context, opts diff.OwnerMapOptions) (diff.OwnerMap, error) {
	return b.eng.Owners(ctx, opts)
}

// History lists the commits that touched the app, newest first: its path,
// its App file and the bases its last render read.
func (b *Engine) History(ctx context.Context, appName string) ([]status.Commit, error) {
	r, err := b.actionsRepo(ctx)
	if err != nil {
		return nil, err
	}
	return actions.History(ctx, r, appName, historyLimit, b.eng.Inputs(appName)...)
}

// RevertPreview is the diff the revert would commit, file by file, and
// under it what the cluster would change (engine.Reader.PreviewTree:
// renders and dry-runs, nothing written); when the cluster cannot be
// compared, a line says why.
func (b *Engine) RevertPreview(ctx context.Context, hash string) (string, error) {
	r, err := b.actionsRepo(ctx)
	if err != nil {
		return "", err
	}
	rd, err := r.RevertPreview(ctx, actions.RevertRequest{Commit: hash})
	if err != nil {
		return "", err
	}
	p := report.RevertPreview{Files: rd.Files}
	if p.Cluster, err = b.eng.PreviewTree(ctx, rd.Head, rd.Tree); err != nil {
		p.Cluster = engine.TreePreview{Unavailable: err.Error()}
	}
	var buf bytes.Buffer
	if err := report.WriteRevertPreview(&buf, p); err != nil {
		return "", err
	}
	return buf.String(), nil
}

var (
	_ Backend = (*Engine)(nil)
	_ Roler   = (*Engine)(nil)
)
