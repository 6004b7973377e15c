package actions

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"kdrift.dev/kdrift/engine/app"
)

// Trailer values of Kdrift-Action.
const (
	ActionFreeze   = "freeze"
	ActionUnfreeze = "unfreeze"
	ActionExtend   = "extend"
	ActionIgnore   = "ignore"
	ActionRevert   = "revert"
)

// Selection names apps: by name, or All of them whose metadata.labels match
// Selector ("k=v,k2=v2"; empty matches every app).
type Selection struct {
	Apps     []string
	All      bool
	Selector string
}

// FreezeRequest asks to stop self-heal and prune of apps, with a reason.
type FreezeRequest struct {
	Selection
	Reason string
	// For ends the freeze after this long; Until ends it at a time; with
	// neither the freeze holds until unfrozen.
	For   time.Duration
	Until *time.Time
}

// UnfreezeRequest asks to lift the freeze of apps.
type UnfreezeRequest struct {
	Selection
	Reason string
	// Seen is, by app name, the freeze the person saw when deciding (the
	// UI passes what it displayed). An app whose freeze at the head is
	// another one is refused with a *FreezeChangedError. An app not in
	// Seen is unfrozen whatever its freeze (the CLI: the person typed the
	// command after reading the status).
	Seen map[string]*app.Freeze
}

// FreezeChangedError is app.FreezeChangedError: the freeze at the head
// is not the one the person saw; nothing was committed.
type FreezeChangedError = app.FreezeChangedError

// checkSeen refuses when an app's freeze at the head is not the one seen.
func checkSeen(seen map[string]*app.Freeze, apps []app.App) error {
	for _, a := range apps {
		if f, ok := seen[a.Metadata.Name]; ok && !f.Same(a.Spec.Freeze) {
			return &FreezeChangedError{App: a.Metadata.Name, Seen: f, Now: a.Spec.Freeze}
		}
	}
	return nil
}

// ExtendRequest asks to move the end of apps' freezes by By, counted from
// the current end (or from now when it already passed).
type ExtendRequest struct {
	Apps   []string
	By     time.Duration
	Reason string
	// Seen is, by app name, the freeze the person saw (see
	// UnfreezeRequest.Seen).
	Seen map[string]*app.Freeze
}

