package ui

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"kdrift.dev/kdrift/engine/diff"
)

// command is one `:` command: the name and aliases it answers to, its
// arguments and what it does as `?` shows them, and run, which opens
// what it leads to. Work run starts goes through Model.run (or an
// outcome's work), so its result marks it done.
type command struct {
	name    string
	aliases []string
	args    string // as help shows them; "" when it takes none
	help    string
	run     func(m *Model, args []string) tea.Cmd
}

// commands is the `:` command line: runCommand, its "unknown command"
// hint and the `?` help all read this table, so a command added here is
// listed everywhere.
var commands = []command{
	{name: "apps", aliases: []string{"app", "a"}, help: "all apps", run: (*Model).cmdApps},
	{name: "owners", aliases: []string{"own"}, args: "[KIND[.GROUP]…]", help: "field ownership table", run: (*Model).cmdOwners},
	{name: "ctx", aliases: []string{"context"}, args: "[NAME]", help: "apps of one context (none: all)", run: (*Model).cmdCtx},
	{name: "q", aliases: []string{"quit", "q!"}, help: "quit", run: func(*Model, []string) tea.Cmd { return tea.Quit }},
}

// lookupCommand is the command named or aliased name.
func lookupCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name || slices.Contains(c.aliases, name) {
			return c, true
		}
	}
	return command{}, false
}

// usage is how help shows a command: ":owners [KIND[.GROUP]…]".
func (c command) usage() string {
	if c.args == "" {
		return ":" + c.name
	}
	return ":" + c.name + " " + c.args
}

// commandList is every command's usage, for the "unknown command" hint.
func commandList() string {
	u := make([]string, len(commands))
	for i, c := range commands {
		u[i] = c.usage()
	}
	return strings.Join(u, ", ")
}

// commandHelp is the `?` help's column of `:` commands.
func commandHelp() []key.Binding {
	out := make([]key.Binding, len(commands))
	for i, c := range commands {
		out[i] = key.NewBinding(key.WithKeys(":"+c.name), key.WithHelp(c.usage(), c.help))
	}
	return out
}

// runCommand runs a line of the `:` command line.
func (m *Model) runCommand(line string) tea.Cmd {
	f := strings.Fields(line)
	if len(f) == 0 {
		return nil
	}
	c, ok := lookupCommand(f[0])
	if !ok {
		m.setStatus(fmt.Sprintf("unknown command %q: try %s", line, commandList()), true)
		return nil
	}
	return c.run(m, f[1:])
}

// cmdApps (`:apps`) goes back to the apps of every context.
func (m *Model) cmdApps([]string) tea.Cmd {
	m.stack = m.stack[:1]
	m.stack[0].(*appsView).setContext("")
	m.setStatus("all apps", false)
	return nil
}

// cmdCtx (`:ctx [NAME]`) shows the apps whose destination is context
// NAME, or of every context when NAME is left out.
func (m *Model) cmdCtx(args []string) tea.Cmd {
	m.stack = m.stack[:1]
	apps := m.stack[0].(*appsView)
	if len(args) == 0 {
		apps.setContext("")
		m.setStatus("apps of every context", false)
		return nil
	}
	var known []string
	for _, a := range m.c.apps {
		if c := a.Destination.Context; c != "" && !slices.Contains(known, c) {
			known = append(known, c)
		}
	}
	if !slices.Contains(known, args[0]) {
		slices.Sort(known)
		list := strings.Join(known, ", ")
		if list == "" {
			list = "none: every App deploys to the kubeconfig's current context"
		}
		m.setStatus(fmt.Sprintf("no App deploys to context %q; contexts named by Apps: %s", args[0], list), true)
		return nil
	}
	apps.setContext(args[0])
	m.setStatus("apps whose destination context is "+args[0], false)
	return nil
}

// cmdOwners (`:owners [KIND[.GROUP]…]`) opens the field ownership table,
// of the kinds named or of every kind.
func (m *Model) cmdOwners(args []string) tea.Cmd {
	var filter []diff.KindFilter
	for _, k := range args {
		kf, err := diff.ParseKindFilter(k)
		if err != nil {
			m.setStatus(":owners "+err.Error(), true)
			return nil
		}
		filter = append(filter, kf)
	}
	ov := newOwnerMapView(m.c, filter, strings.Join(args, " "))
	return m.apply(outcome{push: ov, work: ov.load()})
}
