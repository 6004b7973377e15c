package gittest

import (
	"os"
	"testing"
)

// HoldLock creates path+".lock" exclusively, as git does while it updates
// path (a ref, index, packed-refs, config), and returns the lock's path.
// The test removes it to let go.
func HoldLock(t testing.TB, path string) string {
	t.Helper()
	lock := path + ".lock"
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return lock
}
