package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
)

// FrozenPart is what a heal or sync left alone because a resource or field
// freeze (spec.freezes) holds it.
type FrozenPart struct {
	Ref status.ObjectRef `json:"ref"`
	// Fields are the frozen drifted fields left as they are live; empty
	// when the whole resource is frozen.
	Fields []string `json:"fields,omitempty"`
	// Whole says the whole resource is frozen: not applied, not pruned.
	Whole bool `json:"whole,omitempty"`
	// Freeze is who froze it, why, since and until when.
	Freeze *app.Freeze `json:"freeze"`
}

// String is one line for a person: the object, the fields, the freeze.
func (f FrozenPart) String() string {
	what := "whole resource"
	if !f.Whole {
		what = strings.Join(f.Fields, ", ")
	}
	return fmt.Sprintf("%s (%s): %s", f.Ref, what, f.Freeze.Describe())
}

// freezesOf are the App's resource and field freezes that hold ref now.
func (p *pass) freezesOf(ref status.ObjectRef) []app.ResourceFreeze {
	return p.app.FreezesOf(ref.Group, ref.Kind, ref.Namespace, ref.Name, p.now)
}

// markFrozen marks, on each result, the whole-resource freeze that holds
// it and the frozen fields, so that frozen drift stays visible with its
// author, reason and end. Results are copied where marked: the comparison
// cache keeps the unmarked ones.
func (p *pass) markFrozen(results []status.ResourceStatus) {
	if len(p.app.Spec.Freezes) == 0 {
		return
	}
	for i := range results {
		r := &results[i]
		fz := p.freezesOf(r.Ref)
		if len(fz) == 0 {
			continue
		}
		fields := append([]status.FieldChange(nil), r.Fields...)
		for _, f := range fz {
			if f.Whole() {
				r.Frozen = f.Mark()
				continue
			}
			for j := range fields {
				if fields[j].Frozen == nil && f.Covers(fields[j].Path) {
					fields[j].Frozen = f.Mark()
				}
			}
		}
		r.Fields = fields
	}
}

// frozenPointers are the field pointers the App's freezes hold on ref (nil
// for none, or when the whole resource is frozen: see markFrozen).
func (p *pass) frozenPointers(ref status.ObjectRef) []string {
	var out []string
	for _, f := range p.freezesOf(ref) {
		out = append(out, f.Fields...)
	}
	return out
}

// leftFrozen records what the heal left alone for a freeze: the whole
// resource, or its frozen drifted fields.
func (p *pass) leftFrozen(r status.ResourceStatus) {
	if r.Frozen != nil {
		p.result.LeftFrozen = append(p.result.LeftFrozen, FrozenPart{Ref: r.Ref, Whole: true, Freeze: r.Frozen})
		return
	}
	byFreeze := map[*app.Freeze]*FrozenPart{}
	var order []*app.Freeze
	for _, f := range r.Fields {
		if f.Frozen == nil || !f.IsDrift() {
			continue
		}
		var key *app.Freeze
		for _, k := range order {
			if k.Same(f.Frozen) {
				key = k
			}
		}
		if key == nil {
			key = f.Frozen
			order = append(order, key)
			byFreeze[key] = &FrozenPart{Ref: r.Ref, Freeze: f.Frozen}
		}
		byFreeze[key].Fields = append(byFreeze[key].Fields, f.Path)
	}
	for _, k := range order {
		p.result.LeftFrozen = append(p.result.LeftFrozen, *byFreeze[k])
	}
}

// withLocalFreezes is the upstream's resource and field freezes plus the
// active ones only a local commit not pushed yet declares: a freeze stops
// healing at once, while the rest of that commit waits for the upstream.
func withLocalFreezes(upstream, local []app.ResourceFreeze, now time.Time) []app.ResourceFreeze {
	out := upstream
	for _, l := range local {
		if !l.ActiveAt(now) {
			continue
		}
		known := false
		for _, u := range upstream {
			if u.Resource == l.Resource && u.At.Equal(l.At) && u.By == l.By {
				known = true
			}
		}
		if !known {
			out = append(append([]app.ResourceFreeze(nil), out...), l)
		}
	}
	return out
}

// announceExpiring publishes FreezeExpiring for each freeze of the app
// (the app's own, and each resource or field freeze) that ends within
// status.FreezeExpiringWithin, with what resuming will change: once, and
// again only when that changes. Passes run on changes and at least every
// Options.Resync, so the announcement comes at most that late.
func (p *pass) announceExpiring() {
	soon := func(until *time.Time) bool {
		return until != nil && p.now.Before(*until) && until.Sub(p.now) <= status.FreezeExpiringWithin
	}
	seen := map[string]bool{}
	// Announced again only when what resuming changes is new.
	announce := func(key string, ev status.FreezeExpiring) {
		key += "|" + strings.Join(ev.Changes, "\n")
		seen[key] = true
		if p.st.expiring[key] {
			return
		}
		p.e.bus.publish(ev)
	}
	base := status.Base{App: p.name, Time: p.e.opts.Now()}
	if f := p.app.Spec.Freeze; f != nil && soon(f.Until) {
		var changes []string
		for _, r := range p.results {
			if r.Frozen != nil {
				continue
			}
			for _, fc := range r.Fields {
				if fc.IsDrift() && fc.Frozen == nil {
					changes = append(changes, changeLine(r.Ref, fc))
				}
			}
		}
		announce("app|"+f.By+"|"+f.At.String()+"|"+f.Until.String(), status.FreezeExpiring{Base: base, Freeze: *f, Changes: nonNil(changes)})
	}
	for _, f := range p.app.Spec.Freezes {
		if !soon(f.Until) {
			continue
		}
		var ref *status.ObjectRef
		var changes []string
		for _, r := range p.results {
			if !f.Resource.Matches(r.Ref.Group, r.Ref.Kind, r.Ref.Namespace, r.Ref.Name, p.app.Spec.Destination.Namespace) {
				continue
			}
			rr := r.Ref
			ref = &rr
			for _, fc := range r.Fields {
				if fc.IsDrift() && f.Covers(fc.Path) {
					changes = append(changes, changeLine(r.Ref, fc))
				}
			}
		}
		if ref == nil {
			ref = &status.ObjectRef{Group: f.Resource.Group, Kind: f.Resource.Kind, Namespace: f.Resource.Namespace, Name: f.Resource.Name}
		}
		key := "res|" + f.Resource.String() + "|" + strings.Join(f.Fields, ",") + "|" + f.At.String() + "|" + f.Until.String()
		announce(key, status.FreezeExpiring{Base: base, Resource: ref, Fields: f.Fields, Freeze: *f.Mark(), Changes: nonNil(changes)})
	}
	p.st.expiring = seen
}

// changeLine is one field resuming will put back: "REF PATH: live → Git".
func changeLine(ref status.ObjectRef, f status.FieldChange) string {
	if f.Masked {
		return fmt.Sprintf("%s %s: (Secret value) → Git's", ref, f.Path)
	}
	return fmt.Sprintf("%s %s: %s → %s", ref, f.Path, jsonText(f.Live), jsonText(f.Desired))
}

// jsonText is a value as compact JSON; "(absent)" for none.
func jsonText(v any) string {
	if v == nil {
		return "(absent)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
