// Package controller makes `kdrift controller` operable: Prometheus
// metrics, Kubernetes Events on the objects kdrift changes, liveness and
// readiness probes, and structured logs.
//
// It sits at the edge, beside the CLI: it reads the engine through its
// public surface (status snapshots, the event stream and the small
// engine.Observer hook) and does the I/O the engine must never do (an HTTP
// server, writes to the apiserver's events API, log lines). The engine
// does not import it, and nothing here changes what the engine decides.
//
// It is a package of its own, not a part of ui/cli, because it is not
// presentation: Run assembles the whole headless controller (the Lease
// candidate and AppStatus publishing of engine/healer, the decryption
// keys, the metrics, probes and Events, the engine's loop and its JSON
// event lines), and the cobra command only registers its flags
// (Flags.Register), opens the engine and calls Run.
package controller
