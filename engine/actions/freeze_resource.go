package actions

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"kdrift.dev/kdrift/engine/app"
)

// TrailerResource names, in a resource or field freeze commit, each object
// frozen or unfrozen (KIND[.GROUP]/[NAMESPACE/]NAME), and TrailerField each
// frozen field pointer.
const (
	TrailerResource = "Kdrift-Resource"
	TrailerField    = "Kdrift-Field"
)

// ResourceFreezeRequest asks to freeze resources of one app, or only some
// fields of them (JSON pointers), with a reason and an optional end,
// while the rest of the app keeps healing.
type ResourceFreezeRequest struct {
	App       string
	Resources []app.ResourceRef
	// Queries are references as a person typed them (deploy/web); each is
	// resolved against the objects the App renders at the head into a
	// Resource with its group and namespace, and one that names no object
	// is refused with the candidates.
	Queries []app.ResourceQuery
	// Fields are the frozen fields of every resource; empty freezes the
	// whole resources (neither healed nor pruned).
	Fields []string
	Reason string
	// For ends the freeze after this long; Until ends it at a time; with
	// neither it holds until unfrozen.
	For   time.Duration
	Until *time.Time
}

// ResourceUnfreezeRequest asks to lift a resource or field freeze of one
// app.
type ResourceUnfreezeRequest struct {
	App      string
	Resource app.ResourceRef
	// Query, when set, is the reference as a person typed it; it is
	// resolved against the App's freezes, then its rendered objects.
	Query *app.ResourceQuery
	// Fields lifts only these frozen fields; empty lifts every freeze of
	// the resource.
	Fields []string
	Reason string
	// Seen, when set, is the freeze the person saw (the UI passes what it
	// displayed); a resource frozen by another freeze at the head is
	// refused with a *FreezeChangedError.
	Seen *app.Freeze
}

// checkFields refuses malformed pointers and pointers that would freeze
// the whole object or the fields that name it.
func checkFields(fields []string) error {
	seen := map[string]bool{}
	for _, p := range fields {
		if err := ValidateJSONPointer(p); err != nil {
			return fmt.Errorf("--field: %w", err)
		}
		if p == "/" || p == "/metadata" || strings.HasPrefix(p, "/metadata/name") || p == "/metadata/namespace" || p == "/kind" || p == "/apiVersion" {
			return fmt.Errorf("--field %q names the object itself, which cannot be frozen; freeze the whole resource (no --field) or a field such as /spec/replicas", p)
		}
		if p == "/metadata/annotations" || p == "/metadata/labels" {
			return fmt.Errorf("--field %q would freeze kdrift's own tracking labels and annotations too; freeze one key, such as %s/note", p, p)
		}
		if seen[p] {
			return fmt.Errorf("--field %q is given twice", p)
		}
		seen[p] = true
	}
	return nil
}

func checkResource(r app.ResourceRef) error {
	if strings.TrimSpace(r.Kind) == "" || strings.TrimSpace(r.Name) == "" {
		return fmt.Errorf("--resource is required: name the object as KIND[.GROUP]/NAME, such as Deployment.apps/render-worker")
	}
	return nil
}

// endOf is the end of a freeze asked for with --for or --until.
func endOf(now time.Time, forD time.Duration, until *time.Time) (*time.Time, error) {
	switch {
	case forD != 0 && until != nil:
		return nil, fmt.Errorf("pass --for or --until, not both")
	case forD < 0:
		return nil, fmt.Errorf("--for %s: the duration must be positive", forD)
	case forD > 0:
		u := now.Add(forD)
		return &u, nil
	case until != nil:
		if !until.After(now) {
			return nil, fmt.Errorf("--until %s is not in the future", until.UTC().Format(time.RFC3339))
		}
		u := until.UTC().Truncate(time.Second)
		return &u, nil
	}
	return nil, nil
}

// resourceTrailers are the action's trailers plus one per resource and
// field.
func resourceTrailers(action, appName string, refs []app.ResourceRef, fields []string) []trailer {
	ts := actionTrailers(action, []string{appName})
	for _, r := range refs {
		ts = append(ts, trailer{TrailerResource, r.String()})
	}
	for _, f := range fields {
		ts = append(ts, trailer{TrailerField, f})
	}
	return ts
}

