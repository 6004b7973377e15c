package engine

import (
	"context"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/ownerpause"
	"kdrift.dev/kdrift/engine/sops"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/engine/status"
)

// The engine's callers see it through the small interfaces below, each
// the methods one kind of caller needs (ARCHITECTURE.md, "The engine's
// interfaces"): none hands out the repository or a cluster's clients.
// An Engine is one of each; a caller takes the narrowest, or embeds the
// few it needs in an interface of its own.

// Runner runs the engine: the loop, passes on demand, the event stream
// and the counters.
type Runner interface {
	// Run is the loop until ctx ends.
	Run(ctx context.Context) error
	// Warm prepares what a first pass needs while Git is read.
	Warm(ctx context.Context)
	// Refresh asks Run to fetch Git now and re-compare every app.
	Refresh()
	// Reconcile runs one pass over every app (or the named ones) now.
	Reconcile(ctx context.Context, names ...string) error
	// Subscribe streams the events a UI shows.
	Subscribe() (<-chan status.Event, func())
	// SubscribeAll streams every event, per-object ones included.
	SubscribeAll() (<-chan status.Event, func())
	// SetMarks keeps each App's newest applied revision where a
	// restarted healer reads it.
	SetMarks(m Marks)
	// Stats are the engine's counters.
	Stats() Stats
}

// Reader answers what the engine knows of the apps, reading the clusters
// where the answer needs them; it writes nothing.
type Reader interface {
	// Apps is the status of every app, sorted by name.
	Apps() []status.AppStatus
	// App is one app's status.
	App(name string) (status.AppStatus, bool)
	// Declared is the Git revision read and the Apps declared there.
	Declared() (revision string, apps []string)
	// Inputs are the repository folders app's last render read.
	Inputs(app string) []string
	// Detail is one object of an app, Git side and live side.
	Detail(ctx context.Context, appName string, ref status.ObjectRef) (status.ObjectDetail, error)
	// CompareOne compares one object of an app now.
	CompareOne(ctx context.Context, appName string, ref status.ObjectRef, published *status.ResourceStatus) error
	// Owners is the field ownership map of the compared apps.
	Owners(ctx context.Context, opts diff.OwnerMapOptions, names ...string) (diff.OwnerMap, error)
	// Orphans are the tracked objects no app renders any more.
	Orphans(ctx context.Context, names ...string) ([]status.Orphan, error)
	// PreviewTree is what applying the tree after would change.
	PreviewTree(ctx context.Context, before, after string) (TreePreview, error)
	// AppSource says where the app list came from.
	AppSource() string
	// NoApps says why the last read of Git found no app; nil when it
	// found one.
	NoApps() *NoApps
	// FluxCluster says which Flux cluster folder the engine follows.
	FluxCluster() string
	// Channel is the incident channel as last read.
	Channel() source.ChannelRead
	// ResolveApps says how the apps are found beyond Git alone.
	ResolveApps(ctx context.Context) (*app.FluxCluster, []app.App, error)
}

// Actor writes to the clusters on a person's request.
type Actor interface {
	// Sync applies Git to one app now (or plans it: a dry run).
	Sync(ctx context.Context, name string, opts SyncOptions) (SyncResult, error)
	// WriteOwnerFreezes writes freezes a record on the incident channel
	// changed on the live declarations of the apps another tool owns.
	WriteOwnerFreezes(ctx context.Context, owned []app.OwnedFreeze, channel string) []ownerpause.Outcome
}

// Keys holds the age identities SOPS files are decrypted with.
type Keys interface {
	// SetKeys replaces the identities.
	SetKeys(keys *sops.Keyring)
	// LoadDecryptionSecret uses the identities of one Secret.
	LoadDecryptionSecret(ctx context.Context, namespace, name string) (string, error)
	// LoadFluxDecryptionKeys scopes the identities of the Flux
	// Kustomizations' decryption Secrets to their Apps.
	LoadFluxDecryptionKeys(ctx context.Context) (id string, warnings []error, err error)
	// FluxDecryptionSecrets names those Secrets.
	FluxDecryptionSecrets(ctx context.Context) ([]string, error)
}

// RepoInfo says which repository the engine reads and how its fetches
// went, without handing the repository out.
type RepoInfo interface {
	// RepoIdentity is the identity tracking annotations carry.
	RepoIdentity() string
	// ReadsFrom is the repository's location (credentials redacted) and
	// the branch read.
	ReadsFrom() (location, branch string)
	// FetchError is the last fetch's error, nil when Git answered.
	FetchError() error
	// FetchSkipped says whether the last fetch was skipped as fresh.
	FetchSkipped() source.FetchSkip
}

var (
	_ Runner   = (*core)(nil)
	_ Reader   = (*core)(nil)
	_ Actor    = (*core)(nil)
	_ Keys     = (*core)(nil)
	_ RepoInfo = (*core)(nil)
)
