package controller

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
)

// fakeSink keeps what the recorder writes.
type fakeSink struct {
	mu      sync.Mutex
	created []*eventsv1.Event
	patches []int32 // series counts patched
}

func (s *fakeSink) Create(_ context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.created = append(s.created, ev)
	return ev, nil
}

func (s *fakeSink) Update(_ context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	return ev, nil
}

func (s *fakeSink) Patch(_ context.Context, ev *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	var p struct {
		Series eventsv1.EventSeries `json:"series"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.patches = append(s.patches, p.Series.Count)
	return ev, nil
}

func (s *fakeSink) UID(context.Context, status.ObjectRef) types.UID { return "uid-1" }

// TestRecorderAggregates: occurrences about one object and reason within a
// minute are one Event; the repeats are written as its series count once
// the minute has passed, not one write each. Another reason or object is
// its own Event, and a series that went quiet for Forget starts anew.
func TestRecorderAggregates(t *testing.T) {
	sink := &fakeSink{}
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	r := NewRecorder(RecorderOptions{SinkFor: func(string) (Sink, error) { return sink, nil }, Now: func() time.Time { return now }})
	ctx := context.Background()
	ref := status.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	heal := Occurrence{App: "shop", Regarding: ref, Type: "Normal", Reason: ReasonHealed, Action: "Heal", Note: "healed"}

	r.occur(ctx, heal)
	for i := 0; i < 5; i++ {
		now = now.Add(10 * time.Second)
		r.occur(ctx, heal)
		r.flush(ctx, false)
	}
	if len(sink.created) != 1 || len(sink.patches) != 0 {
		t.Fatalf("within the minute: %d creates, %d patches; want 1 and 0", len(sink.created), len(sink.patches))
	}
	ev := sink.created[0]
	if ev.Regarding.APIVersion != "apps/v1" || ev.Regarding.UID != "uid-1" || ev.Namespace != "shop" || ev.ReportingController != ReportingController || ev.Reason != ReasonHealed || ev.Series != nil {
		t.Fatalf("first Event: %+v", ev)
	}
	now = now.Add(10 * time.Second) // a minute after the create
	r.flush(ctx, false)
	if len(sink.patches) != 1 || sink.patches[0] != 6 {
		t.Fatalf("after the minute: patches %v, want [6]", sink.patches)
	}
	r.flush(ctx, false)
	if len(sink.patches) != 1 {
		t.Fatalf("a flush with nothing new wrote again: %v", sink.patches)
	}

	// Another reason on the same object is another Event.
	r.occur(ctx, Occurrence{App: "shop", Regarding: ref, Type: "Warning", Reason: ReasonFight, Action: "StopHealing", Note: "fight"})
	if len(sink.created) != 2 {
		t.Fatalf("a Fight after Heals: %d creates, want 2", len(sink.created))
	}

	// Quiet for Forget: the next heal is a new Event.
	now = now.Add(11 * time.Minute)
	r.flush(ctx, false)
	r.occur(ctx, heal)
	if len(sink.created) != 3 {
		t.Fatalf("a heal after 11 quiet minutes: %d creates, want 3", len(sink.created))
	}

	// Stopping writes the counts still pending.
	r.occur(ctx, heal)
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	r.Run(stopped)
	if last := sink.patches[len(sink.patches)-1]; last != 2 {
		t.Fatalf("on stop: last series count %d, want 2", last)
	}
}

// TestOccurrences: which engine events become Events, with what reason
// and type; a Secret's failure never carries the apiserver's message, and
// notes have URL credentials removed and fit the API's 1 kB.
func TestOccurrences(t *testing.T) {
	ref := status.ObjectRef{Version: "v1", Kind: "Secret", Namespace: "shop", Name: "db"}
	base := status.Base{App: "shop", Time: time.Now()}
	if _, ok := OccurrenceOf(status.AppStatusChanged{Base: base}); ok {
		t.Fatal("an AppStatusChanged became an Event")
	}
	if _, ok := OccurrenceOf(status.ErrorEvent{Base: base, Message: "render failed"}); ok {
		t.Fatal("an app-level error with no object became an Event")
	}
	o, ok := OccurrenceOf(status.ErrorEvent{Base: base, Ref: &ref, Message: `Secret "db" is invalid: data[password]: Invalid value: "hunter2"`})
	if !ok || o.Reason != ReasonSyncFailed || o.Type != "Warning" || strings.Contains(o.Note, "hunter2") {
		t.Fatalf("a Secret's failure: %+v", o)
	}
	cm := status.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "c"}
	o, _ = OccurrenceOf(status.ErrorEvent{Base: base, Ref: &cm, Message: "fetch https://bot:s3cret@git.example/x.git failed " + strings.Repeat("x", 2000)})
	if strings.Contains(o.Note, "s3cret") || len(o.Note) > maxNote {
		t.Fatalf("note not redacted or too long (%d bytes): %.200s", len(o.Note), o.Note)
	}
	o, ok = OccurrenceOf(status.DriftDetected{Base: base, Resource: status.ResourceStatus{Ref: cm, Status: status.ResourceRequiresReplace, Message: "field is immutable"}})
	if !ok || o.Reason != ReasonReplaceRefused || o.Type != "Warning" {
		t.Fatalf("an immutable change: %+v", o)
	}
	if _, ok := OccurrenceOf(status.DriftDetected{Base: base, Resource: status.ResourceStatus{Ref: cm, Status: status.ResourceOutOfSync}}); ok {
		t.Fatal("plain drift became an Event")
	}
	until := time.Date(2026, 12, 2, 19, 0, 0, 0, time.UTC)
	fz := app.Freeze{Reason: "INC-1 hand-scaled", By: "Lao Li <lao.li@example.com>", Until: &until}
	o, ok = OccurrenceOf(status.FreezeExpiring{Base: base, Resource: &cm, Fields: []string{"/data/a"}, Freeze: fz, Changes: []string{`ConfigMap/shop/c /data/a: "2" → "1"`}})
	if !ok || o.Reason != ReasonFreezeExpiring || o.Regarding != cm || !strings.Contains(o.Note, "ends at 2026-12-02T19:00:00Z") || !strings.Contains(o.Note, `self-heal will then put back: ConfigMap/shop/c /data/a: "2" → "1"`) {
		t.Fatalf("a freeze expiring: %+v", o)
	}
	if _, ok := OccurrenceOf(status.FreezeExpiring{Base: base, Freeze: fz}); ok {
		t.Fatal("an app freeze expiring, about no object, became an Event")
	}
}
