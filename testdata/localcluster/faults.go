package main

import (
	"bufio"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Fault commands, one a line on stdin under --faults. Each is answered
// with one line on stdout: "ok LINE" once done, or "error LINE: WHY".
const (
	// cmdRestartAPIServer stops the kube-apiserver (a graceful
	// shutdown: its connections are closed) and starts it again on the
	// same port, with the same etcd, certificates and tokens; it is
	// answered once the new one's /readyz says ok.
	cmdRestartAPIServer = "restart-apiserver"
	// cmdEtcdLatency ("etcd-latency 200ms") delays every request the
	// kube-apiserver sends to etcd by the duration ("0s" ends it).
	cmdEtcdLatency = "etcd-latency"
)

// maxEtcdLatency bounds etcd-latency: the apiserver's own etcd health
// check gives up after a few seconds.
const maxEtcdLatency = 2 * time.Second

// readCommands sends stdin's lines to the returned channel until EOF.
func readCommands(in io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// answer writes a command's answer line on stdout.
func answer(line string, err error) {
	if err != nil {
		os.Stdout.WriteString("error " + line + ": " + err.Error() + "\n")
		return
	}
	os.Stdout.WriteString("ok " + line + "\n")
}

// latencyProxy is a TCP proxy on loopback between the kube-apiserver and
// etcd that delays what the apiserver sends by a duration set at run
// time, as a slow disk or network under etcd does. It delays each chunk
// by the duration without serialising them: a request sent while others
// wait is not held longer for them (latency, not a bandwidth limit).
type latencyProxy struct {
	target string
	l      net.Listener
	delay  atomic.Int64 // nanoseconds

	mu    sync.Mutex
	conns map[net.Conn]bool
}

func newLatencyProxy(target string) (*latencyProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &latencyProxy{target: target, l: l, conns: map[net.Conn]bool{}}
	go p.serve()
	return p, nil
}

// URL is the address the apiserver reaches etcd on through the proxy.
func (p *latencyProxy) URL() string { return "http://" + p.l.Addr().String() }

func (p *latencyProxy) setDelay(d time.Duration) { p.delay.Store(int64(d)) }

func (p *latencyProxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *latencyProxy) track(c net.Conn, on bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false // closed
	}
	if on {
		p.conns[c] = true
	} else {
		delete(p.conns, c)
	}
	return true
}

func (p *latencyProxy) forward(c net.Conn) {
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	if !p.track(c, true) || !p.track(up, true) {
		_ = c.Close()
		_ = up.Close()
		return
	}
	done := make(chan struct{}, 2)
	go func() { p.delayed(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	_ = c.Close()
	_ = up.Close()
	<-done
	p.track(c, false)
	p.track(up, false)
}

// chunk is what was read at one time, due to be written at due.
type chunk struct {
	due  time.Time
	data []byte
}

// delayed copies src to dst, each chunk written the proxy's delay after
// it was read.
func (p *latencyProxy) delayed(dst io.Writer, src io.Reader) {
	q := make(chan chunk, 4096)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				q <- chunk{due: time.Now().Add(time.Duration(p.delay.Load())), data: buf[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for ch := range q {
		if wait := time.Until(ch.due); wait > 0 {
			time.Sleep(wait)
		}
		if _, err := dst.Write(ch.data); err != nil {
			// Drain so the reader ends with its source.
			for range q {
			}
			return
		}
	}
}

// Close stops the proxy and cuts its connections.
func (p *latencyProxy) Close() {
	_ = p.l.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}
