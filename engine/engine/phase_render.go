package engine

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/apply"
	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/engine/status"
)

// phaseRender renders the App's folder, reaches its cluster, gives
// namespaced objects that name none the destination namespace and adds the
// tracking metadata. A render error is the app's status, in kustomize's
// words; so is a cluster that cannot be reached.
func (p *pass) phaseRender(ctx context.Context) bool {
	// The cluster is reached (version check, discovery) while Git is
	// rendered: for a one-shot command these are round trips of their
	// own, and neither needs the other.
	type reached struct {
		cl  *cluster
		err error
	}
	ready := make(chan reached, 1)
	go func() {
		cl, err := p.e.clusterFor(p.app.Spec.Destination.Context)
		if err == nil {
			err = cl.check(ctx)
		}
		ready <- reached{cl, err}
	}()
	h := p.app.RenderHelm()
	var probe string // see withValuesFrom
	var r reached
	waited := false
	tree, chart, err := p.e.chartTree(ctx, p.app, p.snap)
	var unreached *errSourcesUnreachable
	switch {
	case errors.As(err, &unreached):
		p.unreached = true
		return p.fail(status.SyncUnknown, err)
	case err != nil:
		return p.fail(status.SyncError, err)
	}
	if chart != nil {
		p.status.Chart = chart.what
		if s := p.e.chartApplied(p.app, chart); s != "" {
			p.status.OwnerApplied = s
		}
	}
	if render.IsChart(tree, path.Clean(p.app.Spec.Path)) {
		// A chart renders for its destination, as Argo CD renders it:
		// .Capabilities is the cluster's version and API versions, so it
		// waits for the version check and discovery (which the compare
		// needs next anyway). An unreachable cluster leaves the defaults.
		r, waited = <-ready, true
		if r.err == nil {
			r.cl.awaitDiscovery(ctx)
			h = r.cl.withCapabilities(h)
		}
	}
	if hs := p.app.Spec.Helm; hs != nil && len(hs.ValuesFrom) > 0 {
		// The release's values from ConfigMaps and Secrets are read from
		// its cluster before it renders.
		if !waited {
			r, waited = <-ready, true
		}
		if r.cl == nil || r.err != nil {
			p.unreached = true
			return p.fail(status.SyncUnknown, fmt.Errorf("spec.valuesFrom is read from the cluster, which cannot be reached: %v", r.err))
		}
		sensitive, pv, err := p.e.withValuesFrom(ctx, p.app, r.cl, h)
		if err != nil {
			return p.fail(status.SyncError, err)
		}
		p.sensitive, probe = sensitive, pv
	}
	start := time.Now()
	// The render cache's own objects, read-only: whatever changes one
	// (tracking, the namespace) changes a copy.
	objs, err := p.e.renderer.RenderAppShared(ctx, tree, p.app.Spec.Path, h)
	p.e.opts.Observer.Timed(PhaseRender, p.name, time.Since(start), err)
	if err != nil {
		return p.fail(status.SyncError, fmt.Errorf("render %s: %w", p.app.Spec.Path, err))
	}
	p.sensitiveObjs = p.probeSensitive(ctx, tree, h, probe, objs)
	// kdrift runs no hooks: they are not desired state.
	objs, _ = app.WithoutHooks(objs)
	if !waited {
		r = <-ready
	}
	if r.cl == nil {
		p.unreached = true
		return p.fail(status.SyncUnknown, r.err)
	}
	p.cl = r.cl
	p.e.reach(status.TargetCluster, r.cl.name, r.err)
	if r.err != nil {
		p.unreached = true
		return p.fail(status.SyncUnknown, r.err)
	}
	ns := p.app.Spec.Destination.Namespace
	if ns == "" {
		ns = "default"
	}
	p.desired = make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		t := o
		if p.app.Origin == nil {
			// An owned app's objects carry its owner's tracking, not
			// kdrift's: kdrift compares them and never adopts them.
			t = apply.Track(o, p.name, p.e.repoID)
		}
		if p.lacksNamespace(ctx, t) {
			t = p.namespaced(t, ns)
		}
		p.desired = append(p.desired, t)
	}
	p.findEncrypted()
	return true
}

// namespaced gives o, one of p.desired, namespace ns: in place when Track
// gave it metadata of its own, else (an owned app's object, which is the
// render cache's) on a copy.
func (p *pass) namespaced(o *unstructured.Unstructured, ns string) *unstructured.Unstructured {
	if p.app.Origin != nil {
		o = apply.CopyMetadata(o)
	}
	o.SetNamespace(ns)
	return o
}

// lacksNamespace reports whether o is a namespaced object that names no
// namespace: it gets the destination's. A kind the cluster does not serve
// yet (its CRD comes in the same sync) is left alone; its comparison says
// what is wrong.
func (p *pass) lacksNamespace(ctx context.Context, o *unstructured.Unstructured) bool {
	if o.GetNamespace() != "" {
		return false
	}
	gvk := o.GroupVersionKind()
	namespaced, known := p.scopes[gvk]
	if !known {
		m, err := p.cl.cs.Mapping(ctx, gvk)
		if err != nil {
			return false
		}
		namespaced = m.Scope.Name() == meta.RESTScopeNameNamespace
		if p.scopes == nil {
			p.scopes = map[schema.GroupVersionKind]bool{}
		}
		p.scopes[gvk] = namespaced
	}
	return namespaced
}

// Warm starts in the background what a first pass would otherwise wait
// for after reading Git: the renderer's one-time set-up (see
// render.Renderer.Warm) and, for the --context cluster or else the
// kubeconfig's current one, the connection, version check and discovery,
// and the list of live Argo CD Applications the first head load reads.
// A command calls it right after New, so they overlap reading Git; an
// app whose destination is another context reaches it as before. A
// failed check is the first pass's to report (it is not asked twice).
func (e *core) Warm(ctx context.Context) {
	e.renderer.Warm()
	go func() {
		cl, err := e.clusterFor(e.opts.Context)
		if err == nil {
			_ = cl.check(ctx)
		}
	}()
	early := make(chan liveApps, 1)
	e.mu.Lock()
	e.earlyApps = early
	e.mu.Unlock()
	go func() {
		var l liveApps
		l.objs, l.context, l.note = e.liveApplications(ctx)
		early <- l
	}()
}
