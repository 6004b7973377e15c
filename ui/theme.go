package ui

import (
	"image/color"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// Theme is the UI's palette: each entry is a light/dark pair, picked once
// the terminal's background is known.
type Theme struct {
	Fg, Muted, Accent, Border [2]color.Color
	Good, Warn, Bad, Info     [2]color.Color
	AddBg, DelBg, ChangeBg    [2]color.Color
	Selected                  [2]color.Color
	// Managers colour the blame gutter, one per field manager in order of
	// first appearance.
	Managers [][2]color.Color
}

func pair(light, dark string) [2]color.Color {
	return [2]color.Color{lipgloss.Color(light), lipgloss.Color(dark)}
}

// DefaultTheme is kdrift's palette.
func DefaultTheme() Theme {
	return Theme{
		Fg: pair("#1f2328", "#e6edf3"), Muted: pair("#6e7781", "#8b949e"),
		Accent: pair("#0969da", "#58a6ff"), Border: pair("#d0d7de", "#30363d"),
		Good: pair("#1a7f37", "#3fb950"), Warn: pair("#9a6700", "#d29922"),
		Bad: pair("#cf222e", "#f85149"), Info: pair("#8250df", "#bc8cff"),
		AddBg: pair("#dafbe1", "#12361f"), DelBg: pair("#ffebe9", "#3d1418"),
		ChangeBg: pair("#fff8c5", "#3a3000"), Selected: pair("#ddf4ff", "#1c2d41"),
		Managers: [][2]color.Color{
			pair("#0969da", "#58a6ff"), pair("#bf3989", "#f778ba"), pair("#1a7f37", "#3fb950"),
			pair("#9a6700", "#d29922"), pair("#8250df", "#bc8cff"), pair("#0a7c85", "#39c5cf"),
			pair("#bc4c00", "#f0883e"),
		},
	}
}

// Styles are every style the views use, built once from a Theme; no view
// builds a style while rendering.
type Styles struct {
	NoColor bool

	Title, Header, Muted, Selected, Marked lipgloss.Style
	Good, Warn, Bad, Info, Accent          lipgloss.Style
	StatusInfo, StatusErr, Banner          lipgloss.Style
	Add, Del, Change, Gutter, Flag         lipgloss.Style
	Dialog, DialogTitle, HelpKey, HelpDesc lipgloss.Style
	Managers                               []lipgloss.Style
	// Input is the style of text fields (dialogs, filter, command line).
	Input textinput.Styles
}

// NewStyles builds the styles for a dark or light background. With
// noColor every style keeps only attributes (bold, reverse, underline),
// so selection and changed lines still show; statuses carry text markers
// in any case.
func NewStyles(t Theme, isDark, noColor bool) *Styles {
	i := 0
	if isDark {
		i = 1
	}
	fg := func(c [2]color.Color) lipgloss.Style {
		if noColor {
			return lipgloss.NewStyle()
		}
		return lipgloss.NewStyle().Foreground(c[i])
	}
	bg := func(c [2]color.Color, rev bool) lipgloss.Style {
		if noColor {
			return lipgloss.NewStyle().Reverse(rev)
		}
		return lipgloss.NewStyle().Background(c[i]).Foreground(t.Fg[i])
	}
	s := &Styles{NoColor: noColor}
	s.Title = fg(t.Accent).Bold(true)
	s.Header = fg(t.Muted).Bold(true)
	s.Muted = fg(t.Muted)
	s.Selected = bg(t.Selected, true).Bold(true)
	s.Marked = fg(t.Info).Bold(true)
	s.Good, s.Warn, s.Bad, s.Info, s.Accent = fg(t.Good), fg(t.Warn).Bold(true), fg(t.Bad).Bold(true), fg(t.Info), fg(t.Accent)
	s.StatusInfo = fg(t.Muted)
	s.StatusErr = fg(t.Bad).Bold(true)
	s.Banner = bg(t.DelBg, true).Bold(true)
	if !noColor {
		s.Banner = lipgloss.NewStyle().Background(t.Bad[i]).Foreground(lipgloss.Color("#ffffff")).Bold(true)
	}
	s.Add = bg(t.AddBg, false)
	s.Del = bg(t.DelBg, false)
	s.Change = bg(t.ChangeBg, false)
	if noColor {
		s.Add, s.Del, s.Change = lipgloss.NewStyle().Bold(true), lipgloss.NewStyle().Bold(true), lipgloss.NewStyle().Bold(true)
	}
	s.Gutter = fg(t.Muted)
	s.Flag = fg(t.Warn).Bold(true)
	s.Dialog = lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).Padding(0, 1)
	if !noColor {
		s.Dialog = s.Dialog.BorderForeground(t.Accent[i])
	}
	s.DialogTitle = fg(t.Accent).Bold(true)
	s.HelpKey = fg(t.Accent).Bold(true)
	s.HelpDesc = fg(t.Muted)
	s.Input = textinput.DefaultStyles(isDark)
	if noColor {
		s.Input = textinput.Styles{}
		s.Input.Cursor.Shape = tea.CursorBlock
	}
	s.Input.Cursor.Blink = false
	for _, c := range t.Managers {
		s.Managers = append(s.Managers, fg(c))
	}
	return s
}
