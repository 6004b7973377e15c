package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	"kdrift.dev/kdrift/engine/status"
)

// Event reasons kdrift records. Each names what kdrift did or refused.
const (
	ReasonHealed         = "Healed"
	ReasonPruned         = "Pruned"
	ReasonFight          = "Fight"
	ReasonSyncFailed     = "SyncFailed"
	ReasonReplaceRefused = "ReplaceRefused"
	// ReasonFreezeExpiring says a resource or field freeze on the object
	// ends within fifteen minutes, with what resuming changes.
	ReasonFreezeExpiring = "FreezeExpiring"
)

// ReportingController is the reportingController of kdrift's Events.
const ReportingController = "kdrift.dev/controller"

// maxNote is the events API's limit on a note.
const maxNote = 1024

// Occurrence is one thing kdrift did or refused that deserves a Kubernetes
// Event on an object.
type Occurrence struct {
	// App is the App it happened for.
	App string
	// Context is the kubeconfig context of the App's cluster ("" is the
	// current one).
	Context string
	// Regarding is the object the Event is about.
	Regarding status.ObjectRef
	// Type is corev1.EventTypeNormal or EventTypeWarning.
	Type string
	// Reason is one of the Reason constants; Action is what kdrift did.
	Reason, Action string
	// Note says what happened, for a person.
	Note string
}

// OccurrenceOf maps an engine event to an Occurrence: heals, prunes and
// fights, object failures (a sync that failed), and an immutable change
// kdrift refuses to force. Other events (app statuses, drift, app-level
// errors with no object) are not Events; false says so.
func OccurrenceOf(ev status.Event) (Occurrence, bool) {
	o := Occurrence{App: ev.AppName(), Type: corev1.EventTypeNormal}
	switch ev := ev.(type) {
	case status.Healed:
		o.Regarding, o.Reason, o.Action = ev.Ref, ReasonHealed, "Heal"
		o.Note = fmt.Sprintf("kdrift put it back as Git declares it (app %s)", ev.App)
		if len(ev.Fields) > 0 {
			o.Note = fmt.Sprintf("kdrift put back %s as Git declares them (app %s)", strings.Join(ev.Fields, ", "), ev.App)
		}
	case status.Pruned:
		o.Regarding, o.Reason, o.Action = ev.Ref, ReasonPruned, "Prune"
		o.Note = fmt.Sprintf("kdrift deleted it: it left Git (app %s)", ev.App)
	case status.Fight:
		o.Regarding, o.Reason, o.Action, o.Type = ev.Ref, ReasonFight, "StopHealing", corev1.EventTypeWarning
		o.Note = fmt.Sprintf("%s rewrote %s %d times after kdrift healed it; kdrift stopped healing that field (app %s). Add an ignoreDifferences rule to the App, or change the other writer.", ev.Manager, ev.Field, ev.Rewrites, ev.App)
	case status.ErrorEvent:
		if ev.Ref == nil {
			return Occurrence{}, false
		}
		o.Regarding, o.Reason, o.Action, o.Type = *ev.Ref, ReasonSyncFailed, "Sync", corev1.EventTypeWarning
		o.Note = fmt.Sprintf("kdrift could not bring it to Git's state (app %s): %s", ev.App, ev.Message)
		if ev.Ref.Kind == "Secret" {
			// An apiserver message may quote the values it refused.
			o.Note = fmt.Sprintf("kdrift could not bring it to Git's state (app %s); the controller's output has the apiserver's answer", ev.App)
		}
	case status.FreezeExpiring:
		if ev.Resource == nil {
			// The whole app's freeze is about no one object.
			return Occurrence{}, false
		}
		o.Regarding, o.Reason, o.Action = *ev.Resource, ReasonFreezeExpiring, "Freeze"
		until := "soon"
		if ev.Freeze.Until != nil {
			until = "at " + ev.Freeze.Until.UTC().Format(time.RFC3339)
		}
		o.Note = fmt.Sprintf("the freeze by %s (%q) ends %s (app %s); ", ev.Freeze.By, ev.Freeze.Reason, until, ev.App)
		if len(ev.Changes) == 0 {
			o.Note += "nothing drifted under it"
		} else {
			o.Note += "self-heal will then put back: " + strings.Join(ev.Changes, "; ")
		}
		if ev.Resource.Kind == "Secret" {
			o.Note = fmt.Sprintf("the freeze by %s ends %s (app %s)", ev.Freeze.By, until, ev.App)
		}
	case status.DriftDetected:
		if ev.Resource.Status != status.ResourceRequiresReplace {
			return Occurrence{}, false
		}
		o.Regarding, o.Reason, o.Action, o.Type = ev.Resource.Ref, ReasonReplaceRefused, "Heal", corev1.EventTypeWarning
		o.Note = fmt.Sprintf("Git changes an immutable field; kdrift does not delete and re-create objects on its own (app %s): %s", ev.App, ev.Resource.Message)
		if ev.Resource.Ref.Kind == "Secret" {
			o.Note = fmt.Sprintf("Git changes an immutable field; kdrift does not delete and re-create objects on its own (app %s)", ev.App)
		}
	default:
		return Occurrence{}, false
	}
	o.Note = Redact(o.Note)
	if len(o.Note) > maxNote {
		o.Note = o.Note[:maxNote-3] + "..."
	}
	return o, true
}

