package status

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/orphan"
)

// Scheduler tells when jobs run next; jobs.Scheduler implements it.
type Scheduler interface {
	Next(t jobs.Target, typ maintenance.JobType) time.Time
}

// Routes beyond S3 Tables, under /icekeeper/v1/tables/{arn}/{namespace}/{name}:
//
//	GET  …/runs?type=T&limit=N   run history with each run's figures and summary
//	GET  …/history?days=N        health samples and cost per day (history.go)
//	POST …/runs/{type}           queue a run now
//	GET  …/schedule              the next scheduled start per job type
//	GET  …/noncurrent            noncurrent objects and when they go
//	POST …/restore               {"paths": [...]} or {"all": true}: protect them
//	POST …/release               the same body: end their protection
//
// and GET /icekeeper/v1/queue, the runs queued in their order with the
// rewrite budgets (queue.go), and GET
// /icekeeper/v1/buckets/{arn}/dropped-tables, the tables dropped from the
// bucket with what icekeeper kept of each (dropped.go).
func (s *Server) extraRoutes(api func(string, handlerFunc)) {
	api("GET /icekeeper/v1/queue", s.getQueue)
	api("GET /icekeeper/v1/buckets/{arn}/dropped-tables", s.getDropped)
	const p = "/icekeeper/v1/tables/{arn}/{namespace}/{name}"
	api("GET "+p+"/runs", s.getRuns)
	api("GET "+p+"/history", s.getHistory)
	api("POST "+p+"/runs/{type}", s.triggerRun)
	api("GET "+p+"/schedule", s.getSchedule)
	api("GET "+p+"/noncurrent", s.getNoncurrent)
	api("POST "+p+"/restore", s.protection(func(r *http.Request, t jobs.Target, paths []string) (int, error) {
		return orphan.Restore(r.Context(), s.Store, t.Key(), paths, time.Now())
	}, "restored"))
	api("POST "+p+"/release", s.protection(func(r *http.Request, t jobs.Target, paths []string) (int, error) {
		return orphan.Release(r.Context(), s.Store, t.Key(), paths)
	}, "released"))
}

func (s *Server) getRuns(w http.ResponseWriter, r *http.Request) error {
	t, err := s.target(r)
	if err != nil {
		return err
	}
	limit := 20
	if v := r.URL.Query().Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 1000 {
			return badRequest("limit must be a whole number from 1 to 1000")
		}
	}
	types := maintenance.JobTypes()
	if v := r.URL.Query().Get("type"); v != "" {
		typ, err := maintenance.ParseJobType(v)
		if err != nil {
			return badRequest(err.Error())
		}
		types = []maintenance.JobType{typ}
	}
	out := map[maintenance.JobType][]runJSON{}
	for _, typ := range types {
		runs, err := s.Store.Runs(r.Context(), t.Key(), typ, limit)
		if err != nil {
			return err
		}
		out[typ] = s.withSummaries(typ, runs)
	}
	writeJSON(w, http.StatusOK, map[string]any{"tableARN": tableARN(t), "runs": out})
	return nil
}

func (s *Server) triggerRun(w http.ResponseWriter, r *http.Request) error {
	typ, err := maintenance.ParseJobType(r.PathValue("type"))
	if err != nil {
		return badRequest(err.Error())
	}
	t, err := s.target(r)
	if err != nil {
		return err
	}
	if s.Queue == nil {
		return notFound("this server runs no job queue")
	}
	queued, err := s.Queue.Enqueue(r.Context(), t.Key(), typ, "api", time.Now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"queued": queued, "alreadyQueued": !queued})
	return nil
}

func (s *Server) getSchedule(w http.ResponseWriter, r *http.Request) error {
	t, err := s.target(r)
	if err != nil {
		return err
	}
	if s.Scheduler == nil {
		return notFound("this server runs no scheduler")
	}
	out := map[maintenance.JobType]string{}
	for _, typ := range maintenance.JobTypes() {
		out[typ] = s.Scheduler.Next(t, typ).UTC().Format(time.RFC3339)
	}
	writeJSON(w, http.StatusOK, map[string]any{"tableARN": tableARN(t), "nextRun": out})
	return nil
}

func (s *Server) getNoncurrent(w http.ResponseWriter, r *http.Request) error {
	t, err := s.target(r)
	if err != nil {
		return err
	}
	settings, err := s.resolver().Table(r.Context(), t)
	if err != nil {
		return err
	}
	cfg := settings.For(maintenance.UnreferencedFileRemoval)
	list, err := orphan.ListNoncurrent(r.Context(), s.Store, t.Key(), *cfg.Removal().NonCurrentDays)
	if err != nil {
		return err
	}
	if list == nil {
		list = []orphan.Noncurrent{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tableARN": tableARN(t), "noncurrent": list})
	return nil
}

// protection serves restore and release, which take the same body.
func (s *Server) protection(apply func(*http.Request, jobs.Target, []string) (int, error), key string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		data, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
		if err != nil {
			return badRequest("request body is missing or larger than 64 KiB")
		}
		var req struct {
			Paths []string `json:"paths"`
			All   bool     `json:"all"`
		}
		if err := json.Unmarshal(data, &req); err != nil {
			return badRequest("request body must be {\"paths\": [...]} or {\"all\": true}: " + err.Error())
		}
		if req.All == (len(req.Paths) > 0) {
			return badRequest(`give exactly one of "paths" or "all"`)
		}
		t, err := s.target(r)
		if err != nil {
			return err
		}
		var paths []string
		if !req.All {
			paths = req.Paths
		}
		n, err := apply(r, t, paths)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]any{key: n})
		return nil
	}
}
