// Package ui is kdrift's terminal UI: apps by sync state, an app's
// resources, a side-by-side diff with field owners, an ownership (blame)
// view and the app's Git history, with keys to sync, freeze, unfreeze,
// ignore and revert. It talks to the engine and the Git actions only
// through backend.Backend (package ui/backend, which never imports ui),
// and never blocks on it: every call runs in a tea.Cmd.
//
// Run is the entry point; NewModel builds the root model for tests.
//
// # Texts end-to-end tests can wait for
//
// These are kept stable (tmux capture-pane sees them as written):
//
//   - top bar: "kdrift │ apps", "kdrift │ apps › app NAME › diff KIND/NS/NAME",
//     " │ READ-ONLY" when read-only
//   - statuses: "✓ Synced", "≠ OutOfSync", "✗ Error", "? Unknown";
//     resources also "+ Missing", "- Extraneous", "~ Ignored",
//     "⟳ RequiresReplace"; health "♥ Healthy", "◐ Progressing",
//     "✗ Degraded", "∅ Missing"
//   - self-heal: "on", "off", "❄ FROZEN <age> <who> →HH:MM"
//   - diff owner column: "<manager> <Operation>[/<subresource>] [<age>] · <class>",
//     e.g. "kubectl Update/scale · person"
//   - dialogs: "Sync NAME? (N objects)", "Sync FROZEN app NAME anyway?",
//     "Freeze N app(s)?", "Unfreeze N app(s)?", "Ignore /json/pointer?",
//     "Revert SHORT SUBJECT?"; fields "reason (required):", "for:"
//   - results in the status line: "synced NAME", "freeze NAME: committed
//     SHORT and pushed", "… (not pushed yet: …)", "… failed: …",
//     "read-only: sync is disabled …"
//   - banners: "⚠ cluster CTX unreachable since HH:MM: …",
//     "⚠ Git unreachable since HH:MM: …"
//
// Press esc with a pause after it: a terminal sends ESC followed quickly
// by another key as one alt+key press.
package ui
