package status

import (
	"net/http"
	"strconv"
	"time"

	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// queuedRun is one run of GET /icekeeper/v1/queue.
type queuedRun struct {
	Bucket    string `json:"bucket"`
	BucketARN string `json:"bucketARN"`
	Namespace string `json:"namespace"`
	Table     string `json:"table"`
	// DroppedTableUUID is set for the removal of a dropped table's
	// leftovers: the table that had the name.
	DroppedTableUUID string              `json:"droppedTableUUID,omitempty"`
	Type             maintenance.JobType `json:"type"`
	Due              string              `json:"due"`
	Trigger          string              `json:"trigger"`
	Running          bool                `json:"running"`
	// Reason is why a fire or a freshness check queued it
	// (planner.NeedBudget, the unchanged rule's verdict, jobs.NeedDue),
	// as the queued job carries it; "" for a run queued otherwise.
	Reason string `json:"reason"`
	// EstimatedBytes is what the run is expected to rewrite, when the
	// last run's figures say (null: unknown).
	EstimatedBytes *int64 `json:"estimatedBytes"`
}

// getQueue is GET /icekeeper/v1/queue?limit=N: the runs queued or
// running that the caller may see, in the order they run, and the
// rewrite budgets with their use over the last hour.
func (s *Server) getQueue(w http.ResponseWriter, r *http.Request) error {
	if s.Queue == nil {
		return notFound("this server runs no job queue")
	}
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		var err error
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 10000 {
			return badRequest("limit must be a whole number from 1 to 10000")
		}
	}
	queued, err := s.Queue.Queued(r.Context(), limit)
	if err != nil {
		return err
	}
	out := []queuedRun{}
	for _, q := range queued {
		name, droppedUUID := q.Table.Live()
		b, err := s.bucketByARN(name.Bucket)
		if err != nil || s.authorize(r, b.Name(), q.Table.Namespace) != nil {
			continue // a bucket no longer configured, or not the caller's
		}
		run := queuedRun{Bucket: b.Name(), BucketARN: b.ARN(), Namespace: q.Table.Namespace, Table: q.Table.Name, DroppedTableUUID: droppedUUID,
			Type: q.Type, Due: q.Due.UTC().Format(time.RFC3339Nano), Trigger: q.Trigger, Running: q.Running}
		run.Reason = q.Reason
		if q.Estimate > 0 {
			run.EstimatedBytes = &q.Estimate
		}
		out = append(out, run)
	}
	budgets := []jobs.BudgetUse{}
	if s.Budgets != nil {
		use, err := s.Budgets.Use(r.Context(), time.Now())
		if err != nil {
			return err
		}
		for _, u := range use {
			// The daemon's budget is every bucket's: a key scoped to some
			// buckets sees only theirs.
			if u.Scope == jobs.DaemonScope && s.scoped(r) || u.Scope != jobs.DaemonScope && s.sees(r, u.Scope) != nil {
				continue
			}
			budgets = append(budgets, u)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"queue": out, "budgets": budgets})
	return nil
}
