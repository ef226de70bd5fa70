// Package status is icekeeper's HTTP API: health endpoints and, as the API
// grows, the S3 Tables maintenance routes, run history and metrics.
package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/icekeeper/icekeeper/internal/state"
)

// ErrNotLoopback is returned when the API would listen beyond this machine
// while no API credentials are configured.
var ErrNotLoopback = errors.New("refusing to serve the API on a non-loopback address without configured access keys")

// CheckListen rejects a listen address that is reachable from other
// machines when the API has no authentication.
func CheckListen(addr string, authConfigured bool) error {
	if authConfigured {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%w: %s", ErrNotLoopback, addr)
	}
	return nil
}

// Server serves the API.
type Server struct {
	Store    state.Store
	Registry *prometheus.Registry
	Logger   *slog.Logger
}

// Handler returns the API's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		// Ready when the state store answers.
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if _, err := s.Store.BucketConfig(ctx, ""); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "state store unavailable", "error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	if s.Registry != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.Registry, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amzn-ErrorType", "NotFoundException")
		writeJSON(w, http.StatusNotFound, map[string]string{"message": fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path)})
	})
	return mux
}

// Serve listens on addr until ctx is cancelled, then shuts down within
// grace. ready, when not nil, receives the bound address.
func (s *Server) Serve(ctx context.Context, addr string, grace time.Duration, ready chan<- net.Addr) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	if ready != nil {
		ready <- ln.Addr()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shut down API: %w", err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
