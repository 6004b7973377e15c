// Package sopsref holds differential tests of kdrift's SOPS reader and
// writer (kdrift.dev/kdrift/engine/sops) against the sops library itself.
// It is a module of its own so that sops, which links every cloud KMS
// client, never enters kdrift's go.mod; `make test` runs its tests.
package sopsref
