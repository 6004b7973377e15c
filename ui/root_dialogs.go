package ui

// The dialogs of the actions that change Git or the cluster: sync,
// freeze, unfreeze, ignore and revert. Each asks before it acts and hands
// the work to the Backend; key routing stays in root_keys.go.

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/ui/backend"
)

// startSync plans a sync of the selected app; the plan comes back as
// SyncPlannedMsg and is shown before anything is applied.
func (m *Model) startSync() tea.Cmd {
	apps := m.top().selectedApps()
	if len(apps) != 1 {
		if len(apps) == 0 {
			m.setStatus("sync: no app selected", true)
		} else {
			m.setStatus("sync works on one app at a time: esc clears the marks", true)
		}
		return nil
	}
	name := apps[0]
	be, ctx := m.c.be, m.c.ctx
	m.setStatus("planning sync of "+name+"…", false)
	return m.run(func() tea.Msg {
		p, err := be.PlanSync(ctx, name)
		if p.App == "" {
			p.App = name
		}
		return SyncPlannedMsg{App: name, Plan: p, Err: err}
	})
}

// syncDialog shows the plan and asks; a prune of a large share of the app
// and a frozen app are each asked about once more.
func (m *Model) syncDialog(p backend.SyncPlan) *dialog {
	body := []string{}
	for _, st := range p.Steps {
		l := fmt.Sprintf("%-8s %s", st.Action, st.Ref)
		if len(st.Fields) > 0 {
			l += "  " + strings.Join(st.Fields, ", ")
		}
		body = append(body, l)
	}
	for _, f := range p.LeftFrozen {
		what := "whole resource"
		if !f.Whole {
			what = strings.Join(f.Fields, ", ")
		}
		body = append(body, fmt.Sprintf("❄ left  %s  %s (frozen %s)", f.Ref, what, freezeLine(f.Freeze, m.c.now(), m.c.loc)))
	}
	if len(body) == 0 {
		body = []string{"nothing to change: Git and the cluster agree"}
	}
	name := p.App
	return newDialog("Sync "+name+"? ("+fmt.Sprint(len(p.Steps))+" objects)", body, "enter/y: sync · esc/n: cancel", func([]string) (outcome, string) {
		if p.PruneRefused != nil {
			warn := []string{p.PruneRefused.Error(), "Delete them all the same? Answer yes only if Git really dropped them."}
			d := newDialog("Prune most of "+name+"?", warn, "enter/y: delete them · esc/n: cancel", func([]string) (outcome, string) {
				return m.syncOwnedCheck(name, p, backend.SyncRequest{ConfirmPrune: true}), ""
			})
			return outcome{dialog: d}, ""
		}
		return m.syncOwnedCheck(name, p, backend.SyncRequest{}), ""
	})
}

// syncOwnedCheck asks once more, naming the owner, when another GitOps
// engine owns the app, then goes on to the partial-freeze check.
func (m *Model) syncOwnedCheck(name string, p backend.SyncPlan, req backend.SyncRequest) outcome {
	if a, ok := m.c.app(name); ok && a.Owner != "" {
		warn := []string{
			name + " is owned by " + a.Owner + " (" + a.OwnerFile + "), which heals it.",
			"kdrift never applies it on its own; syncing now applies Git over the cluster,",
			"and the owner may put back its own revision at its next sync.",
		}
		d := newDialog("Sync "+name+", owned by "+a.Owner+"?", warn, "enter/y: sync anyway · esc/n: cancel", func([]string) (outcome, string) {
			req.Owned = true
			return m.syncPartialCheck(name, p, req), ""
		})
		return outcome{dialog: d}
	}
	return m.syncPartialCheck(name, p, req)
}

// syncPartialCheck asks, when a resource or field freeze holds parts of
// the app, whether to overwrite them too: "o" puts Git back over them
// (the CLI's --force), enter syncs the rest and leaves them as they are.
func (m *Model) syncPartialCheck(name string, p backend.SyncPlan, req backend.SyncRequest) outcome {
	if len(p.LeftFrozen) == 0 {
		return m.syncFrozenCheck(name, req)
	}
	body := []string{"These stay as they are live unless you overwrite them:"}
	for _, f := range p.LeftFrozen {
		what := "whole resource"
		if !f.Whole {
			what = strings.Join(f.Fields, ", ")
		}
		body = append(body, fmt.Sprintf("  ❄ %s  %s: %s", f.Ref, what, freezeLine(f.Freeze, m.c.now(), m.c.loc)))
	}
	body = append(body, "Type \"overwrite\" to put Git back over them too; leave it empty to sync the rest only.")
	d := newDialog("Sync "+name+": leave the frozen parts?", body, "enter: sync · esc: cancel", func(vals []string) (outcome, string) {
		switch vals[0] {
		case "":
		case "overwrite":
			req.OverwriteFrozen = true
		default:
			return outcome{}, fmt.Sprintf("%q: type overwrite, or leave it empty", vals[0])
		}
		return m.syncFrozenCheck(name, req), ""
	}).withField("overwrite", "empty: leave them frozen", false)
	return outcome{dialog: d}
}

