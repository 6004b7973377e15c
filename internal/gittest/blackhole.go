package gittest

import (
	"net"
	"sync"
	"testing"
)

// BlackHole listens on 127.0.0.1, accepts every connection and never
// writes a byte: a Git remote that hangs. It returns an http:// URL of a
// repository on it; the listener closes when the test ends.
func BlackHole(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "http://" + l.Addr().String() + "/team/deploy.git"
}
