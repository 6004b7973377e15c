// Package backend is what kdrift's terminal UI asks of the engine and the
// Git actions (Backend), and its three kinds: Engine (this process's
// engine), Attached (the statuses the repository's leader publishes) and
// Switch (one that changes while the UI runs). It never imports the UI:
// the UI turns the events and results into its own messages.
package backend
