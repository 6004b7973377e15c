package app

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// FreezeOnlyChange checks that a change of App file file, from before to
// after (nil for a file that is absent), touches nothing but freezes:
// spec.freeze and spec.freezes of Apps present on both sides. It is what
// an incident channel commit may do; anything else is returned as an
// error naming the App and what changed.
func FreezeOnlyChange(file string, before, after []byte) error {
	if err := addsOrDeletes(file, before, after); err != nil {
		return err
	}
	ba, berrs := Parse(file, before)
	aa, aerrs := Parse(file, after)
	if len(aerrs) > 0 && len(berrs) == 0 {
		return fmt.Errorf("makes %s invalid: %v", file, aerrs[0])
	}
	if len(ba) != len(aa) {
		return fmt.Errorf("changes which Apps %s declares", file)
	}
	for i := range ba {
		b, a := withoutFreezes(ba[i]), withoutFreezes(aa[i])
		if !reflect.DeepEqual(b, a) {
			return fmt.Errorf("changes App %s in %s beyond its freezes", aa[i].Metadata.Name, file)
		}
	}
	return nil
}

// addsOrDeletes says a change adds or deletes file (nil for the side where
// it is absent), which no freeze record does.
func addsOrDeletes(file string, before, after []byte) error {
	switch {
	case before == nil:
		return fmt.Errorf("adds %s", file)
	case after == nil:
		return fmt.Errorf("deletes %s", file)
	}
	return nil
}

// withoutFreezes is a with its freezes cleared.
func withoutFreezes(a App) App {
	a.Spec.Freeze, a.Spec.Freezes = nil, nil
	return a
}

// ChannelFreezes merges the freezes an incident channel declares for an
// App into the App as the desired branch declares it: the desired
// branch's own freeze wins while it holds; otherwise the channel's app
// freeze (when active at now) holds. Resource and field freezes are the
// union. A channel therefore only ever adds a stop: lifting a freeze on
// the channel lifts only what the channel set.
func ChannelFreezes(a App, channel App, now time.Time) (App, bool) {
	fromChannel := false
	if !a.Spec.Freeze.ActiveAt(now) && channel.Spec.Freeze.ActiveAt(now) {
		f := *channel.Spec.Freeze
		a.Spec.Freeze, fromChannel = &f, true
	}
	for _, c := range channel.Spec.Freezes {
		if !c.ActiveAt(now) {
			continue
		}
		known := false
		for _, m := range a.Spec.Freezes {
			if m.Resource == c.Resource && m.At.Equal(c.At) && m.By == c.By && strings.Join(m.Fields, ",") == strings.Join(c.Fields, ",") {
				known = true
			}
		}
		if !known {
			a.Spec.Freezes = append(append([]ResourceFreeze(nil), a.Spec.Freezes...), c)
			fromChannel = true
		}
	}
	return a, fromChannel
}

// ChannelOnly is channel, an App as an incident channel declares it, with
// only the freezes the channel added to base, the same App at the desired
// branch's commit the channel starts from: an app freeze base already
// declared (same author, start, reason and end) and resource freezes base
// already declared are dropped, so that a freeze the desired branch has
// since lifted is not brought back by the channel.
func ChannelOnly(channel, base App) App {
	channel.Spec.Freeze = ChannelAdded(channel.Spec.Freeze, base.Spec.Freeze)
	var kept []ResourceFreeze
	for _, c := range channel.Spec.Freezes {
		inBase := false
		for _, b := range base.Spec.Freezes {
			if c.Resource == b.Resource && c.At.Equal(b.At) && c.By == b.By && c.Reason == b.Reason &&
				strings.Join(c.Fields, ",") == strings.Join(b.Fields, ",") && sameUntil(c.Until, b.Until) {
				inBase = true
			}
		}
		if !inBase {
			kept = append(kept, c)
		}
	}
	channel.Spec.Freezes = kept
	return channel
}

// ChannelAdded is channel, a freeze an incident channel's record declares,
// when base, the freeze at the desired branch's commit the channel starts
// from, is not the same freeze with the same end; nil otherwise (as
// ChannelOnly keeps an App's freeze).
func ChannelAdded(channel, base *Freeze) *Freeze {
	if sameEnd(channel, base) {
		return nil
	}
	return channel
}

// sameEnd says f and o are the same freeze with the same end.
func sameEnd(f, o *Freeze) bool {
	return f != nil && f.Same(o) && sameUntil(f.Until, o.Until)
}

// sameUntil says two ends are equal (nil only equals nil).
func sameUntil(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}