// parseSelector reads "k=v,k2=v2".
func parseSelector(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok || strings.TrimSpace(k) == "" || strings.HasSuffix(k, "!") {
			return nil, fmt.Errorf("selector %q: want key=value[,key=value]", s)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}

func (sel Selection) validate() error {
	switch {
	case sel.All && len(sel.Apps) > 0:
		return fmt.Errorf("name apps or pass --all (with --selector), not both")
	case !sel.All && len(sel.Apps) == 0:
		return fmt.Errorf("no app named: pass one or more APP names, or --all --selector key=value")
	case !sel.All && sel.Selector != "":
		return fmt.Errorf("--selector needs --all")
	}
	_, err := parseSelector(sel.Selector)
	return err
}

// pick resolves the selection against the apps of a snapshot.
func (sel Selection) pick(set appSet) ([]app.App, error) {
	if !sel.All {
		return findApps(set, sel.Apps)
	}
	want, err := parseSelector(sel.Selector)
	if err != nil {
		return nil, err
	}
	var out []app.App
	for _, a := range set.apps {
		ok := true
		for k, v := range want {
			if a.Metadata.Labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no App matches selector %q", sel.Selector)
	}
	return out, nil
}

func names(apps []app.App) []string {
	out := make([]string, len(apps))
	for i, a := range apps {
		out[i] = a.Metadata.Name
	}
	return out
}

// editApps applies edit to each app's file in turn and stages the results.
func editApps(s *snapshot, p *plan, apps []app.App, edit func(src []byte, a app.App) ([]byte, error)) error {
	texts := map[string][]byte{}
	for _, a := range apps {
		if err := checkEditable(a); err != nil {
			return err
		}
	}
	for _, a := range apps {
		src, ok := texts[a.File]
		if !ok {
			data, _, err := s.read(a.File)
			if err != nil {
				return err
			}
			src = data
		}
		out, err := edit(src, a)
		if err != nil {
			return fmt.Errorf("App %s (%s): %w", a.Metadata.Name, a.File, err)
		}
		texts[a.File] = out
	}
	files := make([]string, 0, len(texts))
	for f := range texts {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		if err := stillParses(f, texts[f], apps); err != nil {
			return err
		}
		if err := ownedStillReads(f, texts[f], apps); err != nil {
			return err
		}
		if err := p.setText(s, f, texts[f]); err != nil {
			return err
		}
	}
	return nil
}

// stillParses checks that every edited App of file still parses with
// app.Parse after the edit; documents that were broken before are not the
// edit's fault.
func stillParses(file string, text []byte, edited []app.App) error {
	got, errs := app.Parse(file, text)
	ok := map[string]bool{}
	for _, a := range got {
		ok[a.Metadata.Name] = true
	}
	for _, a := range edited {
		if a.File == file && a.Origin == nil && !ok[a.Metadata.Name] {
			return fmt.Errorf("%s: the edit would break the file (%v); nothing was committed", file, errors.Join(errs...))
		}
	}
	return nil
}

// channelCannotLift refuses an unfreeze on the incident channel (s is the
// channel's snapshot) of a freeze the desired branch itself holds: every
// reader keeps the desired branch's freeze whatever the channel says, so
// the record would be in force nowhere.
func channelCannotLift(s *snapshot, frozen []app.App) error {
	if s.desired == nil {
		return nil
	}
	desired, err := s.desired()
	if err != nil {
		return err
	}
	main, err := loadApps(desired)
	if err != nil {
		return err
	}
	var held []string
	for _, a := range frozen {
		for _, m := range main.apps {
			if m.Metadata.Name == a.Metadata.Name && a.Spec.Freeze.Same(m.Spec.Freeze) {
				held = append(held, a.Metadata.Name)
			}
		}
	}
	if len(held) > 0 {
		return fmt.Errorf("the freeze of %s is committed on %s, which refuses direct pushes; a record on the incident channel lifts only the channel's own freezes, so this unfreeze would be in force nowhere: unfreeze through a pull request to %s", strings.Join(held, ", "), s.repo.branch, s.repo.branch)
	}
	return nil
}

func describeFreeze(name string, f *app.Freeze) string {
	return fmt.Sprintf("App %s is already %s", name, f.Describe())
}

// Freeze sets spec.freeze on the selected apps in one commit.
func (r *Repo) Freeze(ctx context.Context, req FreezeRequest) (Result, error) {
	reason, err := cleanReason(req.Reason)
	if err != nil {
		return Result{}, err
	}
	if err := req.validate(); err != nil {
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
	fr := app.Freeze{Reason: reason, By: id.String(), At: now, Until: until}
	return r.commitFreeze(ctx, func(s *snapshot) (*plan, error) {
		all, err := loadApps(s)
		if err != nil {
			return nil, err
		}
		apps, err := req.pick(all)
		if err != nil {
			return nil, err
		}
		var held []string
		for _, a := range apps {
			if a.Spec.Freeze.ActiveAt(now) {
				held = append(held, describeFreeze(a.Metadata.Name, a.Spec.Freeze))
			}
		}
		if len(held) > 0 {
			return nil, fmt.Errorf("%s; use --extend DURATION to move its end, or unfreeze it first", strings.Join(held, "; "))
		}
		p := &plan{apps: names(apps)}
		if err := editApps(s, p, apps, func(src []byte, a app.App) ([]byte, error) {
			if ownedFreeze(a) {
				p.owned = append(p.owned, app.OwnedFreeze{App: a.Metadata.Name, Origin: *a.Origin, Freeze: &fr})
				return setOwnedFreeze(src, a, fr)
			}
			return setFreeze(src, a.Metadata.Name, fr)
		}); err != nil {
			return nil, err
		}
		p.msg = message{Subject: subjectFor(ActionFreeze, p.apps, reason), Body: reason, Trailers: actionTrailers(ActionFreeze, p.apps)}
		if until != nil {
			p.msg.Trailers = append(p.msg.Trailers, trailer{TrailerUntil, until.Format(time.RFC3339)})
		}
		return p, nil
	}, false)
}

// Unfreeze removes spec.freeze from the selected apps in one commit.
func (r *Repo) Unfreeze(ctx context.Context, req UnfreezeRequest) (Result, error) {
	reason, err := cleanReason(req.Reason)
	if err != nil {
		return Result{}, err
	}
	if err := req.validate(); err != nil {
		return Result{}, err
	}
	return r.commitFreeze(ctx, func(s *snapshot) (*plan, error) {
		all, err := loadApps(s)
		if err != nil {
			return nil, err
		}
		apps, err := req.pick(all)
		if err != nil {
			return nil, err
		}
		if err := checkSeen(req.Seen, apps); err != nil {
			return nil, err
		}
		var frozen []app.App
		var notFrozen []string
		for _, a := range apps {
			if a.Spec.Freeze == nil {
				notFrozen = append(notFrozen, a.Metadata.Name)
			} else {
				frozen = append(frozen, a)
			}
		}
		if !req.All && len(notFrozen) > 0 {
			return nil, fmt.Errorf("App %s is not frozen; nothing to unfreeze", strings.Join(notFrozen, ", "))
		}
		if len(frozen) == 0 {
			return nil, fmt.Errorf("no selected App is frozen; nothing to unfreeze")
		}
		if err := channelCannotLift(s, frozen); err != nil {
			return nil, err
		}
		p := &plan{apps: names(frozen)}
		if err := editApps(s, p, frozen, func(src []byte, a app.App) ([]byte, error) {
			if ownedFreeze(a) {
				p.owned = append(p.owned, app.OwnedFreeze{App: a.Metadata.Name, Origin: *a.Origin})
				return removeOwnedFreeze(src, a)
			}
			return removeFreeze(src, a.Metadata.Name)
		}); err != nil {
			return nil, err
		}
		p.msg = message{Subject: subjectFor(ActionUnfreeze, p.apps, reason), Body: reason, Trailers: actionTrailers(ActionUnfreeze, p.apps)}
		return p, nil
	}, true)
}

// Extend moves the end of the apps' freezes in one commit; reason, author
// and start of each freeze stay as they were.
func (r *Repo) Extend(ctx context.Context, req ExtendRequest) (Result, error) {
	reason, err := cleanReason(req.Reason)
	if err != nil {
		return Result{}, err
	}
	if req.By <= 0 {
		return Result{}, fmt.Errorf("--extend %s: the duration must be positive", req.By)
	}
	if len(req.Apps) == 0 {
		return Result{}, fmt.Errorf("no app named: pass the APP whose freeze to extend")
	}
	now := r.opts.Now().UTC().Truncate(time.Second)
	return r.commitFreeze(ctx, func(s *snapshot) (*plan, error) {
		all, err := loadApps(s)
		if err != nil {
			return nil, err
		}
		apps, err := findApps(all, req.Apps)
		if err != nil {
			return nil, err
		}
		if err := checkSeen(req.Seen, apps); err != nil {
			return nil, err
		}
		untils := map[string]time.Time{}
		for _, a := range apps {
			f := a.Spec.Freeze
			switch {
			case f == nil:
				return nil, fmt.Errorf("App %s is not frozen; freeze it instead", a.Metadata.Name)
			case f.Until == nil:
				return nil, fmt.Errorf("App %s is frozen with no end time (by %s: %q); there is nothing to extend", a.Metadata.Name, f.By, f.Reason)
			}
			from := f.Until.UTC()
			if from.Before(now) {
				from = now
			}
			untils[a.Metadata.Name] = from.Add(req.By)
		}
		p := &plan{apps: names(apps)}
		if err := editApps(s, p, apps, func(src []byte, a app.App) ([]byte, error) {
			if ownedFreeze(a) {
				moved := *a.Spec.Freeze
				until := untils[a.Metadata.Name]
				moved.Until = &until
				p.owned = append(p.owned, app.OwnedFreeze{App: a.Metadata.Name, Origin: *a.Origin, Freeze: &moved})
				return setOwnedFreezeUntil(src, a, yamlTime(until))
			}
			return setFreezeUntil(src, a.Metadata.Name, untils[a.Metadata.Name])
		}); err != nil {
			return nil, err
		}
		p.msg = message{Subject: subjectFor(ActionExtend, p.apps, reason), Body: reason, Trailers: actionTrailers(ActionExtend, p.apps)}
		// One Until trailer when every app ends at the same time.
		var last time.Time
		same := true
		for i, n := range p.apps {
			if i > 0 && !untils[n].Equal(last) {
				same = false
			}
			last = untils[n]
		}
		if same {
			p.msg.Trailers = append(p.msg.Trailers, trailer{TrailerUntil, last.Format(time.RFC3339)})
		}
		return p, nil
	}, true)
}
