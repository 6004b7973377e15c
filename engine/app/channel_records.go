package app

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// ChannelRecords is what the valid freeze records of an incident channel
// set, each judged by its own diff: a record counts for the freezes it
// changed, whatever a refused commit before it changed in the same files.
// The zero value holds no record.
type ChannelRecords struct {
	apps  map[string]*recordedApp
	owned []recordedOwned
}

// recordedApp is what the records did to one App's freezes: the app
// freeze the newest record that changed it left (set says one did), and
// the resource freezes each record removed and added, oldest first.
type recordedApp struct {
	freeze *Freeze
	set    bool
	ops    []freezesOp
}

// freezesOp is one record's change to an App's resource freezes.
type freezesOp struct {
	removed, added []ResourceFreeze
}

// recordedOwned is the freeze the newest record that changed it wrote
// into one declaration of an app another GitOps tool owns.
type recordedOwned struct {
	file, kind, namespace, name string
	freeze                      *Freeze
}

// Record adds a freeze record's change of file, from before to after,
// which FreezeOnlyChange (App files) or OwnedFreezeOnlyChange (any other
// file) accepted. An error says the record's freezes cannot be read:
// the record is then not one.
func (c *ChannelRecords) Record(file string, appFile bool, before, after []byte) error {
	if appFile {
		return c.recordApps(file, before, after)
	}
	return c.recordOwned(file, before, after)
}

func (c *ChannelRecords) recordApps(file string, before, after []byte) error {
	ba, berrs := Parse(file, before)
	aa, aerrs := Parse(file, after)
	if len(berrs) > 0 || len(aerrs) > 0 || len(ba) != len(aa) {
		return fmt.Errorf("the freezes in %s cannot be read", file)
	}
	for i := range aa {
		b, a := ba[i].Spec, aa[i].Spec
		if c.apps == nil {
			c.apps = map[string]*recordedApp{}
		}
		rec := c.apps[aa[i].Metadata.Name]
		if rec == nil {
			rec = &recordedApp{}
		}
		if !sameFreezeAndEnd(b.Freeze, a.Freeze) {
			rec.freeze, rec.set = a.Freeze, true
		}
		op := freezesOp{removed: missingFrom(b.Freezes, a.Freezes), added: missingFrom(a.Freezes, b.Freezes)}
		if len(op.removed) > 0 || len(op.added) > 0 {
			rec.ops = append(rec.ops, op)
		}
		if rec.set || len(rec.ops) > 0 {
			c.apps[aa[i].Metadata.Name] = rec
		}
	}
	return nil
}

func (c *ChannelRecords) recordOwned(file string, before, after []byte) error {
	bd, err := ownedDocs(file, before)
	if err != nil {
		return err
	}
	ad, err := ownedDocs(file, after)
	if err != nil || len(ad) != len(bd) {
		return fmt.Errorf("the declarations in %s cannot be read", file)
	}
	for i := range ad {
		if ad[i].heal == nil || reflect.DeepEqual(bd[i].body, ad[i].body) {
			continue
		}
		was, werr := freezeOf(annotationsOf(bd[i].body))
		fr, err := freezeOf(annotationsOf(ad[i].body))
		if err != nil {
			return fmt.Errorf("%s %s in %s: %w", ad[i].kind, ad[i].name, file, err)
		}
		if werr == nil && sameFreezeAndEnd(was, fr) {
			continue
		}
		md, _ := ad[i].body["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		ns, _ := md["namespace"].(string)
		c.owned = slices.DeleteFunc(c.owned, func(o recordedOwned) bool {
			return o.file == file && o.kind == ad[i].kind && o.namespace == ns && o.name == name
		})
		c.owned = append(c.owned, recordedOwned{file: file, kind: ad[i].kind, namespace: ns, name: name, freeze: fr})
	}
	return nil
}

// Apply is base, an App as the desired branch's commit the channel starts
// from declares it, with the freezes the records set; touched says a
// record changed any of them.
func (c ChannelRecords) Apply(base App) (App, bool) {
	rec := c.apps[base.Metadata.Name]
	if rec == nil {
		return base, false
	}
	if rec.set {
		base.Spec.Freeze = rec.freeze
	}
	list := slices.Clone(base.Spec.Freezes)
	for _, op := range rec.ops {
		list = slices.DeleteFunc(list, func(f ResourceFreeze) bool { return containsFreeze(op.removed, f) })
		for _, f := range op.added {
			if !containsFreeze(list, f) {
				list = append(list, f)
			}
		}
	}
	base.Spec.Freezes = list
	return base, true
}

// Owned is the freeze the newest record that changed it wrote into o's
// declaration (nil when it lifted it); touched says a record did.
func (c ChannelRecords) Owned(o *Origin) (*Freeze, bool) {
	for i := len(c.owned) - 1; i >= 0; i-- {
		r := c.owned[i]
		if r.file == o.File && r.kind == o.Kind && r.name == o.Name && (r.namespace == "" || r.namespace == o.Namespace) {
			return r.freeze, true
		}
	}
	return nil, false
}

// Clone is a copy of c that Record can change without changing c.
func (c ChannelRecords) Clone() ChannelRecords {
	out := ChannelRecords{owned: slices.Clip(slices.Clone(c.owned))}
	if c.apps != nil {
		out.apps = make(map[string]*recordedApp, len(c.apps))
		for k, v := range c.apps {
			r := *v
			r.ops = slices.Clip(r.ops)
			out.apps[k] = &r
		}
	}
	return out
}

// Empty says no record changed any freeze.
func (c ChannelRecords) Empty() bool {
	return len(c.apps) == 0 && len(c.owned) == 0
}

// annotationsOf is the string annotations of a decoded document.
func annotationsOf(body map[string]any) map[string]string {
	md, _ := body["metadata"].(map[string]any)
	raw, _ := md["annotations"].(map[string]any)
	out := map[string]string{}
	for k, v := range raw {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// sameFreezeAndEnd says two app freezes are equal: both nil, or the same
// freeze with the same end.
func sameFreezeAndEnd(a, b *Freeze) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return sameEnd(a, b)
}

// missingFrom is the resource freezes of a that b lacks.
func missingFrom(a, b []ResourceFreeze) []ResourceFreeze {
	var out []ResourceFreeze
	for _, f := range a {
		if !containsFreeze(b, f) {
			out = append(out, f)
		}
	}
	return out
}

// containsFreeze says list holds a resource freeze equal to f.
func containsFreeze(list []ResourceFreeze, f ResourceFreeze) bool {
	return slices.ContainsFunc(list, func(o ResourceFreeze) bool {
		return o.Resource == f.Resource && o.At.Equal(f.At) && o.By == f.By && o.Reason == f.Reason &&
			strings.Join(o.Fields, ",") == strings.Join(f.Fields, ",") && sameUntil(o.Until, f.Until)
	})
}