// Sink writes Events to one cluster: client-go's events.EventSink (the
// events.k8s.io/v1 API) and a way to learn an object's UID, so that
// `kubectl describe` finds the Events of the object.
type Sink interface {
	events.EventSink
	// UID returns the object's UID, or "" when it cannot be read.
	UID(ctx context.Context, ref status.ObjectRef) types.UID
}

// RecorderOptions configure a Recorder. Zero fields take the defaults.
type RecorderOptions struct {
	// SinkFor returns the Sink of a kubeconfig context.
	SinkFor func(contextName string) (Sink, error)
	// Window is the least time between two writes about one object and
	// reason (default 1 minute): what happens again within it is counted
	// and written with the next write, as the Event's series count.
	Window time.Duration
	// Forget is how long a series lasts without a new occurrence before
	// the next one starts a new Event (default 10 minutes).
	Forget time.Duration
	// Regarding picks the object an occurrence's Event is about (default:
	// the object itself). A later change points it at the App's AppStatus
	// where one exists.
	Regarding func(o Occurrence) status.ObjectRef
	// Instance is the Events' reportingInstance (default: the host name,
	// the Pod's name in a cluster).
	Instance string
	// Log receives write failures (default: discarded).
	Log *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Buffer is how many occurrences may wait to be written (default
	// 1024); more are dropped and counted.
	Buffer int
}

// Recorder turns occurrences into Kubernetes Events, aggregated: at most
// one write per object and reason per Window, the repeats counted in the
// Event's series. Record never blocks the caller.
type Recorder struct {
	opts    RecorderOptions
	in      chan Occurrence
	series  map[seriesKey]*series
	dropped atomic.Int64
}

type seriesKey struct {
	context string
	ref     status.ObjectRef
	reason  string
}

// series is one Event in the cluster and the occurrences it stands for.
type series struct {
	sink      Sink
	event     *eventsv1.Event // as created; nil while its create failed
	occurred  int32           // occurrences so far
	written   int32           // occurrences the cluster's Event shows
	lastWrite time.Time
	lastSeen  time.Time
}

// NewRecorder returns a Recorder; Run does its writing.
func NewRecorder(opts RecorderOptions) *Recorder {
	if opts.Window <= 0 {
		opts.Window = time.Minute
	}
	if opts.Forget <= 0 {
		opts.Forget = 10 * time.Minute
	}
	if opts.Regarding == nil {
		opts.Regarding = func(o Occurrence) status.ObjectRef { return o.Regarding }
	}
	if opts.Instance == "" {
		opts.Instance, _ = os.Hostname()
		if opts.Instance == "" {
			opts.Instance = "kdrift"
		}
	}
	if len(opts.Instance) > 128 {
		opts.Instance = opts.Instance[:128]
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Buffer <= 0 {
		opts.Buffer = 1024
	}
	return &Recorder{opts: opts, in: make(chan Occurrence, opts.Buffer), series: map[seriesKey]*series{}}
}

// Record queues an occurrence; when the queue is full it is dropped and
// counted (Dropped).
func (r *Recorder) Record(o Occurrence) {
	select {
	case r.in <- o:
	default:
		r.dropped.Add(1)
	}
}

// Dropped counts occurrences Record could not queue.
func (r *Recorder) Dropped() int64 { return r.dropped.Load() }

// Run writes Events until ctx ends, then writes the counts still pending
// (bounded by a few seconds) and returns.
func (r *Recorder) Run(ctx context.Context) {
	tick := time.NewTicker(max(r.opts.Window/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		drain:
			for {
				select {
				case o := <-r.in:
					r.occur(fctx, o)
				default:
					break drain
				}
			}
			r.flush(fctx, true)
			cancel()
			return
		case o := <-r.in:
			r.occur(ctx, o)
		case <-tick.C:
			r.flush(ctx, false)
		}
	}
}

// notRecorded logs an Event that could not be written: a warning, except
// while kdrift is stopping (ctx ended), when losing the last Events is
// expected and not worth an operator's attention.
func (r *Recorder) notRecorded(ctx context.Context, o Occurrence, ref status.ObjectRef, err error) {
	if ctx.Err() != nil {
		r.opts.Log.Info("kubernetes event not recorded: kdrift is stopping", "reason", o.Reason, "object", ref.String(), "err", err)
		return
	}
	r.opts.Log.Warn("kubernetes event not recorded", "reason", o.Reason, "object", ref.String(), "err", err)
}

// occur counts an occurrence in its series, writing at once when the
// series is new or its last write is a Window old.
func (r *Recorder) occur(ctx context.Context, o Occurrence) {
	now := r.opts.Now()
	ref := r.opts.Regarding(o)
	key := seriesKey{context: o.Context, ref: status.ObjectRef{Group: ref.Group, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}, reason: o.Reason}
	s := r.series[key]
	if s != nil && now.Sub(s.lastSeen) >= r.opts.Forget && s.written == s.occurred {
		s = nil // a new episode: a new Event
	}
	if s == nil {
		sink, err := r.opts.SinkFor(o.Context)
		if err != nil {
			r.notRecorded(ctx, o, ref, err)
			return
		}
		s = &series{sink: sink, occurred: 1, lastSeen: now, lastWrite: now}
		r.series[key] = s
		ev := r.newEvent(ctx, sink, ref, o, now)
		out, err := sink.Create(ctx, ev)
		if err != nil {
			r.notRecorded(ctx, o, ref, err)
			delete(r.series, key)
			return
		}
		s.event, s.written = out, 1
		return
	}
	s.occurred++
	s.lastSeen = now
	if now.Sub(s.lastWrite) >= r.opts.Window {
		r.writeSeries(ctx, key, s, now)
	}
}

// flush writes the series whose count moved and whose last write is a
// Window old (all of them when final), and forgets finished ones.
func (r *Recorder) flush(ctx context.Context, final bool) {
	now := r.opts.Now()
	for key, s := range r.series {
		if s.occurred > s.written && (final || now.Sub(s.lastWrite) >= r.opts.Window) {
			r.writeSeries(ctx, key, s, now)
		}
		if s.occurred == s.written && now.Sub(s.lastSeen) >= r.opts.Forget {
			delete(r.series, key)
		}
	}
}

// writeSeries updates the Event's series count.
func (r *Recorder) writeSeries(ctx context.Context, key seriesKey, s *series, now time.Time) {
	s.lastWrite = now
	patch, err := json.Marshal(map[string]any{"series": eventsv1.EventSeries{Count: s.occurred, LastObservedTime: metav1.NewMicroTime(s.lastSeen)}})
	if err != nil {
		r.opts.Log.Warn("kubernetes event series not updated", "reason", key.reason, "object", key.ref.String(), "err", err)
		return
	}
	out, err := s.sink.Patch(ctx, s.event, patch)
	if apierrors.IsNotFound(err) {
		// The apiserver expired the Event (events live an hour by
		// default): the next occurrence starts a new one.
		delete(r.series, key)
		return
	}
	if err != nil {
		level := slog.LevelWarn
		if ctx.Err() != nil {
			level = slog.LevelInfo // kdrift is stopping
		}
		r.opts.Log.Log(ctx, level, "kubernetes event series not updated", "reason", key.reason, "object", key.ref.String(), "count", s.occurred, "err", err)
		return
	}
	s.event, s.written = out, s.occurred
}

// newEvent builds the first Event of a series.
func (r *Recorder) newEvent(ctx context.Context, sink Sink, ref status.ObjectRef, o Occurrence, now time.Time) *eventsv1.Event {
	apiVersion := ref.Version
	if ref.Group != "" {
		apiVersion = ref.Group + "/" + ref.Version
	}
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault // where cluster-scoped objects' Events go
	}
	return &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s.%x", ref.Name, now.UnixNano()),
			Namespace: ns,
		},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: ReportingController,
		ReportingInstance:   r.opts.Instance,
		Action:              o.Action,
		Reason:              o.Reason,
		Regarding: corev1.ObjectReference{
			APIVersion: apiVersion,
			Kind:       ref.Kind,
			Namespace:  ref.Namespace,
			Name:       ref.Name,
			UID:        sink.UID(ctx, ref),
		},
		Note: o.Note,
		Type: o.Type,
	}
}
