package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server serves /metrics, /healthz and /readyz.
type Server struct {
	srv *http.Server
	ln  net.Listener
	log *slog.Logger
}

// Listen opens addr ("127.0.0.1:8080", "0.0.0.0:8080") and returns a
// Server ready to Serve; a bad or busy address is an error now, not later.
// A port alone (":8080") binds to loopback: the metrics and probes are
// served to other hosts only when an address says so, as the Deployment's
// 0.0.0.0:8080 does behind its NetworkPolicy.
func Listen(addr string, m *Metrics, p *Probes, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", LoopbackDefault(addr))
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry(), promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}))
	mux.HandleFunc("/healthz", probe(p.Healthy))
	mux.HandleFunc("/readyz", probe(p.Ready))
	return &Server{
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)},
		ln:  ln,
		log: log,
	}, nil
}

// LoopbackDefault is addr with the loopback host when it names only a
// port (":8080" is "127.0.0.1:8080"); any other address is returned as it
// is.
func LoopbackDefault(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "" {
		return addr
	}
	return net.JoinHostPort("127.0.0.1", port)
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until ctx ends, then shuts down within 5 seconds.
func (s *Server) Serve(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- s.srv.Serve(s.ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(sctx)
	if serr := <-done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}

// probe answers 200 "ok" when check passes, else 503 with its reason.
func probe(check func() error) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := check(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, err)
			return
		}
		fmt.Fprintln(w, "ok")
	}
}
