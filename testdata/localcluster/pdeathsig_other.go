//go:build !linux

package main

// dieWithParent has no portable equivalent outside Linux; the test helper
// still stops the process on exit.
func dieWithParent() error { return nil }
