package status

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/health"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// historyDays is how far back GET …/history reaches at most and by
// default: the health history keeps as much (state.HealthKeep).
const historyDays = int(state.HealthKeep / (24 * time.Hour))

// sampleJSON is a health sample as the history route serves it: what the
// dashboard charts, not the whole health, so that a month of a busy
// table stays small enough to fetch at every refresh.
type sampleJSON struct {
	At          time.Time `json:"at"`
	DataFiles   int       `json:"dataFiles"`
	SmallFiles  int       `json:"smallFiles"`
	DeleteFiles int       `json:"deleteFiles"`
	TotalBytes  int64     `json:"totalBytes"`
	Snapshots   int       `json:"snapshots"`
	Score       float64   `json:"score"`
	// Clustering is the clustering score, apart from Score; absent for a
	// table without a sort order.
	Clustering *float64 `json:"clustering,omitempty"`
}

// dayCost is what a table's runs cost on one UTC day.
type dayCost struct {
	Day         string  `json:"day"` // 2006-01-02, UTC
	Runs        int     `json:"runs"`
	USD         float64 `json:"usd"`
	S3TablesUSD float64 `json:"s3TablesUSD"`
}

// getHistory is GET …/history?days=N (1 to 30, default 30): the table's
// health samples of the last N days, oldest first, and what its runs cost
// per UTC day over the last N days (today's included) with the total.
// The costs are the figures' cost.usd and cost.s3TablesUSD; runs
// recorded without a cost add nothing. snapshotLog is the same window as
// the table's own snapshot summaries tell it (one metadata read), so that
// a first visit has a month to show before the daemon's samples exist;
// a table that cannot be loaded leaves it out with snapshotLogError and
// the samples still served.
func (s *Server) getHistory(w http.ResponseWriter, r *http.Request) error {
	t, err := s.target(r)
	if err != nil {
		return err
	}
	days := historyDays
	if v := r.URL.Query().Get("days"); v != "" {
		if days, err = strconv.Atoi(v); err != nil || days < 1 || days > historyDays {
			return badRequest("days must be a whole number from 1 to " + strconv.Itoa(historyDays))
		}
	}
	now := time.Now().UTC()
	since := now.Add(-time.Duration(days) * 24 * time.Hour)
	stored, err := s.Store.HealthSamples(r.Context(), t.Key(), since)
	if err != nil {
		return err
	}
	samples := make([]sampleJSON, 0, len(stored))
	for _, st := range stored {
		var h health.Health
		if json.Unmarshal(st.Health, &h) != nil {
			continue // a row of another version: a point missing, not a page failing
		}
		sample := sampleJSON{At: st.At, DataFiles: h.DataFiles, SmallFiles: h.SmallFiles, DeleteFiles: h.DeleteFiles,
			TotalBytes: h.TotalBytes, Snapshots: h.Snapshots, Score: h.Score.Total}
		if h.Clustering != nil {
			sample.Clustering = &h.Clustering.Score
		}
		samples = append(samples, sample)
	}
	firstDay := now.Truncate(24*time.Hour).AddDate(0, 0, 1-days)
	sums, err := s.Store.DailySums(r.Context(), t.Key(), firstDay, "cost.usd", "cost.s3TablesUSD")
	if err != nil {
		return err
	}
	perDay := make([]dayCost, 0, len(sums))
	total := dayCost{}
	for _, d := range sums {
		perDay = append(perDay, dayCost{Day: d.Day.Format(time.DateOnly), Runs: d.Runs, USD: d.Sums[0], S3TablesUSD: d.Sums[1]})
		total.Runs += d.Runs
		total.USD += d.Sums[0]
		total.S3TablesUSD += d.Sums[1]
	}
	out := map[string]any{"tableARN": tableARN(t), "days": days, "samples": samples,
		"costPerDay": perDay, "cost": map[string]any{"since": firstDay.Format(time.DateOnly), "runs": total.Runs, "usd": total.USD, "s3TablesUSD": total.S3TablesUSD}}
	log, err := s.snapshotLogs.since(t.Key(), since, now, func() (table.Metadata, error) {
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		tbl, err := t.Bucket.LoadTable(ctx, t.Table)
		if err != nil {
			return nil, err
		}
		return tbl.Metadata(), nil
	})
	if err != nil {
		out["snapshotLogError"] = "load table for its snapshot log: " + err.Error()
	} else {
		out["snapshotLog"] = log
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// runJSON is a run as the runs route serves it: the record, and what it
// did in one line (jobs.RunSummary), the same words `icekeeper` prints.
type runJSON struct {
	state.Run
	Summary string `json:"summary"`
}

// withSummaries gives each run of type typ its summary.
func (s *Server) withSummaries(typ maintenance.JobType, runs []state.Run) []runJSON {
	var job jobs.Job
	if s.Runner != nil {
		job = s.Runner.Jobs[typ]
	}
	out := make([]runJSON, len(runs))
	for i, r := range runs {
		out[i] = runJSON{Run: r, Summary: jobs.RunSummary(job, r)}
	}
	return out
}
