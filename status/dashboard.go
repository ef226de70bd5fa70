package status

import (
	_ "embed"
	"net/http"
	"time"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/health"
	"github.com/icekeeper/icekeeper/internal/redact"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// The dashboard: one page, embedded, no external resources, reading the
// same routes as everyone else. A browser cannot sign SigV4, so with keys
// configured the page (and its requests) authenticate with HTTP Basic:
// access key ID and secret.
//
// Its script and style are files of their own, so the page's policy
// allows no inline script or style at all.
//
//go:embed ui/index.html
var dashboardHTML []byte

//go:embed ui/app.js
var dashboardJS []byte

//go:embed ui/app.css
var dashboardCSS []byte

// DashboardCSP is the dashboard's Content-Security-Policy: its own
// script, style and API only, never framed.
const DashboardCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func (s *Server) dashboardRoutes(mux *http.ServeMux, api func(string, handlerFunc)) {
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		if s.Auth != nil {
			if _, ok := s.browserKey(w, r); !ok {
				return
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", DashboardCSP)
		_, _ = w.Write(dashboardHTML)
	})
	// The script and style are the open source's: no key needed.
	static := func(body []byte, contentType string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("Content-Security-Policy", DashboardCSP)
			_, _ = w.Write(body)
		}
	}
	mux.HandleFunc("GET /ui/app.js", static(dashboardJS, "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /ui/app.css", static(dashboardCSS, "text/css; charset=utf-8"))
	api("GET /icekeeper/v1/overview", s.overview)
}

type tableOverview struct {
	Bucket    string                              `json:"bucket"`
	BucketARN string                              `json:"bucketARN"`
	Namespace string                              `json:"namespace"`
	Table     string                              `json:"table"`
	Health    *health.Health                      `json:"health,omitempty"`
	Error     string                              `json:"error,omitempty"`
	Jobs      map[maintenance.JobType]jobOverview `json:"jobs"`
}

// jobOverview is a job type's wire status, as the job-status calls give
// it, with the raw status of the latest run beside it (Skipped stays
// Skipped there) and the next scheduled run.
type jobOverview struct {
	Status         string `json:"status"`
	LastRun        string `json:"lastRun,omitempty"`
	LastRunStatus  string `json:"lastRunStatus,omitempty"`
	NextRun        string `json:"nextRun,omitempty"`
	FailureMessage string `json:"failureMessage,omitempty"`
	// Freshness is the type's lag on the table (nil: none known).
	Freshness *jobs.LagView `json:"freshness,omitempty"`
}

// overview lists every table the caller may see with its health and the
// last and next run of each job type, and says whether the caller may
// trigger runs and restore files.
func (s *Server) overview(w http.ResponseWriter, r *http.Request) error {
	var out []tableOverview
	now := time.Now()
	for _, b := range s.Registry.Buckets() {
		if s.sees(r, b.Name()) != nil {
			continue
		}
		ids, err := s.Tables.BucketTables(r.Context(), b)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if s.authorize(r, b.Name(), id.NamespaceString()) != nil {
				continue
			}
			t := jobs.Target{Bucket: b, Table: id}
			o := tableOverview{Bucket: b.Name(), BucketARN: b.ARN(), Namespace: id.NamespaceString(), Table: id.Name, Jobs: map[maintenance.JobType]jobOverview{}}
			settings, err := s.resolver().Table(r.Context(), t)
			if err != nil {
				return err
			}
			last, err := s.Store.LastRuns(r.Context(), t.Key())
			if err != nil {
				return err
			}
			for _, typ := range maintenance.JobTypes() {
				run, ran := last[typ]
				ws := s.status(settings.For(typ), run, ran, maintenanceDialect)
				j := jobOverview{Status: ws.Status, LastRun: ws.LastRunTimestamp, FailureMessage: ws.FailureMessage,
					Freshness: s.freshness(t.Key(), typ, now)}
				if ran {
					j.LastRunStatus = string(run.Status)
				}
				if s.Scheduler != nil {
					j.NextRun = s.Scheduler.Next(t, typ).UTC().Format(time.RFC3339)
				}
				o.Jobs[typ] = j
			}
			// One table that cannot be read must not hide the others.
			if h, err := s.History.Health(r.Context(), t, settings, now, &s.health); err != nil {
				o.Error = redact.Text(err.Error())
			} else {
				o.Health = &h
			}
			out = append(out, o)
		}
	}
	if out == nil {
		out = []tableOverview{}
	}
	// The tables dropped in the last month, with what they left.
	var dropped []droppedJSON
	for _, b := range s.Registry.Buckets() {
		if s.sees(r, b.Name()) != nil {
			continue
		}
		d, err := s.dropped(r, b, now.Add(-droppedKeep))
		if err != nil {
			return err
		}
		for i := range d {
			d[i].Bucket = b.Name()
		}
		dropped = append(dropped, d...)
	}
	if dropped == nil {
		dropped = []droppedJSON{}
	}
	key, signed := r.Context().Value(callerKey{}).(configs.APIKey)
	// The page builds its columns from jobTypes: a job type added to
	// maintenance's table shows without a change to the page.
	writeJSON(w, http.StatusOK, map[string]any{"tables": out, "dropped": dropped, "canWrite": !signed || !key.ReadOnly, "jobTypes": maintenance.JobTypes()})
	return nil
}
