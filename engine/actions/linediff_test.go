package actions

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func lcsLen(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

func randLines(r *rand.Rand, n, alphabet int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("l%d\n", r.Intn(alphabet))
	}
	return out
}

// TestDiffLinesMinimalAndCorrect checks on random inputs that the hunks turn
// a into b and change no more lines than a longest common subsequence needs.
func TestDiffLinesMinimalAndCorrect(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(1))
	for iter := 0; iter < 500; iter++ {
		a := randLines(r, r.Intn(25), 6)
		b := randLines(r, r.Intn(25), 6)
		hs := diffLines(a, b)
		var got []string
		pos, changed := 0, 0
		for _, h := range hs {
			got = append(got, a[pos:h.A0]...)
			got = append(got, b[h.B0:h.B1]...)
			changed += (h.A1 - h.A0) + (h.B1 - h.B0)
			pos = h.A1
		}
		got = append(got, a[pos:]...)
		if strings.Join(got, "") != strings.Join(b, "") {
			t.Fatalf("hunks %v do not turn %q into %q", hs, a, b)
		}
		if want := len(a) + len(b) - 2*lcsLen(a, b); changed != want {
			t.Fatalf("diff of %q and %q changes %d lines, minimum is %d", a, b, changed, want)
		}
	}
}

func TestMerge3Cases(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, base, ours, theirs, want string
		conflict                       bool
	}{
		{"only theirs", "a\nb\nc\n", "a\nb\nc\n", "a\nB\nc\n", "a\nB\nc\n", false},
		{"only ours", "a\nb\nc\n", "a\nB\nc\n", "a\nb\nc\n", "a\nB\nc\n", false},
		{"separate lines", "a\nb\nc\nd\ne\n", "A\nb\nc\nd\ne\n", "a\nb\nc\nd\nE\n", "A\nb\nc\nd\nE\n", false},
		{"same change", "a\nb\nc\n", "a\nX\nc\n", "a\nX\nc\n", "a\nX\nc\n", false},
		{"same line differently", "a\nb\nc\n", "a\nX\nc\n", "a\nY\nc\n", "", true},
		{"adjacent lines", "a\nb\nc\nd\n", "a\nB\nc\nd\n", "a\nb\nC\nd\n", "", true},
		{"insert and delete apart", "1\n2\n3\n4\n5\n6\n", "0\n1\n2\n3\n4\n5\n6\n", "1\n2\n3\n4\n6\n", "0\n1\n2\n3\n4\n6\n", false},
		{"no newline at end", "a\nb\nc", "A\nb\nc", "a\nb\nC", "A\nb\nC", false},
		{"empty base", "", "", "x\n", "x\n", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, conf := merge3([]byte(c.base), []byte(c.ours), []byte(c.theirs))
			if (len(conf) > 0) != c.conflict {
				t.Fatalf("conflicts %v, want conflict=%v", conf, c.conflict)
			}
			if !c.conflict && string(got) != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

// TestMerge3AgreesWithGitMergeFile compares merge3 with `git merge-file` on
// random edits of a file of distinct lines (where line diffs are unambiguous):
// both must agree on whether the merge is clean, and on the result.
func TestMerge3AgreesWithGitMergeFile(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(7))
	dir := t.TempDir()
	edit := func(base []string) []string {
		out := append([]string(nil), base...)
		for n := r.Intn(3) + 1; n > 0; n-- {
			i := r.Intn(len(out) + 1)
			switch r.Intn(3) {
			case 0:
				out = append(out[:i], append([]string{fmt.Sprintf("new%d\n", r.Intn(1000000))}, out[i:]...)...)
			case 1:
				if i < len(out) {
					out = append(out[:i], out[i+1:]...)
				}
			case 2:
				if i < len(out) {
					out[i] = fmt.Sprintf("chg%d\n", r.Intn(1000000))
				}
			}
		}
		return out
	}
	clean, conflicted := 0, 0
	for iter := 0; iter < 150; iter++ {
		var base []string
		for i := 0; i < 12; i++ {
			base = append(base, fmt.Sprintf("line%d\n", i))
		}
		ours, theirs := edit(base), edit(base)
		write := func(name string, ls []string) string {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(strings.Join(ls, "")), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
		o, b, th := write("ours", ours), write("base", base), write("theirs", theirs)
		out, err := exec.Command("git", "merge-file", "-p", o, b, th).Output()
		gitConflict := false
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() > 0 {
				gitConflict = true
			} else {
				t.Fatalf("git merge-file: %v", err)
			}
		}
		got, conf := merge3([]byte(strings.Join(base, "")), []byte(strings.Join(ours, "")), []byte(strings.Join(theirs, "")))
		if gitConflict != (len(conf) > 0) {
			t.Fatalf("base %q ours %q theirs %q: git conflict=%v, merge3 conflicts %v", base, ours, theirs, gitConflict, conf)
		}
		if gitConflict {
			conflicted++
			continue
		}
		clean++
		if string(got) != string(out) {
			t.Fatalf("base %q ours %q theirs %q: git %q, merge3 %q", base, ours, theirs, out, got)
		}
	}
	t.Logf("%d clean merges equal to git's, %d conflicts agreed", clean, conflicted)
}

func TestUnifiedDiff(t *testing.T) {
	t.Parallel()
	got := unifiedDiff("a/f", "b/f", []byte("1\n2\n3\n4\n5\n6\n7\n8\n9\n"), []byte("1\n2\n3\n4\nfive\n6\n7\n8\n9\n"))
	want := "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if d := unifiedDiff("a", "b", []byte("x\n"), []byte("x\n")); d != "" {
		t.Fatalf("equal texts gave %q", d)
	}
}

// BenchmarkMerge3 merges two far-apart edits of a 5000-line file.
func BenchmarkMerge3(b *testing.B) {
	var base []string
	for i := 0; i < 5000; i++ {
		base = append(base, fmt.Sprintf("line %d\n", i))
	}
	ours := append([]string(nil), base...)
	theirs := append([]string(nil), base...)
	ours[100] = "ours\n"
	theirs[4000] = "theirs\n"
	bb, ob, tb := []byte(strings.Join(base, "")), []byte(strings.Join(ours, "")), []byte(strings.Join(theirs, ""))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, c := merge3(bb, ob, tb); len(c) > 0 {
			b.Fatal("conflict")
		}
	}
}

// TestDiffLinesLargeInputs covers texts past maxEdit: a few changes are
// still found exactly; a full rewrite falls back to one replacement.
func TestDiffLinesLargeInputs(t *testing.T) {
	t.Parallel()
	var a, b, c []string
	for i := 0; i < 1500; i++ {
		a = append(a, fmt.Sprintf("a%d\n", i))
		c = append(c, fmt.Sprintf("c%d\n", i))
	}
	b = append(b, a...)
	b[10], b[700], b[1400] = "x\n", "y\n", "z\n"
	b = append(b[:20], b[21:]...)
	if hs := diffLines(a, b); len(hs) != 4 {
		t.Fatalf("few edits in a large file gave %d hunks: %v", len(hs), hs)
	}
	hs := diffLines(a, c)
	if len(hs) != 1 || hs[0] != (hunk{0, 1500, 0, 1500}) {
		t.Fatalf("rewrite gave %v", hs)
	}
}
