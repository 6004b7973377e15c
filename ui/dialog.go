package ui

import (
	"strings"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// field is one text input of a dialog.
type field struct {
	label    string
	required bool
	input    textinput.Model
}

// submitFunc receives the dialog's field values once every required one
// is filled; it returns the follow-up (a command, another dialog) or a
// problem to show in the dialog ("" when none).
type submitFunc func(values []string) (next outcome, problem string)

// dialog is a modal question: a title, a body to read (a plan, a preview),
// text fields, and what enter does. Esc cancels it. It holds the keyboard
// while open, but results of running work still arrive underneath.
type dialog struct {
	title    string
	body     []string
	fields   []field
	focus    int
	scroll   int
	hint     string
	problem  string
	onSubmit submitFunc
}

func newDialog(title string, body []string, hint string, onSubmit submitFunc) *dialog {
	return &dialog{title: title, body: body, hint: hint, onSubmit: onSubmit}
}

// withField adds a text field; the first added one has the focus.
func (d *dialog) withField(label, placeholder string, required bool) *dialog {
	in := textinput.New()
	in.Prompt = ""
	in.Placeholder = placeholder
	st := textinput.DefaultStyles(true)
	st.Cursor.Blink = false
	in.SetStyles(st)
	if len(d.fields) == 0 {
		in.Focus()
	}
	d.fields = append(d.fields, field{label: label, required: required, input: in})
	return d
}

func (d *dialog) values() []string {
	out := make([]string, len(d.fields))
	for i, f := range d.fields {
		out[i] = strings.TrimSpace(f.input.Value())
	}
	return out
}

func (d *dialog) setFocus(i int) {
	if len(d.fields) == 0 {
		return
	}
	d.fields[d.focus].input.Blur()
	d.focus = (i + len(d.fields)) % len(d.fields)
	d.fields[d.focus].input.Focus()
}

// handleKey returns the outcome of a key in the dialog and whether the
// dialog stays open.
func (d *dialog) handleKey(msg tea.KeyPressMsg) (outcome, bool) {
	switch msg.String() {
	case "esc":
		return outcome{handled: true, status: "cancelled"}, false
	case "tab", "down":
		if len(d.fields) > 1 {
			d.setFocus(d.focus + 1)
			return handled(nil), true
		}
		if msg.String() == "down" {
			d.scroll++
		}
		return handled(nil), true
	case "shift+tab", "up":
		if len(d.fields) > 1 {
			d.setFocus(d.focus - 1)
			return handled(nil), true
		}
		if msg.String() == "up" && d.scroll > 0 {
			d.scroll--
		}
		return handled(nil), true
	case "pgdown":
		d.scroll += 10
		return handled(nil), true
	case "pgup":
		d.scroll = max(d.scroll-10, 0)
		return handled(nil), true
	case "enter":
		// Enter submits from any field; optional fields may stay empty.
		vals := d.values()
		for i, f := range d.fields {
			if f.required && vals[i] == "" {
				d.problem = f.label + " is required"
				d.setFocus(i)
				return handled(nil), true
			}
		}
		next, problem := d.onSubmit(vals)
		if problem != "" {
			d.problem = problem
			return handled(nil), true
		}
		next.handled = true
		return next, false
	case "y":
		if len(d.fields) == 0 {
			next, problem := d.onSubmit(nil)
			if problem != "" {
				d.problem = problem
				return handled(nil), true
			}
			next.handled = true
			return next, false
		}
	case "n":
		if len(d.fields) == 0 {
			return outcome{handled: true, status: "cancelled"}, false
		}
	}
	if len(d.fields) > 0 {
		var cmd tea.Cmd
		d.fields[d.focus].input, cmd = d.fields[d.focus].input.Update(msg)
		d.problem = ""
		return handled(cmd), true
	}
	return handled(nil), true
}

// render draws the dialog in at most w×h cells.
func (d *dialog) render(s *Styles, w, h int) string {
	inner := max(w-4, 10)
	var b strings.Builder
	b.WriteString(s.DialogTitle.Render(cut(d.title, inner)))
	b.WriteByte('\n')
	room := max(h-4-2*len(d.fields)-3, 1)
	body := d.body
	if d.scroll > max(len(body)-room, 0) {
		d.scroll = max(len(body)-room, 0)
	}
	end := min(d.scroll+room, len(body))
	for _, l := range body[d.scroll:end] {
		b.WriteString(cut(l, inner))
		b.WriteByte('\n')
	}
	if end < len(body) {
		b.WriteString(s.Muted.Render("… more below (↓/pgdn)"))
		b.WriteByte('\n')
	}
	for i, f := range d.fields {
		mark := "  "
		if i == d.focus {
			mark = "> "
		}
		req := ""
		if f.required {
			req = " (required)"
		}
		b.WriteString(mark + f.label + req + ": ")
		f.input.SetStyles(s.Input)
		f.input.SetWidth(max(inner-ansi.StringWidth(mark+f.label+req+": ")-1, 5))
		b.WriteString(f.input.View())
		b.WriteByte('\n')
	}
	if d.problem != "" {
		b.WriteString(s.StatusErr.Render("! " + d.problem))
		b.WriteByte('\n')
	}
	b.WriteString(s.Muted.Render(cut(d.hint, inner)))
	return s.Dialog.Width(min(w, inner+4)).Render(b.String())
}