// FreezeResource adds one spec.freezes entry per resource to the app in
// one commit. A field (or resource) an active freeze already holds is
// refused, naming that freeze.
func (r *Repo) FreezeResource(ctx context.Context, req ResourceFreezeRequest) (Result, error) {
	reason, err := cleanReason(req.Reason)
	if err != nil {
		return Result{}, err
	}
	if strings.TrimSpace(req.App) == "" {
		return Result{}, fmt.Errorf("no app named: pass the APP whose resource to freeze")
	}
	if len(req.Resources) == 0 && len(req.Queries) == 0 {
		return Result{}, checkResource(app.ResourceRef{})
	}
	for _, q := range req.Queries {
		if err := checkResource(app.ResourceRef{Kind: q.Kind, Name: q.Name}); err != nil {
			return Result{}, err
		}
	}
	for _, res := range req.Resources {
		if err := checkResource(res); err != nil {
			return Result{}, err
		}
	}
	if err := checkFields(req.Fields); err != nil {
		return Result{}, err
	}
	now := r.opts.Now().UTC().Truncate(time.Second)
	until, err := endOf(now, req.For, req.Until)
	if err != nil {
		return Result{}, err
	}
	id, err := r.Identity()
	if err != nil {
		return Result{}, err
	}
	return r.commitFreeze(ctx, func(s *snapshot) (*plan, error) {
		a, err := loadApp(s, req.App)
		if err != nil {
			return nil, err
		}
		if a.Origin != nil {
			return nil, &OwnedFreezeError{App: a.Metadata.Name, Owner: a.Origin.Owner(), Where: a.Origin.Where()}
		}
		refs := append([]app.ResourceRef(nil), req.Resources...)
		if len(req.Queries) > 0 {
			objs, kinds, err := appObjects(ctx, s, a)
			if err != nil {
				return nil, err
			}
			for _, q := range req.Queries {
				ref, err := resolveQuery(a.Metadata.Name, a.Spec.Destination.Namespace, q, objs, kinds, true)
				if err != nil {
					return nil, err
				}
				refs = append(refs, ref)
			}
		}
		var add []app.ResourceFreeze
		for _, res := range refs {
			for _, held := range a.Spec.Freezes {
				if held.Resource != res || !held.ActiveAt(now) {
					continue
				}
				if held.Whole() {
					return nil, fmt.Errorf("App %s: %s is already frozen whole (%s); unfreeze it first", a.Metadata.Name, res, held.Mark().Describe())
				}
				if len(req.Fields) == 0 {
					return nil, fmt.Errorf("App %s: %s already has frozen fields %s (%s); unfreeze them first to freeze the whole resource", a.Metadata.Name, res, strings.Join(held.Fields, ", "), held.Mark().Describe())
				}
				for _, p := range req.Fields {
					if held.Covers(p) {
						return nil, fmt.Errorf("App %s: %s field %s is already frozen (%s)", a.Metadata.Name, res, p, held.Mark().Describe())
					}
				}
			}
			add = append(add, app.ResourceFreeze{Resource: res, Fields: append([]string(nil), req.Fields...), Reason: reason, By: id.String(), At: now, Until: until})
		}
		p := &plan{apps: []string{a.Metadata.Name}}
		if err := editApps(s, p, []app.App{a}, func(src []byte, a app.App) ([]byte, error) {
			// Ended freezes of the same objects go in the same commit:
			// the App would otherwise hold one field frozen twice.
			ended := false
			for _, fr := range a.Spec.Freezes {
				ended = ended || (!fr.ActiveAt(now) && slices.Contains(refs, fr.Resource))
			}
			if ended {
				var err error
				src, err = rewriteResourceFreezes(src, a.Metadata.Name, a.Spec.Freezes, func(_ int, fr app.ResourceFreeze) (app.ResourceFreeze, bool, bool) {
					keep := fr.ActiveAt(now) || !slices.Contains(refs, fr.Resource)
					return fr, keep, keep
				})
				if err != nil {
					return nil, err
				}
			}
			return appendResourceFreezes(src, a.Metadata.Name, add)
		}); err != nil {
			return nil, err
		}
		p.msg = message{Subject: subjectFor(ActionFreeze, p.apps, reason), Body: reason, Trailers: resourceTrailers(ActionFreeze, a.Metadata.Name, refs, req.Fields)}
		for _, ref := range refs {
			p.resources = append(p.resources, ref.String())
		}
		if until != nil {
			p.msg.Trailers = append(p.msg.Trailers, trailer{TrailerUntil, until.Format(time.RFC3339)})
		}
		return p, nil
	}, false)
}

