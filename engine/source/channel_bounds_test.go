package source_test

import (
	"context"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/gitfs"
	"kdrift.dev/kdrift/internal/gittest"
	"kdrift.dev/kdrift/internal/hostile"
)

// TestChannelWalkPastHugeCommitIsBounded: the desired branch has a
// commit with a 128 MiB message since the incident channel left it; the
// walk finds where the channel meets the branch reading that commit's
// header only.
func TestChannelWalkPastHugeCommitIsBounded(t *testing.T) {
	const big = 128 << 20
	r := gittest.Init(t)
	base := r.Commit("base", hostile.BaseFiles)
	r.Git("checkout", "-q", "-b", "incident")
	tip := r.Commit("not a freeze record", map[string]string{"x": "1"})
	r.Git("checkout", "-q", "main")
	hostile.BigMessage(t, r, "web", big)
	head := r.Commit("after", map[string]string{"y": "1"})
	g, err := gitfs.PlainOpen(r.Dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var read source.ChannelRead
	n := allocated(func() {
		read, err = source.WalkChannel(context.Background(), g, "incident", "incident", plumbing.NewHash(tip), plumbing.NewHash(head))
	})
	if err != nil || read.Base != base || len(read.Refused) != 1 {
		t.Errorf("WalkChannel = %+v, %v; want base %s and the one commit refused", read, err, base)
	}
	if n > 16<<20 {
		t.Errorf("walking the channel against a %d-byte commit allocated %d bytes", big, n)
	}
}
