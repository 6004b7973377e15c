package hostile

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kdrift.dev/kdrift/internal/gittest"
)

// What a hostile committer puts in Git for the parent process to read:
// objects that are small in .git and huge inflated (zeros and repeated
// characters compress a thousandfold), and text that acts on a terminal.

// BaseFiles is the reproducers' base repository: .kdrift/web.yaml, an App
// with path deploy/web, where deploy/web holds a kustomization.yaml and
// one ConfigMap.
var BaseFiles = map[string]string{
	".kdrift/web.yaml":              "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: web\nspec:\n  path: deploy/web\n",
	"deploy/web/kustomization.yaml": "resources: [cm.yaml]\n",
	"deploy/web/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  a: b\n",
}

// writeObject stores prefix followed by n bytes c as a blob, streamed
// through git hash-object, and returns its hash.
func writeObject(t testing.TB, r *gittest.Repo, prefix string, c byte, n int64) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "blob")
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte{c}, 1<<20)
	w := f
	if _, err := io.WriteString(w, prefix); err != nil {
		t.Fatal(err)
	}
	for left := n; left > 0; left -= int64(len(chunk)) {
		if _, err := w.Write(chunk[:min(left, int64(len(chunk)))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	h := r.Git("hash-object", "-w", f.Name())
	_ = os.Remove(f.Name())
	return h
}

// BigSettings commits a .kdrift/settings.yaml of a Settings header and
// then size bytes of '#'.
func BigSettings(t testing.TB, r *gittest.Repo, size int64) string {
	t.Helper()
	h := writeObject(t, r, "apiVersion: kdrift.dev/v1alpha1\nkind: Settings\n", '#', size)
	r.Git("update-index", "--add", "--cacheinfo", "100644,"+h+",.kdrift/settings.yaml")
	r.Git("commit", "-qm", "big settings")
	return r.Git("rev-parse", "HEAD")
}

// BigLink commits a symbolic link name whose target is size bytes of 'a'.
func BigLink(t testing.TB, r *gittest.Repo, name string, size int64) string {
	t.Helper()
	h := writeObject(t, r, "", 'a', size)
	r.Git("update-index", "--add", "--cacheinfo", "120000,"+h+","+name)
	r.Git("commit", "-qm", "big link")
	return r.Git("rev-parse", "HEAD")
}

// BigMessage commits (on top of HEAD, with HEAD's tree) a commit whose
// message is size bytes of 'x' between a subject and kdrift's freeze
// trailers for app, and moves the branch to it.
func BigMessage(t testing.TB, r *gittest.Repo, app string, size int64) string {
	t.Helper()
	dir := t.TempDir()
	msg := filepath.Join(dir, "msg")
	f, err := os.Create(msg)
	if err != nil {
		t.Fatal(err)
	}
	chunk := []byte(strings.Repeat("x", 1<<20))
	_, _ = io.WriteString(f, "freeze("+app+"): big\n\n")
	for left := size; left > 0; left -= int64(len(chunk)) {
		_, _ = f.Write(chunk[:min(left, int64(len(chunk)))])
	}
	_, _ = io.WriteString(f, "\n\nKdrift-Action: freeze\nKdrift-App: "+app+"\n")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	c := r.Git("commit-tree", "HEAD^{tree}", "-p", "HEAD", "-F", msg)
	r.Git("update-ref", "HEAD", c)
	return c
}

// TerminalText are strings that act on a terminal shown raw, each put in
// a field of a freeze, a file name or a commit: a colour, a clear, the
// window title (OSC 0), a clipboard write (OSC 52), a hyperlink (OSC 8),
// a C1 CSI and a right-to-left override.
var TerminalText = []string{
	"Evil \x1b[32m<e@x>",
	"x\x1b[41mRED\x1b]0;TITLE\a",
	"body \x1b[2J",
	"\x1b]52;c;aGVsbG8=\a",
	"\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\",
	"c1 \u009b31m",
	"txt.yaml\u202egpj",
}

// RawControl is the first character in s, other than a newline or a tab,
// that a terminal acts on rather than prints: a C0 or C1 control, DEL,
// or a bidirectional override; ok is false when there is none.
func RawControl(s string) (r rune, ok bool) {
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
			return r, true
		}
	}
	return 0, false
}
