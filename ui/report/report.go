// Package report formats engine results for people and scripts: the text
// of `kdrift diff`, `kdrift status` and `kdrift sync`, the JSON of
// `kdrift status -o json`, and the JSON lines of `kdrift controller`. The
// JSON shapes are stable: fields are only ever added.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/forge"
	"kdrift.dev/kdrift/engine/sops"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/termsafe"
)

// Diff writes each drifted object of an app with its fields: desired
// value, live value and owners (manager, operation, subresource, class,
// and how long ago the manager wrote when managedFields says).
// Ignored fields are not shown; Secret values stay masked.
func Diff(w io.Writer, a status.AppStatus) error {
	now := time.Now()
	var b strings.Builder
	if a.Error != "" {
		fmt.Fprintf(&b, "app %s: %s\n", a.Name, a.Error)
	}
	if a.Sync == status.SyncOutOfSync && a.Difference != "" {
		// An app another engine owns: say why it differs before what.
		line := "app " + a.Name + ": " + a.SyncLabel()
		if t := OwnerRevisionText(a, now); t != "" {
			line += "; " + t
		}
		b.WriteString(line + "\n")
	}
	for _, r := range a.Resources {
		if r.Status == status.ResourceSynced || r.Status == status.ResourceIgnored || r.Status == status.ResourceGenerated {
			continue
		}
		fmt.Fprintf(&b, "%s  %s", r.Ref, r.Status)
		if d := DecidedText(r.Decided); d != "" {
			fmt.Fprintf(&b, "  (%s)", d)
		}
		if r.Message != "" {
			fmt.Fprintf(&b, ": %s", r.Message)
		}
		b.WriteString("\n")
		if d := DifferenceText(r.Difference, a.OwnerEngine); d != "" {
			fmt.Fprintf(&b, "  why:     %s\n", d)
		}
		if r.Frozen != nil {
			fmt.Fprintf(&b, "  frozen:  whole resource, %s\n", FreezeMark(r.Frozen, now))
		}
		for _, f := range r.Fields {
			if f.Ignored {
				continue
			}
			kind := ""
			if f.Extra {
				kind = " (not in Git)"
			}
			fmt.Fprintf(&b, "  %s%s\n", f.Path, kind)
			if f.Masked {
				// A Secret's values are never shown; that they differ is.
				fmt.Fprintf(&b, "    value:   %s\n", maskedChange(f))
			} else {
				fmt.Fprintf(&b, "    desired: %s\n", value(f.Desired))
				fmt.Fprintf(&b, "    live:    %s\n", value(f.Live))
			}
			fmt.Fprintf(&b, "    owner:   %s\n", owners(f, now))
			if d := DifferenceText(f.Difference, a.OwnerEngine); d != "" {
				fmt.Fprintf(&b, "    why:     %s\n", d)
			}
			if f.Frozen != nil {
				fmt.Fprintf(&b, "    frozen:  %s\n", FreezeMark(f.Frozen, now))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// DecidedText says which tier compared an object: "compared locally" (no
// request: kdrift's own apply is what is live) or "dry-run"; "" when the
// object was not compared.
func DecidedText(d status.Decided) string {
	switch d {
	case status.DecidedLocal:
		return "compared locally"
	case status.DecidedDryRun:
		return "dry-run"
	}
	return ""
}

// FreezeMark is one line on a freeze for a person: "by WHO 12m ago:
// \"REASON\", until 2026-12-02 19:00 UTC" (or "no end set"); self-heal
// leaves what it holds as it is live.
func FreezeMark(f *app.Freeze, now time.Time) string {
	if f == nil {
		return "not frozen"
	}
	at := f.At
	s := fmt.Sprintf("by %s %s: %q", f.By, Ago(&at, now), firstLine(f.Reason))
	if f.Until != nil {
		return s + ", until " + f.Until.UTC().Format("2006-01-02 15:04 MST")
	}
	return s + ", no end set"
}

// FrozenParts counts an app's resources that a resource or field freeze
// holds, and the drifted fields it keeps as they are live.
func FrozenParts(a status.AppStatus) (resources, fields int) {
	for _, r := range a.Resources {
		held := r.Frozen != nil
		for _, f := range r.Fields {
			held = held || f.Frozen != nil
		}
		if held {
			resources++
		}
		fields += r.FrozenDrift()
	}
	return resources, fields
}

// maskedChange says how a masked value differs, without showing it.
func maskedChange(f status.FieldChange) string {
	switch {
	case f.Desired == nil:
		return sops.Mask + " (not in Git)"
	case f.Live == nil:
		return sops.Mask + " (not in the cluster)"
	}
	return sops.Mask + " (differs)"
}

// value renders a field value as JSON; "(absent)" when the side has none.
func value(v any) string {
	if v == nil {
		return "(absent)"
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(raw)
}

// owners renders a field's owners as "manager (Operation/subresource,
// class, 12m ago)", the time left out when managedFields has none.
func owners(f status.FieldChange, now time.Time) string {
	if len(f.Owners) == 0 {
		return "none (" + string(status.OwnerDefaulted) + ")"
	}
	parts := make([]string, 0, len(f.Owners))
	for _, o := range f.Owners {
		op := o.Operation
		if o.Subresource != "" {
			op += "/" + o.Subresource
		}
		if o.Time != nil {
			parts = append(parts, fmt.Sprintf("%s (%s, %s, %s)", o.Manager, op, o.Class, Ago(o.Time, now)))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s (%s, %s)", o.Manager, op, o.Class))
	}
	return strings.Join(parts, ", ")
}

// Status writes one line per app: name, sync, health, self-heal (with the
// freeze), drifted objects, for how long it has been out of sync, and the
// error.
func Status(w io.Writer, apps []status.AppStatus, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "APP\tSYNC\tHEALTH\tSELF-HEAL\tDRIFTED\tOUT OF SYNC\tREVISION\tERROR")
	for _, a := range apps {
		heal := string(a.SelfHeal)
		if a.SelfHeal == status.SelfHealOff && a.OwnerPaused != "" {
			heal = a.OwnerPaused // "suspended in Git: REASON"
		}
		if a.SelfHeal == status.SelfHealFrozen && a.Freeze != nil {
			heal += fmt.Sprintf(" by %s %s ago", a.Freeze.By, Duration(now.Sub(a.Freeze.At)))
			if a.Freeze.Until != nil {
				heal += ", until " + a.Freeze.Until.UTC().Format("2006-01-02 15:04 MST")
			} else {
				heal += ", no end set"
			}
		}
		if n, fields := FrozenParts(a); n > 0 {
			heal += fmt.Sprintf(", %d resource(s) frozen (%d drifted field(s) held)", n, fields)
		}
		if a.FreezeChannel != "" {
			heal += " (channel " + a.FreezeChannel + ")"
		}
		if a.Owner != "" {
			// Another engine heals it, not kdrift: say whose setting it is.
			heal += " (" + a.Owner + ")"
		}
		if a.OwnerResumed != "" {
			heal += "; but " + a.OwnerEngine + " " + a.OwnerResumed
		}
		since := "-"
		if a.OutOfSyncSince != nil {
			since = Duration(now.Sub(*a.OutOfSyncSince))
		}
		rev := a.Revision
		if len(rev) > 7 {
			rev = rev[:7]
		}
		msg := a.Error
		if n := a.EncryptedObjects(); n > 0 && msg == "" {
			msg = fmt.Sprintf("%d Encrypted (not compared, never applied): %s", n, firstEncrypted(a))
		}
		sync := a.SyncLabel()
		if a.Sync == status.SyncSynced && a.NoObjects {
			sync += " · 0 objects" // empty on purpose, not "all match"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", oneLine(a.Name), sync, a.Health, oneLine(heal), a.DriftedObjects(), since, oneLine(rev), oneLine(msg))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, a := range apps {
		// Why an app another engine owns differs: its owner's revision.
		if a.Sync == status.SyncOutOfSync && a.Difference != "" && a.Difference != status.DifferenceDrift {
			if t := OwnerRevisionText(a, now); t != "" {
				if _, err := fmt.Fprintf(w, "%s: %s\n", oneLine(a.Name), oneLine(t)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// firstEncrypted is the first Encrypted resource and why.
func firstEncrypted(a status.AppStatus) string {
	for _, r := range a.Resources {
		if r.Status == status.ResourceEncrypted {
			return r.Ref.String() + ": " + r.Message
		}
	}
	return ""
}

// oneLine is s for one cell of a table: newlines become spaces, and tabs
// and every other control character are shown escaped (termsafe.Line),
// so text from Git or the cluster neither breaks the columns nor acts
// on the terminal.
func oneLine(s string) string {
	return termsafe.Line(strings.ReplaceAll(s, "\n", " "))
}

// StatusDoc is the JSON of `kdrift status -o json`.
type StatusDoc struct {
	// Apps are every App, sorted by name.
	Apps []AppSummary `json:"apps"`
	// PullRequestsNote says why the forge's open requests are not shown
	// (an error, a timeout); empty when they are, or when no forge token
	// is configured.
	PullRequestsNote string `json:"pullRequestsNote,omitempty"`
	// ChannelRefused are the incident channel's commits that are not
	// freeze records, each saying which, by whom and what it changed:
	// readers skip them.
	ChannelRefused []string `json:"channelRefused,omitempty"`
	// NoApps says why no app was found and what to do next; absent when
	// one was.
	NoApps *NoAppsDoc `json:"noApps,omitempty"`
}

// AppSummary is one app in StatusDoc.
type AppSummary struct {
	// Name is the App's metadata.name.
	Name string `json:"name"`
	// File is the App file, relative to the repository root.
	File string `json:"file,omitempty"`
	// Path is the App's spec.path.
	Path string `json:"path,omitempty"`
	// Context and Namespace are the App's destination.
	Context   string `json:"context,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// Sync is Synced, OutOfSync, Unknown or Error.
	Sync status.Sync `json:"sync"`
	// Health is Healthy, Progressing, Degraded, Missing or Unknown.
	Health status.Health `json:"health"`
	// HealthDetail says why when the app is not Healthy: the rule that
	// decided (a kind, "kstatus", "cel", "none"), its message and the
	// object it judged.
	HealthDetail *status.HealthDetail `json:"healthDetail,omitempty"`
	// Canaries are the progressive deliveries in flight (Argo Rollouts,
	// Flagger): step, weight, analysis.
	Canaries []status.Canary `json:"canaries,omitempty"`
	// SelfHeal is on, off or frozen.
	SelfHeal status.SelfHeal `json:"selfHeal"`
	// Prune is the App's syncPolicy.prune.
	Prune bool `json:"prune"`
	// Freeze is set while the App is frozen: reason, by, at, until.
	Freeze any `json:"freeze,omitempty"`
	// Freezes are the App's resource and field freezes in force:
	// resource (group, kind, namespace, name), fields (JSON pointers;
	// none for the whole resource), reason, by, at, until. Frozen drift
	// is marked in Drifted (resource or field "frozen").
	Freezes []app.ResourceFreeze `json:"freezes,omitempty"`
	// OutOfSyncSince is when the app last went OutOfSync; absent when not.
	OutOfSyncSince *time.Time `json:"outOfSyncSince,omitempty"`
	// Revision is the Git commit compared.
	Revision string `json:"revision,omitempty"`
	// RevisionRef is where Revision was read: the upstream as last
	// fetched ("origin/main"), or the local branch when NoUpstream.
	RevisionRef string `json:"revisionRef,omitempty"`
	// NoUpstream says the branch has no upstream: the local branch is the
	// truth.
	NoUpstream bool `json:"noUpstream,omitempty"`
	// LocalFreeze says Freeze is in a local commit not pushed yet.
	LocalFreeze bool `json:"localFreeze,omitempty"`
	// FreezeChannel names the incident channel a freeze comes from.
	FreezeChannel string `json:"freezeChannel,omitempty"`
	// Owner is the Argo CD Application or Flux Kustomization that owns
	// the app and heals it (kdrift never does); absent for a kdrift App.
	// SelfHeal and Prune are then the owner's settings.
	Owner string `json:"owner,omitempty"`
	// OwnerFile is the owner's file, or the app whose render generates it.
	OwnerFile string `json:"ownerFile,omitempty"`
	// OwnerPaused says why the owner does not heal although kdrift did
	// not freeze it: "suspended in Git" (with Flux's reason),
	// "skip-reconcile in Git".
	OwnerPaused string `json:"ownerPaused,omitempty"`
	// OwnerResumed says the owner heals again although a freeze on the
	// incident channel holds, or that its live declaration was never
	// paused.
	OwnerResumed string `json:"ownerResumed,omitempty"`
	// OwnerApplied says which revision the owner's controller last
	// applied, against the revision kdrift compares.
	OwnerApplied string `json:"ownerApplied,omitempty"`
	// OwnerRevision is OwnerApplied as values: engine, applied revision
	// and when, the desired revision and its ref, and whether the owner
	// is behind.
	OwnerRevision *status.OwnerRevision `json:"ownerRevision,omitempty"`
	// Difference says why an app another engine owns is OutOfSync:
	// "drift" (a person or a controller), "waiting" (the owner has not
	// applied the desired revision yet), "render" (the owner applied it
	// and its render differs from kdrift's).
	Difference status.Difference `json:"difference,omitempty"`
	// SyncLabel is Sync as views show it: "OutOfSync (waiting for Argo
	// CD)".
	SyncLabel string `json:"syncLabel"`
	// Chart says which remote chart the app rendered: name, version,
	// digest, and what allowed and resolved it.
	Chart string `json:"chart,omitempty"`
	// Objects counts the objects the app's render gave (0: the app is
	// empty on purpose; a render that read nothing while skipping files
	// is an Error instead).
	Objects int `json:"objects"`
	// DriftedObjects counts resources neither Synced nor Ignored.
	DriftedObjects int `json:"driftedObjects"`
	// DriftedFields counts the drifted fields of those resources
	// (status.AppStatus.DriftedFields), as the views and metrics count.
	DriftedFields int `json:"driftedFields"`
	// EncryptedObjects counts resources rendered from SOPS files no
	// identity here decrypts; they are listed in Drifted with status
	// Encrypted and a message naming the file, its recipients and where
	// kdrift looked for keys.
	EncryptedObjects int `json:"encryptedObjects,omitempty"`
	// Drifted are those resources, with their changed fields (see
	// status.ResourceStatus: ref, status, health, fields, message).
	Drifted []status.ResourceStatus `json:"drifted"`
	// Generated are the objects other controllers made from the app's
	// objects (a SealedSecret's or ExternalSecret's Secret), each with its
	// parent: never drift, never pruned.
	Generated []status.ResourceStatus `json:"generated,omitempty"`
	// Fights are fields kdrift stopped healing because another manager
	// kept rewriting them.
	Fights []status.Fight `json:"fights,omitempty"`
	// Error explains Sync Error or Unknown.
	Error string `json:"error,omitempty"`
	// ComparedAt is when the app was last compared.
	ComparedAt time.Time `json:"comparedAt"`
	// PullRequests are kdrift's open pull requests (merge requests) that
	// change the App, until they merge: number, state, review decision,
	// URL. Read from the forge only when a token is configured.
	PullRequests []forge.PullRequest `json:"pullRequests,omitempty"`
}

// Summarize turns statuses into StatusDoc.
func Summarize(apps []status.AppStatus) StatusDoc {
	doc := StatusDoc{Apps: make([]AppSummary, 0, len(apps))}
	for _, a := range apps {
		s := AppSummary{Name: a.Name, File: a.File, Path: a.Path, Context: a.Destination.Context, Namespace: a.Destination.Namespace,
			Sync: a.Sync, Health: a.Health, HealthDetail: a.HealthDetail, Canaries: a.Canaries, SelfHeal: a.SelfHeal, Prune: a.Prune, Freezes: a.Freezes, OutOfSyncSince: a.OutOfSyncSince,
			Revision: a.Revision, RevisionRef: a.RevisionRef, NoUpstream: a.NoUpstream, LocalFreeze: a.LocalFreeze, FreezeChannel: a.FreezeChannel, Owner: a.Owner, OwnerFile: a.OwnerFile, OwnerPaused: a.OwnerPaused, OwnerResumed: a.OwnerResumed, OwnerApplied: a.OwnerApplied, OwnerRevision: a.OwnerRevision, Difference: a.Difference, SyncLabel: a.SyncLabel(), Chart: a.Chart, Objects: a.Objects(), DriftedObjects: a.DriftedObjects(), DriftedFields: a.DriftedFields(), EncryptedObjects: a.EncryptedObjects(), Drifted: []status.ResourceStatus{}, Fights: a.Fights, Error: a.Error, ComparedAt: a.ComparedAt}
		if a.Freeze != nil {
			s.Freeze = a.Freeze
		}
		for _, r := range a.Resources {
			switch r.Status {
			case status.ResourceSynced, status.ResourceIgnored:
			case status.ResourceGenerated:
				s.Generated = append(s.Generated, r)
			default:
				s.Drifted = append(s.Drifted, r)
			}
		}
		doc.Apps = append(doc.Apps, s)
	}
	sort.Slice(doc.Apps, func(i, j int) bool { return doc.Apps[i].Name < doc.Apps[j].Name })
	return doc
}

// AttachRequests puts each App's open requests on its summary.
func (d *StatusDoc) AttachRequests(prs []forge.PullRequest) {
	by := forge.ByApp(prs)
	for i := range d.Apps {
		d.Apps[i].PullRequests = by[d.Apps[i].Name]
	}
}

// RequestLine is one open request in a line for a person:
// "pull request #3 (open, review required) https://…".
func RequestLine(p forge.PullRequest) string {
	s := fmt.Sprintf("pull request #%d (%s", p.Number, p.State)
	if p.Review != "" {
		s += ", " + p.Review
	}
	return s + ") " + p.URL
}

// WriteRequests writes, under the status table, each App's open requests.
func WriteRequests(w io.Writer, d StatusDoc) error {
	for _, a := range d.Apps {
		for _, p := range a.PullRequests {
			if _, err := fmt.Fprintf(w, "%s: %s\n", a.Name, RequestLine(p)); err != nil {
				return err
			}
		}
	}
	return nil
}

// StatusJSON writes StatusDoc, indented.
func StatusJSON(w io.Writer, apps []status.AppStatus) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(Summarize(apps))
}
