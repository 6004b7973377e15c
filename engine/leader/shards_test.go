package leader

import (
	"fmt"
	"testing"
)

// TestShardOfIsStable: the shard of a name is part of the protocol
// between replicas of different versions (a rolling update runs both):
// these values must never change.
func TestShardOfIsStable(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int
		want int
	}{
		{"web", 3, ShardOf("web", 3)},
		{"", 5, ShardOf("", 5)},
		{"anything", 1, 0},
		{"anything", 0, 0},
	} {
		if got := ShardOf(c.name, c.n); got != c.want || got < 0 || (c.n > 0 && got >= c.n) {
			t.Errorf("ShardOf(%q, %d) = %d, want %d", c.name, c.n, got, c.want)
		}
	}
	// FNV-1a 64 of the name modulo n, pinned (computed apart from Go).
	for _, c := range []struct {
		name     string
		of3, of7 int
	}{{"web", 1, 4}, {"payments", 1, 6}, {"render-prod", 1, 3}, {"tts-prod", 1, 4}, {"a", 1, 5}, {"shop", 2, 5}} {
		if got3, got7 := ShardOf(c.name, 3), ShardOf(c.name, 7); got3 != c.of3 || got7 != c.of7 {
			t.Errorf("ShardOf(%q) = %d of 3, %d of 7, want %d, %d: the hash changed, and replicas of two versions would both heal some Apps", c.name, got3, got7, c.of3, c.of7)
		}
	}
}

// TestShardOfSpreads: 3,000 names of the usual shape spread over 3 and 7
// shards within 10% of even.
func TestShardOfSpreads(t *testing.T) {
	for _, n := range []int{3, 7} {
		count := make([]int, n)
		const names = 3000
		for i := 0; i < names; i++ {
			count[ShardOf(fmt.Sprintf("team-%d-app-%04d", i%17, i), n)]++
		}
		even := names / n
		for k, c := range count {
			if c < even*9/10 || c > even*11/10 {
				t.Errorf("%d shards: shard %d has %d of %d names (even: %d)", n, k, c, names, even)
			}
		}
	}
}

func TestNewSharderRefusesBadCounts(t *testing.T) {
	for _, n := range []int{0, 1, MaxShards + 1} {
		if _, err := NewSharder(ShardOptions{Identity: "repo#main", Shards: n}); err == nil {
			t.Errorf("%d shards: no error", n)
		}
	}
}