// UnfreezeResource removes a resource's freezes from the app's
// spec.freezes (or only the given fields from them) in one commit.
func (r *Repo) UnfreezeResource(ctx context.Context, req ResourceUnfreezeRequest) (Result, error) {
	reason, err := cleanReason(req.Reason)
	if err != nil {
		return Result{}, err
	}
	if strings.TrimSpace(req.App) == "" {
		return Result{}, fmt.Errorf("no app named: pass the APP whose resource to unfreeze")
	}
	if req.Query != nil {
		req.Resource = app.ResourceRef{Kind: req.Query.Kind, Name: req.Query.Name}
	}
	if err := checkResource(req.Resource); err != nil {
		return Result{}, err
	}
	if err := checkFields(req.Fields); err != nil {
		return Result{}, err
	}
	return r.commitFreeze(ctx, func(s *snapshot) (*plan, error) {
		a, err := loadApp(s, req.App)
		if err != nil {
			return nil, err
		}
		req := req
		if req.Query != nil {
			ref, err := resolveUnfreeze(ctx, s, a, *req.Query)
			if err != nil {
				return nil, err
			}
			req.Resource = ref
		}
		var held []app.ResourceFreeze
		for _, fr := range a.Spec.Freezes {
			if fr.Resource == req.Resource {
				held = append(held, fr)
			}
		}
		if len(held) == 0 {
			return nil, fmt.Errorf("App %s: %s is not frozen; nothing to unfreeze", a.Metadata.Name, req.Resource)
		}
		if req.Seen != nil {
			found := false
			for _, fr := range held {
				found = found || fr.Mark().Same(req.Seen)
			}
			if !found {
				return nil, &FreezeChangedError{App: a.Metadata.Name, Seen: req.Seen, Now: held[len(held)-1].Mark()}
			}
		}
		lifted := map[string]bool{}
		p := &plan{apps: []string{a.Metadata.Name}}
		err = editApps(s, p, []app.App{a}, func(src []byte, a app.App) ([]byte, error) {
			return rewriteResourceFreezes(src, a.Metadata.Name, a.Spec.Freezes, func(_ int, fr app.ResourceFreeze) (app.ResourceFreeze, bool, bool) {
				if fr.Resource != req.Resource {
					return fr, true, true
				}
				if len(req.Fields) == 0 {
					return fr, false, false
				}
				var keep []string
				for _, f := range fr.Fields {
					if slices.Contains(req.Fields, f) {
						lifted[f] = true
					} else {
						keep = append(keep, f)
					}
				}
				if len(keep) == len(fr.Fields) {
					return fr, true, true
				}
				fr.Fields = keep
				// A field freeze left with no fields is lifted: it must
				// never turn into a whole-resource freeze.
				return fr, len(keep) > 0, false
			})
		})
		if err != nil {
			return nil, err
		}
		var missing []string
		for _, f := range req.Fields {
			if !lifted[f] {
				missing = append(missing, f)
			}
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("App %s: %s field %s is not frozen (frozen: %s); nothing was committed", a.Metadata.Name, req.Resource, strings.Join(missing, ", "), frozenList(held))
		}
		p.msg = message{Subject: subjectFor(ActionUnfreeze, p.apps, reason), Body: reason, Trailers: resourceTrailers(ActionUnfreeze, a.Metadata.Name, []app.ResourceRef{req.Resource}, req.Fields)}
		p.resources = []string{req.Resource.String()}
		return p, nil
	}, true)
}

// resolveUnfreeze resolves a typed reference against the App's freezes
// first, so that a freeze written for no object can still be lifted, and
// then against the objects it renders.
func resolveUnfreeze(ctx context.Context, s *snapshot, a app.App, q app.ResourceQuery) (app.ResourceRef, error) {
	var frozen []objectID
	seen := map[app.ResourceRef]bool{}
	for _, fr := range a.Spec.Freezes {
		if !seen[fr.Resource] {
			seen[fr.Resource] = true
			frozen = append(frozen, objectID{Group: fr.Resource.Group, Kind: fr.Resource.Kind, Namespace: fr.Resource.Namespace, Name: fr.Resource.Name})
		}
	}
	if ref, err := resolveQuery(a.Metadata.Name, a.Spec.Destination.Namespace, q, frozen, builtins(), false); err == nil {
		return ref, nil
	}
	objs, kinds, err := appObjects(ctx, s, a)
	if err != nil {
		return app.ResourceRef{}, err
	}
	return resolveQuery(a.Metadata.Name, a.Spec.Destination.Namespace, q, objs, kinds, true)
}

// frozenList says what a resource's freezes hold, for an error.
func frozenList(frs []app.ResourceFreeze) string {
	var out []string
	for _, fr := range frs {
		if fr.Whole() {
			out = append(out, "the whole resource")
		} else {
			out = append(out, fr.Fields...)
		}
	}
	return strings.Join(out, ", ")
}

// OwnedFreezeError refuses a resource or field freeze of an app another
// GitOps engine owns: its Application or Kustomization has no field that
// holds one object or one field, only the whole app's self-heal.
type OwnedFreezeError struct {
	App, Owner, Where string
}

// Error names the app, its owner and what to do instead.
func (e *OwnedFreezeError) Error() string {
	return fmt.Sprintf("App %s: %s owns it (%s) and has no freeze of one resource or field; freeze the whole app instead (kdrift freeze %s --reason ...), which stops %s's self-heal", e.App, e.Owner, e.Where, e.App, e.Owner)
}
