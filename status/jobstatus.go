package status

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/icekeeper/icekeeper/internal/cost"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// notYetRun is how a status call spells a job that never ran: the
// maintenance job-status call says Not_Yet_Run, the record-expiration
// job-status call NotYetRun, as S3 Tables does.
type notYetRun string

const (
	maintenanceDialect notYetRun = "Not_Yet_Run"
	recordsDialect     notYetRun = "NotYetRun"
)

// wireStatus is a job type's status as S3 Tables reports it.
type wireStatus struct {
	Status           string `json:"status"`
	LastRunTimestamp string `json:"lastRunTimestamp,omitempty"`
	FailureMessage   string `json:"failureMessage,omitempty"`
	// Cost is what the latest run spent (icekeeper's own field; S3
	// Tables' clients ignore it): nil for runs that recorded none.
	Cost *cost.Figures `json:"cost,omitempty"`
	// Freshness is how far the type's maintenance of the table is
	// behind, as the last check found it (icekeeper's own field; nil for
	// types without one, or a table not checked yet).
	Freshness *jobs.LagView `json:"freshness,omitempty"`
	// costJSON is Cost encoded, when it was cached so (appendJSON); a
	// string keeps wireStatus comparable.
	costJSON string
}

// statusOf is the one mapping from a job type's configuration and its
// latest run (ran false: none) to its wire status, for both job-status
// calls and the dashboard. A disabled type is Disabled whatever ran last.
// Otherwise the latest run decides, and its store never answers with a
// recorded Disabled run, so a type enabled again reports its last real
// run, or that it has not run yet. Skipped, which S3 Tables does not
// know, is Failed with its reason: the job did not do its work.
func statusOf(cfg maintenance.Config, run state.Run, ran bool, d notYetRun) wireStatus {
	if cfg.Status == maintenance.Disabled {
		return wireStatus{Status: string(state.Disabled)}
	}
	if !ran {
		return wireStatus{Status: string(d)}
	}
	w := wireStatus{Status: string(run.Status), LastRunTimestamp: run.Finished.UTC().Format(time.RFC3339)}
	if run.Status != state.Successful {
		w.Status, w.FailureMessage = string(state.Failed), run.FailureMessage
	}
	return w
}

// status is statusOf with the cost the run recorded.
func (s *Server) status(cfg maintenance.Config, run state.Run, ran bool, d notYetRun) wireStatus {
	w := statusOf(cfg, run, ran, d)
	if ran && w.Status != string(state.Disabled) {
		c := s.costs.of(run)
		w.Cost, w.costJSON = c.figures, c.json
	}
	return w
}

// costs remembers the cost each run recorded, decoded and encoded again.
// A run's figures never change once it has finished, and decoding them
// was half of a job-status call's CPU: the cost member sits beside every
// other figure of the run, which the decoder must scan to find it.
type costs struct {
	mu sync.Mutex
	m  map[int64]runCost
}

type runCost struct {
	figures *cost.Figures // nil: the run recorded none
	json    string
}

// maxCosts bounds what costs remembers: a daemon's latest runs (tables
// × types) fit many times over; past it, it starts again.
const maxCosts = 1 << 16

// of is the cost r's figures recorded; figures without one, or with one
// of another shape, give none.
func (c *costs) of(r state.Run) runCost {
	if len(r.Metrics) == 0 {
		return runCost{}
	}
	c.mu.Lock()
	rc, ok := c.m[r.ID]
	c.mu.Unlock()
	if ok {
		return rc
	}
	var figures struct {
		Cost *cost.Figures `json:"cost"`
	}
	if json.Unmarshal(r.Metrics, &figures) == nil && figures.Cost != nil {
		rc.figures = figures.Cost
		enc, _ := json.Marshal(figures.Cost) // numbers and strings: it always encodes
		rc.json = string(enc)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCosts {
		c.m = make(map[int64]runCost)
	}
	c.m[r.ID] = rc
	return rc
}

// freshness is the lag of typ on the table k at now, as the last check
// found it (nil: none known).
func (s *Server) freshness(k state.TableKey, typ maintenance.JobType, now time.Time) *jobs.LagView {
	if s.Freshness == nil {
		return nil
	}
	l, ok := s.Freshness.Lag(k, typ)
	if !ok {
		return nil
	}
	v := l.View(now)
	return &v
}
