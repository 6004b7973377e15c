package controller

import (
	"log/slog"
	"net"
	"testing"
)

// TestMetricsAddrPortAloneIsLoopback: --metrics-addr :PORT serves only
// loopback; other hosts are served only when the address says so.
func TestMetricsAddrPortAloneIsLoopback(t *testing.T) {
	for in, want := range map[string]string{
		":8080":          "127.0.0.1:8080",
		"0.0.0.0:8080":   "0.0.0.0:8080",
		"[::]:8080":      "[::]:8080",
		"10.0.0.1:9":     "10.0.0.1:9",
		"127.0.0.1:8080": "127.0.0.1:8080",
	} {
		if got := LoopbackDefault(in); got != want {
			t.Errorf("LoopbackDefault(%q) = %q, want %q", in, got, want)
		}
	}
	s, err := Listen(":0", NewMetrics(Source{}), &Probes{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.ln.Close()
	addr, ok := s.Addr().(*net.TCPAddr)
	if !ok || !addr.IP.IsLoopback() {
		t.Fatalf("--metrics-addr :0 listens on %v, want loopback only", s.Addr())
	}
}
