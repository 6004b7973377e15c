package status

import (
	"time"

	"kdrift.dev/kdrift/engine/app"
)

// EventType names an engine event in its JSON form.
type EventType string

// EventType values.
const (
	EventAppStatus EventType = "AppStatusChanged"
	EventDrift     EventType = "DriftDetected"
	EventHealed    EventType = "Healed"
	EventPruned    EventType = "Pruned"
	EventFight     EventType = "Fight"
	EventOverride  EventType = "Override"
	EventError     EventType = "Error"
	// EventFreezeExpiring is FreezeExpiring's type.
	EventFreezeExpiring EventType = "FreezeExpiring"
)

// Event is one thing the engine tells its listeners. Every event names the
// app it is about and when it happened.
type Event interface {
	// Type is the event's name in JSON output.
	Type() EventType
	// AppName is the app the event is about; empty for engine-wide errors.
	AppName() string
	// When is when the engine saw it.
	When() time.Time
}

// Base carries what every event has.
type Base struct {
	App  string    `json:"app"`
	Time time.Time `json:"time"`
}

// AppName is the app the event is about.
func (b Base) AppName() string { return b.App }

// When is when the engine saw the event.
func (b Base) When() time.Time { return b.Time }

// AppStatusChanged says an app's status is new; it carries all of it.
type AppStatusChanged struct {
	Base
	Status AppStatus `json:"status"`
}

// Type is EventAppStatus.
func (AppStatusChanged) Type() EventType { return EventAppStatus }

// DriftDetected says an object drifted, with its changed fields.
type DriftDetected struct {
	Base
	Resource ResourceStatus `json:"resource"`
}

// Type is EventDrift.
func (DriftDetected) Type() EventType { return EventDrift }

// Healed says kdrift put an object's drifted fields back.
type Healed struct {
	Base
	Ref    ObjectRef `json:"ref"`
	Fields []string  `json:"fields"`
}

// Type is EventHealed.
func (Healed) Type() EventType { return EventHealed }

// Pruned says kdrift deleted a tracked object that left Git.
type Pruned struct {
	Base
	Ref ObjectRef `json:"ref"`
}

// Type is EventPruned.
func (Pruned) Type() EventType { return EventPruned }

// Fight says another manager keeps rewriting a field kdrift healed; kdrift
// stopped healing that field.
type Fight struct {
	Base
	Ref     ObjectRef `json:"ref"`
	Field   string    `json:"field"`
	Manager string    `json:"manager"`
	// Rewrites counts the other manager's writes inside the window.
	Rewrites int `json:"rewrites"`
}

// Type is EventFight.
func (Fight) Type() EventType { return EventFight }

// Override says a person (a manager that is not a controller: kubectl, a
// console) keeps rewriting a field kdrift heals. kdrift heals it every
// time and says so once per burst of rewrites: if the change is meant to
// last, the answer is a freeze, with its reason, in Git.
type Override struct {
	Base
	Ref     ObjectRef `json:"ref"`
	Field   string    `json:"field"`
	Manager string    `json:"manager"`
	// Rewrites counts the manager's rewrites in this burst so far.
	Rewrites int `json:"rewrites"`
	// Since is when the burst's first rewrite was seen; Time the last.
	Since time.Time `json:"since"`
}

// Type is EventOverride.
func (Override) Type() EventType { return EventOverride }

// ErrorEvent reports a failure: of an app, an object, Git or the cluster.
type ErrorEvent struct {
	Base
	Ref     *ObjectRef `json:"ref,omitempty"`
	Message string     `json:"message"`
}

// Type is EventError.
func (ErrorEvent) Type() EventType { return EventError }

// FreezeExpiringWithin is how long before its end a freeze is announced
// as ending (FreezeExpiring), so that the on-call can extend it or get
// ready for what resuming changes.
const FreezeExpiringWithin = 15 * time.Minute

// FreezeExpiring says a freeze ends soon (within FreezeExpiringWithin):
// the app's freeze, or a resource or field freeze (Resource set), with
// what self-heal will change once it ends.
type FreezeExpiring struct {
	Base
	// Resource is the frozen object of a resource or field freeze; nil
	// for the whole app's freeze.
	Resource *ObjectRef `json:"resource,omitempty"`
	// Fields are the frozen fields of a field freeze.
	Fields []string `json:"fields,omitempty"`
	// Freeze is who froze it, why, since and until when.
	Freeze app.Freeze `json:"freeze"`
	// Changes are what resuming puts back, one per drifted field:
	// "Deployment/staging/render-worker /spec/replicas: 12 → 6".
	Changes []string `json:"changes"`
}

// Type is EventFreezeExpiring.
func (FreezeExpiring) Type() EventType { return EventFreezeExpiring }
