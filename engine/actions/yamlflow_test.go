package actions

import (
	"context"
	"strings"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/app"
)

// fluxFlowFixture is fluxFixture with the Kustomization's metadata written
// in flow style, as many repositories write it.
var fluxFlowFixture = strings.Replace(fluxFixture,
	"metadata:\n  name: podinfo\n  namespace: flux-system\n  annotations:\n    team: web # who to call\n",
	"metadata: {name: podinfo, namespace: flux-system}   # podinfo's sync\n", 1)

// TestFreezeFluxKustomizationWithFlowMetadata: a Kustomization written
// `metadata: {name: …, namespace: …}` is frozen; only that mapping is
// rewritten (as a block, its comment kept), every other byte stays, and
// the unfreeze leaves the block mapping with the same keys.
func TestFreezeFluxKustomizationWithFlowMetadata(t *testing.T) {
	isolate(t)
	remote := newOwnedRemote(t)
	seed := cloneOf(t, remote)
	writeFile(t, seed, "flux/podinfo.yaml", strings.ReplaceAll(fluxFlowFixture, "REPO", remote+"/"))
	gitRun(t, seed, "commit", "-q", "-am", "flow metadata")
	gitRun(t, seed, "push", "-q", "origin", "main")
	before := gitRun(t, remote, "show", "main:flux/podinfo.yaml") + "\n"

	r := openRepo(t, cloneOf(t, remote), newClock())
	ctx := context.Background()
	if _, err := r.Freeze(ctx, FreezeRequest{Selection: Selection{Apps: []string{"podinfo"}}, Reason: "INC-8 stop Flux"}); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(before, "metadata: {name: podinfo, namespace: flux-system}   # podinfo's sync\n",
		"metadata:   # podinfo's sync\n  name: podinfo\n  namespace: flux-system\n  annotations:\n"+
			"    kdrift.dev/freeze-reason: \"INC-8 stop Flux\"\n"+
			"    kdrift.dev/freeze-by: \"Lao Li <lao.li@example.com>\"\n"+
			"    kdrift.dev/freeze-at: \"2026-12-02T15:00:00Z\"\n"+
			"    kdrift.dev/freeze-previous: \"absent\"\n", 1)
	want = strings.Replace(want, "  prune: true\n", "  prune: true\n  suspend: true\n", 1)
	if got := gitRun(t, remote, "show", "main:flux/podinfo.yaml") + "\n"; got != want {
		t.Fatalf("frozen file:\n%s\nwant:\n%s", got, want)
	}
	if _, err := r.Unfreeze(ctx, UnfreezeRequest{Selection: Selection{Apps: []string{"podinfo"}}, Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	unfrozen := strings.Replace(before, "metadata: {name: podinfo, namespace: flux-system}   # podinfo's sync\n",
		"metadata:   # podinfo's sync\n  name: podinfo\n  namespace: flux-system\n", 1)
	if got := gitRun(t, remote, "show", "main:flux/podinfo.yaml") + "\n"; got != unfrozen {
		t.Fatalf("unfrozen file:\n%s\nwant:\n%s", got, unfrozen)
	}
}

// TestFlowStyleEditsAreByteExact: each edit rewrites only the flow
// mapping or list it writes into, and keeps every other byte.
func TestFlowStyleEditsAreByteExact(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fr := app.Freeze{Reason: "r", By: "A <a@b.c>", At: at}
	frozen := "  freeze:\n    reason: \"r\"\n    by: \"A <a@b.c>\"\n    at: \"2026-01-02T03:04:05Z\"\n"
	rule := app.IgnoreRule{Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}
	cases := []struct {
		name, src, want string
		edit            func([]byte) ([]byte, error)
	}{{
		name: "spec in flow style, CRLF",
		src:  "# keep\r\nkind: App\r\nmetadata:\r\n  name: a\r\nspec: {path: p, syncPolicy: {selfHeal: true}}\r\nextra: 1\r\n",
		want: "# keep\r\nkind: App\r\nmetadata:\r\n  name: a\r\nspec:\r\n  path: p\r\n  syncPolicy: {selfHeal: true}\r\n" + strings.ReplaceAll(frozen, "\n", "\r\n") + "extra: 1\r\n",
		edit: func(b []byte) ([]byte, error) { return setFreeze(b, "a", fr) },
	}, {
		name: "flow ignore list over lines, quotes with brackets and comments",
		src:  "kind: App\nmetadata:\n  name: a\nspec:\n  path: p\n  ignoreDifferences: [\n    {kind: X, jsonPointers: [\"/a}\", '/b]''s']},\n  ]  # rules\n  # after\nstatus: {}\n",
		want: "kind: App\nmetadata:\n  name: a\nspec:\n  path: p\n  ignoreDifferences:  # rules\n    - {kind: X, jsonPointers: [\"/a}\", '/b]''s']}\n    - kind: \"Deployment\"\n      jsonPointers: [\"/spec/replicas\"]\n  # after\nstatus: {}\n",
		edit: func(b []byte) ([]byte, error) { return appendIgnoreRule(b, "a", rule) },
	}, {
		name: "freeze in flow style, no final line break",
		src:  "kind: App\nmetadata: {name: a}\nspec:\n  path: p\n  freeze: {reason: old, by: someone, at: \"2026-01-01T00:00:00Z\"}",
		want: "kind: App\nmetadata: {name: a}\nspec:\n  path: p\n  freeze:\n    reason: old\n    by: someone\n    at: \"2026-01-01T00:00:00Z\"\n    until: \"2026-01-02T03:04:05Z\"",
		edit: func(b []byte) ([]byte, error) { return setFreezeUntil(b, "a", at) },
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.edit([]byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("got:\n%q\nwant:\n%q", got, c.want)
			}
		})
	}
}

// TestFlowStyleThatCannotBeRewrittenIsRefused: a flow mapping carrying an
// anchor, or a comment inside it, is refused with the line and what to
// do; nothing is lost.
func TestFlowStyleThatCannotBeRewrittenIsRefused(t *testing.T) {
	for src, want := range map[string]string{
		"kind: App\nmetadata:\n  name: a\nspec: &s {path: p}\n":                "line 4: the value of spec is written in flow style and carries an anchor or a tag; write it as a block",
		"kind: App\nmetadata:\n  name: a\nspec: { # why\n  path: p}\n":         "line 4: the value of spec is written in flow style and holds a comment (# why) kdrift cannot keep",
		"kind: App\nmetadata:\n  name: a\nspec: {path: p, notes: \"a # b\"}\n": "",
	} {
		_, err := setFreeze([]byte(src), "a", app.Freeze{Reason: "r", By: "A <a@b.c>", At: time.Now()})
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Fatalf("%q: got %v, want %q", src, err, want)
		}
	}
}
