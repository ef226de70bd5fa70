package status

import (
	"encoding/json"
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
	w := wireStatus{Status: string(run.Status), LastRunTimestamp: run.Finished.UTC().Format(time.RFC3339), Cost: costOf(run.Metrics)}
	if run.Status != state.Successful {
		w.Status, w.FailureMessage = string(state.Failed), run.FailureMessage
	}
	return w
}

// costOf reads the cost a run's figures recorded; figures without one, or
// with one of another shape, give nil.
func costOf(figures json.RawMessage) *cost.Figures {
	var f struct {
		Cost *cost.Figures `json:"cost"`
	}
	if len(figures) == 0 || json.Unmarshal(figures, &f) != nil {
		return nil
	}
	return f.Cost
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