// syncFrozenCheck asks once more when the app is frozen, and syncs; the
// sync carries the freeze the person was shown.
func (m *Model) syncFrozenCheck(name string, req backend.SyncRequest) outcome {
	if a, ok := m.c.app(name); ok && a.Freeze.ActiveAt(m.c.now()) {
		f := a.Freeze
		until := "no end time"
		if f.Until != nil {
			until = "until " + f.Until.In(m.c.loc).Format("2006-01-02 15:04")
		}
		warn := []string{
			name + " is FROZEN by " + f.By + " (" + until + "):",
			"  " + f.Reason,
			"Syncing puts Git's values back now, over the fixes the freeze protects.",
		}
		seen := *f
		d := newDialog("Sync FROZEN app "+name+" anyway?", warn, "enter/y: sync anyway · esc/n: cancel", func([]string) (outcome, string) {
			req.Freeze = &seen
			return m.syncNow(name, req), ""
		})
		return outcome{dialog: d}
	}
	return m.syncNow(name, req)
}

func (m *Model) syncNow(name string, req backend.SyncRequest) outcome {
	be, ctx := m.c.be, m.c.ctx
	return outcome{status: "syncing " + name + "…", work: func() tea.Msg {
		return SyncFinishedMsg{App: name, Err: be.Sync(ctx, name, req)}
	}}
}

// startFreeze asks a reason (required) and a duration (optional) for the
// selected or marked apps.
func (m *Model) startFreeze() tea.Cmd {
	apps := m.top().selectedApps()
	if len(apps) == 0 {
		m.setStatus("freeze: no app selected", true)
		return nil
	}
	if why := notEditable(m.c, "freeze", apps); why != "" {
		m.setStatus(why, true)
		return nil
	}
	be, ctx := m.c.be, m.c.ctx
	body := []string{
		"Apps: " + strings.Join(apps, ", "),
		"Self-heal and prune stop; drift stays visible. The freeze is a Git commit.",
	}
	for _, name := range apps {
		if a, ok := m.c.app(name); ok {
			for _, c := range a.Canaries {
				body = append(body, canaryFreezeNote(c))
			}
		}
	}
	m.dialog = newDialog("Freeze "+plural(len(apps), "app")+"?", body, "tab: next field · enter: commit the freeze · esc: cancel", func(vals []string) (outcome, string) {
		reason := vals[0]
		var d time.Duration
		if vals[1] != "" {
			var err error
			d, err = time.ParseDuration(vals[1])
			if err != nil || d <= 0 {
				return outcome{}, fmt.Sprintf("duration %q: use a Go duration such as 30m, 4h or 1h30m, or leave it empty", vals[1])
			}
		}
		return outcome{status: "freezing " + strings.Join(apps, ", ") + "…", work: func() tea.Msg {
			res, err := be.Freeze(ctx, apps, reason, d)
			return FreezeCommittedMsg{Apps: apps, Result: res, Err: err}
		}}, ""
	}).withField("reason", "e.g. INC-1234 render workers 6->12", true).withField("for", "optional: 4h, 30m (empty: until unfrozen)", false)
	return nil
}

// startUnfreeze asks a reason and removes the freeze of the selected or
// marked apps that are frozen.
func (m *Model) startUnfreeze() tea.Cmd {
	var frozen []string
	for _, n := range m.top().selectedApps() {
		if a, ok := m.c.app(n); ok && a.Freeze != nil {
			frozen = append(frozen, n)
		}
	}
	if len(frozen) == 0 {
		m.setStatus("unfreeze: the selected app is not frozen", true)
		return nil
	}
	if why := notEditable(m.c, "unfreeze", frozen); why != "" {
		m.setStatus(why, true)
		return nil
	}
	be, ctx := m.c.be, m.c.ctx
	body := []string{"Apps: " + strings.Join(frozen, ", ")}
	seen := map[string]*app.Freeze{}
	for _, n := range frozen {
		a, _ := m.c.app(n)
		f := *a.Freeze
		seen[n] = &f
		body = append(body, "  "+n+": frozen by "+a.Freeze.By+": "+a.Freeze.Reason)
	}
	body = append(body, "Self-heal resumes as each app's syncPolicy says.")
	body = append(body, unfreezePutBack(m.c, frozen)...)
	m.dialog = newDialog("Unfreeze "+plural(len(frozen), "app")+"?", body, "enter: commit the unfreeze · esc: cancel", func(vals []string) (outcome, string) {
		reason := vals[0]
		return outcome{status: "unfreezing " + strings.Join(frozen, ", ") + "…", work: func() tea.Msg {
			res, err := be.Unfreeze(ctx, frozen, reason, seen)
			return UnfreezeCommittedMsg{Apps: frozen, Result: res, Err: err}
		}}, ""
	}).withField("reason", "why self-heal may resume", true)
	return nil
}

