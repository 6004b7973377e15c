package ui

import (
	"fmt"
	"strings"
	"time"

	"kdrift.dev/kdrift/ui/backend"
)

// activityKeep is how many entries the activity log keeps.
const activityKeep = 50

// activityEntry is one line of the activity log: when, which app, what.
type activityEntry struct {
	at   time.Time
	app  string
	text string
	bad  bool
}

// activityOf is the log line of an engine event; ok is false for events
// the log leaves out (statuses, drift: the table shows those).
func activityOf(msg any) (e activityEntry, ok bool) {
	switch m := msg.(type) {
	case HealedMsg:
		ev := m.Event
		return activityEntry{ev.Time, ev.App, "healed " + ev.Ref.String() + " " + strings.Join(ev.Fields, " "), false}, true
	case PrunedMsg:
		return activityEntry{m.Event.Time, m.Event.App, "pruned " + m.Event.Ref.String(), false}, true
	case FightMsg:
		ev := m.Event
		return activityEntry{ev.Time, ev.App, fmt.Sprintf("fight: %s rewrote %s on %s %d×; healing stopped", ev.Manager, ev.Field, ev.Ref, ev.Rewrites), true}, true
	case OverrideMsg:
		ev := m.Event
		return activityEntry{ev.Time, ev.App, fmt.Sprintf("%s keeps rewriting %s on %s (%d×); healed each time", ev.Manager, ev.Field, ev.Ref, ev.Rewrites), true}, true
	case FreezeExpiringMsg:
		ev := m.Event
		what := "app freeze"
		if ev.Resource != nil {
			what = "freeze of " + ev.Resource.String()
		}
		return activityEntry{ev.Time, ev.App, fmt.Sprintf("%s ends soon; resuming changes %d fields", what, len(ev.Changes)), true}, true
	case ErrorEventMsg:
		ev := m.Event
		t := ev.Message
		if ev.Ref != nil {
			t = ev.Ref.String() + ": " + t
		}
		return activityEntry{ev.Time, ev.App, "error: " + t, true}, true
	}
	return activityEntry{}, false
}

// freezeActivity notes a freeze or unfreeze committed from this UI.
func (c *common) freezeActivity(what string, res backend.CommitResult, err error) {
	if err != nil {
		return
	}
	c.record(c.now(), "", what+" (committed "+shortHash(res.Hash)+")", false)
}

// activityLines renders the newest n entries, oldest first:
// "15:04:05 render-prod  healed Deployment/prod/render /spec/replicas".
func activityLines(c *common, n, w int) []string {
	s := c.styles
	start := max(len(c.activity)-n, 0)
	var out []string
	for _, e := range c.activity[start:] {
		l := e.at.In(c.loc).Format("15:04:05") + " "
		if e.app != "" {
			l += e.app + "  "
		}
		l = cut(l+e.text, w)
		if e.bad {
			out = append(out, s.Warn.Render(l))
		} else {
			out = append(out, s.Muted.Render(l))
		}
	}
	return out
}

// activityHeight is how many log lines the apps view gives a screen of h
// rows: none when hidden or empty, up to three when the table keeps room.
func activityHeight(c *common, h int) int {
	if c.hideActivity || len(c.activity) == 0 {
		return 0
	}
	return min(len(c.activity), 3, max(h-8, 0))
}
