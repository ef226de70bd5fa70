// Package status is icekeeper's HTTP API: the S3 Tables maintenance routes
// (wire-compatible, so the AWS SDK and CLI work against it), listing of
// buckets, namespaces and tables, health endpoints and Prometheus metrics.
// Requests are verified with SigV4 when access keys are configured.
package status

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/health"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/jobs"
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
	Registry  *bucket.Registry
	Store     state.Store
	Runner    *jobs.Runner // checks settings before they are stored
	Scheduler Scheduler    // nil: no schedule to report
	Queue     *jobs.Engine // queues runs asked for; nil: none can be
	// Budgets are the rewrite budgets GET /icekeeper/v1/queue shows; nil:
	// none.
	Budgets *jobs.Budgets
	// RiverUI is River's web UI, served under /river/; nil: not served.
	RiverUI http.Handler
	// Tables answers which tables there are; nil: a Discovery of its own,
	// which lists each bucket on first use.
	Tables *jobs.Discovery
	Auth   *Auth // nil: unauthenticated
	// AllowedHosts are the Host names, besides loopback ones, requests
	// may be addressed to while Auth is nil (api.allowedHosts).
	AllowedHosts []string
	// Resolver resolves settings; nil: the built-in defaults under the
	// store's overrides.
	Resolver *jobs.Resolver
	Metrics  *prometheus.Registry
	// MetricsToken, when set, is the bearer token /metrics requires.
	MetricsToken string
	Logger       *slog.Logger
	// History records the health the dashboard's overview computes, for
	// its charts; nil: a history of its own on Store.
	History *jobs.HealthHistory
	// Freshness is each table's lag, which the job status and the
	// dashboard show; nil: none is known.
	Freshness *jobs.Freshness
	// Events receives the event route's events; nil: the route answers
	// that events are not configured.
	Events EventSink
	// EventTokens are the bearer tokens webhooks may send to the event
	// route (events.tokens).
	EventTokens []string

	started time.Time
	costs   costs
	// snapshotLogs spares the history route a table load at every
	// refresh of an open table page.
	snapshotLogs snapshotLogs
	// health spares the dashboard the manifests of unchanged tables.
	health health.Cache
}

type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (s *Server) resolver() *jobs.Resolver {
	if s.Resolver != nil {
		return s.Resolver
	}
	return &jobs.Resolver{Store: s.Store}
}

// Handler returns the API's routes.
func (s *Server) Handler() http.Handler {
	if s.started.IsZero() {
		s.started = time.Now().UTC().Truncate(time.Second)
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	if s.Tables == nil {
		s.Tables = &jobs.Discovery{Registry: s.Registry, Logger: s.Logger}
	}
	if s.Auth != nil && s.Auth.Logger == nil {
		s.Auth.Logger = s.Logger
	}
	if s.History == nil {
		s.History = &jobs.HealthHistory{Store: s.Store, Logger: s.Logger}
	}
	mux := http.NewServeMux()
	api := func(pattern string, h handlerFunc) { mux.Handle(pattern, s.api(h)) }
	api("GET /tables/{arn}/{namespace}/{name}/maintenance-job-status", s.getJobStatus)
	api("GET /tables/{arn}/{namespace}/{name}/maintenance", s.getTableConfig)
	api("PUT /tables/{arn}/{namespace}/{name}/maintenance/{type}", s.putTableConfig)
	api("GET /buckets/{arn}/maintenance", s.getBucketConfig)
	api("PUT /buckets/{arn}/maintenance/{type}", s.putBucketConfig)
	api("GET /buckets", s.listBuckets)
	api("GET /namespaces/{arn}", s.listNamespaces)
	api("GET /tables/{arn}", s.listTables)
	s.readRoutes(api)
	s.recordRoutes(api)
	s.unsupportedRoutes(api)
	s.extraRoutes(api)
	s.dashboardRoutes(mux, api)
	s.riverRoutes(mux)
	mux.Handle(EventsPath, s.events()) // any method: others get 405 with Allow

	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		// Ready when the state store answers.
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.Store.Ping(ctx); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "state store unavailable"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	if s.Metrics != nil {
		metrics := promhttp.HandlerFor(s.Metrics, promhttp.HandlerOpts{})
		mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
			if s.MetricsToken != "" {
				got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
				if subtle.ConstantTimeCompare([]byte(got), []byte(s.MetricsToken)) != 1 {
					w.Header().Set("WWW-Authenticate", `Bearer realm="icekeeper metrics"`)
					writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "GET /metrics needs the bearer token of api.metricsAuth"})
					return
				}
			}
			metrics.ServeHTTP(w, r)
		})
	}
	api("/", func(w http.ResponseWriter, r *http.Request) error {
		return notFound(fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path))
	})
	return s.guard(mux)
}

// api wraps a handler with authentication, error mapping and panic
// recovery: a bad request never takes the daemon down.
func (s *Server) api(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				s.Logger.Error("API handler panicked", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p))
				writeError(w, &apiError{status: http.StatusInternalServerError, kind: "InternalServerErrorException", msg: "internal error"})
			}
		}()
		if s.Auth != nil {
			key, err := s.Auth.authenticate(r)
			if err != nil {
				writeError(w, classify(err))
				return
			}
			r = r.WithContext(context.WithValue(r.Context(), callerKey{}, key))
			if err := writable(r); err != nil {
				writeError(w, classify(err))
				return
			}
		}
		if err := h(w, r); err != nil {
			e := classify(err)
			if e.status >= 500 {
				s.Logger.Error("API request failed", "method", r.Method, "path", r.URL.Path, "err", err)
			}
			writeError(w, e)
		}
	})
}

// Serve listens on addr until ctx is cancelled, then shuts down within
// grace. ready, when not nil, receives the bound address.
func (s *Server) Serve(ctx context.Context, addr string, grace time.Duration, ready chan<- net.Addr) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute}
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