// notEditable says why action cannot apply to one of apps, before any
// reason is asked: an app whose declaration is generated by another
// render or lives only in the cluster has no file to commit to. "" when
// every app can take it.
func notEditable(c *common, action string, apps []string) string {
	for _, n := range apps {
		if a, ok := c.app(n); ok && app.NotAFile(a.OwnerFile) {
			return fmt.Sprintf("%s: %s cannot take it from here: its declaration is %s, so there is no file in this repository to commit the %s to; commit the declaration to the repository (or change it where it is generated), or use %s's own command", action, n, a.OwnerFile, action, a.Owner)
		}
	}
	return ""
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// ignoreDialog asks for the reason of a new ignore rule on one field.
func ignoreDialog(c *common, appName string, ref status.ObjectRef, path string) outcome {
	if why := notEditable(c, "ignore rule", []string{appName}); why != "" {
		return outcome{status: why, err: true}
	}
	rule := app.IgnoreRule{Group: ref.Group, Kind: ref.Kind, Name: ref.Name, Namespace: ref.Namespace, JSONPointers: []string{path}}
	body := []string{
		fmt.Sprintf("App %s will stop applying %s on %s.", appName, path, ref),
		"kdrift hands the field over to its live owner; the rule is a Git commit.",
	}
	d := newDialog("Ignore "+path+"?", body, "enter: commit the ignore rule · esc: cancel", func(vals []string) (outcome, string) {
		return outcome{work: doIgnore(c, appName, rule, vals[0]), status: "committing ignore rule for " + path + "…"}, ""
	}).withField("reason", "why Git should not own this field", true)
	return outcome{handled: true, dialog: d}
}

func doIgnore(c *common, appName string, rule app.IgnoreRule, reason string) tea.Cmd {
	be, ctx := c.be, c.ctx
	path := rule.JSONPointers[0]
	return func() tea.Msg {
		res, err := be.Ignore(ctx, appName, rule, reason)
		return IgnoreCommittedMsg{App: appName, Path: path, Result: res, Err: err}
	}
}

// revertDialog shows what reverting the commit changes and asks a reason.
func revertDialog(c *common, m RevertPreviewMsg) *dialog {
	body := strings.Split(strings.TrimRight(m.Preview, "\n"), "\n")
	be, ctx, hash := c.be, c.ctx, m.Hash
	return newDialog("Revert "+shortHash(hash)+" "+m.Subject+"?", body, "enter: commit the revert · ↑/↓ scroll · esc: cancel", func(vals []string) (outcome, string) {
		reason := vals[0]
		return outcome{status: "committing revert of " + shortHash(hash) + "…", work: func() tea.Msg {
			res, err := be.Revert(ctx, hash, reason)
			return RevertCommittedMsg{Hash: hash, Result: res, Err: err}
		}}, ""
	}).withField("reason", "why this commit is undone", true)
}

// unfreezePutBack lists what self-heal will put back once the apps are
// unfrozen: each drifted field, live value → Git's, except what a
// resource or field freeze still holds.
func unfreezePutBack(c *common, apps []string) []string {
	const most = 12
	var lines []string
	for _, n := range apps {
		a, _ := c.app(n)
		if a.SelfHeal == status.SelfHealOff {
			continue
		}
		for _, r := range a.Resources {
			if r.Frozen != nil {
				continue
			}
			lines = append(lines, putBack(r, func(f status.FieldChange) bool { return f.Frozen == nil })...)
		}
	}
	if len(lines) == 0 {
		return []string{"Nothing drifted: self-heal has nothing to put back."}
	}
	out := []string{"Self-heal will put back:"}
	if len(lines) > most {
		return append(append(out, lines[:most]...), fmt.Sprintf("  … and %d more fields", len(lines)-most))
	}
	return append(out, lines...)
}
