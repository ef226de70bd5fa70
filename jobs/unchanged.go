package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// DefaultFullEvery is how old the last full evaluation of a table may be
// before a run evaluates in full again even though nothing changed: the
// unchanged rule's backstop (planner.Unchanged).
const DefaultFullEvery = 24 * time.Hour

// Evaluator is implemented by the job types the unchanged rule applies to:
// those whose decision depends only on the table's metadata, their
// settings and thresholds of the clock they can name.
type Evaluator interface {
	// Identity is what, besides its resolved maintenance.Config, steers
	// the job's decision: the bucket knobs it reads and its own
	// process-level knobs. It is hashed into the settings identity.
	Identity(s maintenance.Settings) any
}

// Unchanged is the unchanged rule's part of one run, handed to an
// Evaluator's Run by the Runner: what the last full evaluation saw, and
// this run's settings identity. A nil *Unchanged is a run without the
// rule: every check says evaluate in full, and nothing is recorded.
type Unchanged struct {
	// Last is the evaluation the latest successful run recorded (nil:
	// none).
	Last         *state.Evaluation
	SettingsHash string
	// FullEvery is the backstop (planner.Unchanged).
	FullEvery time.Duration
}

// Check is the rule's verdict on the table, whose current snapshot is
// snapshotID (-1: none) in the metadata file at loc, at now. It reads
// nothing: the caller has loaded the table's metadata, which is all the
// rule looks at.
func (u *Unchanged) Check(snapshotID int64, loc string, now time.Time) planner.UnchangedVerdict {
	if u == nil {
		return planner.Unchanged(nil, planner.Seen{}, now, 0)
	}
	var last *planner.Evaluation
	if u.Last != nil {
		last = &planner.Evaluation{RunID: u.Last.RunID, At: u.Last.At, ValidUntil: u.Last.ValidUntil,
			Seen: planner.Seen{SnapshotID: u.Last.SnapshotID, MetadataLocation: u.Last.MetadataLocation, SettingsHash: u.Last.SettingsHash}}
	}
	return planner.Unchanged(last, planner.Seen{SnapshotID: snapshotID, MetadataLocation: loc, SettingsHash: u.SettingsHash}, now, u.FullEvery)
}

// SummaryMay reports whether the summary totals may stand in for the full
// evaluation that v, a verdict at now, calls for (planner.SummaryApplies).
func (u *Unchanged) SummaryMay(v planner.UnchangedVerdict, now time.Time) bool {
	return u != nil && u.Last != nil && planner.SummaryApplies(v.Rule, now.Sub(u.Last.At), u.FullEvery)
}

// Verdict is the rule's verdict for a run with o on the table whose
// current snapshot is snapshotID in the metadata file at loc (nil
// without the rule), and whether the run skips: a dry run never does, it
// shows the verdict and still evaluates, so that its plan stays visible.
// A run that skips records Unchanged.Carried.
func (o Options) Verdict(snapshotID int64, loc string) (*planner.UnchangedVerdict, bool) {
	if o.Unchanged == nil {
		return nil, false
	}
	v := o.Unchanged.Check(snapshotID, loc, o.Now)
	return &v, v.Skip && !o.DryRun
}

// Evaluated is what a run that evaluated the table in full, and left
// nothing to do on it, records: a later run may rest on it. validUntil
// is when the clock alone may change the decision (zero: never). It is
// nil without the rule.
func (u *Unchanged) Evaluated(runID, snapshotID int64, loc string, now, validUntil time.Time) *state.Evaluation {
	if u == nil {
		return nil
	}
	return &state.Evaluation{RunID: runID, At: now, SnapshotID: snapshotID, MetadataLocation: loc,
		SettingsHash: u.SettingsHash, ValidUntil: validUntil}
}

// Carried is what a run that skipped records: the evaluation it rested
// on, so that the backstop counts from the last full one.
func (u *Unchanged) Carried() *state.Evaluation {
	if u == nil || u.Last == nil {
		return nil
	}
	ev := *u.Last
	return &ev
}

// Estimator is implemented by job types whose recorded figures tell how
// much work a run left on its table.
type Estimator interface {
	// Pending reads a successful run's recorded figures: the bytes it
	// deferred for its rewrite budget (0: none), and the bytes the next
	// run is expected to rewrite (0: unknown). Figures it cannot read
	// are zeros.
	Pending(figures json.RawMessage) (deferred, estimate int64)
}

// Idler is implemented by job types that can tell from a table's metadata
// alone, its current snapshot's summary totals, that a run on a table
// changed since its last full evaluation has nothing to do
// (planner.RuleSummary, where Unchanged.SummaryMay): the run reads no
// manifest, and the need-ordered fire does not queue it.
type Idler interface {
	Idle(meta table.Metadata, s maintenance.Settings) (reason string, ok bool)
}

// Need is the cheap look a scheduler takes at t before queueing typ on
// it at now: for an Evaluator, the verdict a run at now would reach, from
// one load of the table's metadata and the unchanged rule's state as the
// run would build it; every other type needs a run, without any read.
// LastSuccess is the end of the latest run when it succeeded, else the
// last full evaluation (zero: neither). A table the rule would skip still
// needs a run (planner.NeedHeartbeat) once its last success is half the
// backstop old. Deferred and Estimate come from the last successful
// run's figures, for an Estimator. An error is a table whose run
// must say what went wrong.
func (r *Runner) Need(ctx context.Context, t Target, typ maintenance.JobType, now time.Time) (planner.Need, error) {
	var need planner.Need
	job, known := r.Jobs[typ]
	// A store that cannot say when the last run was costs only the
	// table's place in the order, never its run.
	if runs, err := r.Store.LastRuns(ctx, t.Key()); err == nil {
		if last, ok := runs[typ]; ok && last.Status == state.Successful {
			need.LastSuccess = last.Finished
			if est, ok := job.(Estimator); ok && known {
				need.Deferred, need.Estimate = est.Pending(last.Metrics)
			}
		}
	}
	if !known {
		return need, nil
	}
	settings, err := r.resolver().Table(ctx, t)
	if err != nil {
		return need, fmt.Errorf("resolve %s settings of %s: %w", typ, t.Key(), err)
	}
	u, err := r.unchanged(ctx, t, job, settings)
	if err != nil || u == nil {
		return need, err
	}
	tbl, err := t.Bucket.LoadTable(ctx, t.Table)
	if err != nil {
		return need, err
	}
	if r.Loaded != nil {
		r.Loaded(t, tbl, settings, now)
	}
	v := u.Check(planner.CurrentSnapshotID(tbl.Metadata()), tbl.MetadataLocation(), now)
	need.Rule, need.Skip = v.Rule, v.Skip
	if idler, ok := job.(Idler); ok && u.SummaryMay(v, now) {
		if _, idle := idler.Idle(tbl.Metadata(), settings); idle {
			need.Rule, need.Skip = planner.RuleSummary, true
		}
	}
	if need.LastSuccess.IsZero() && u.Last != nil {
		need.LastSuccess = u.Last.At
	}
	// Alerts on the age of the last success (24 h, the default backstop)
	// must not fire on a table left alone because nothing changed.
	if need.Skip && now.Sub(need.LastSuccess) >= u.FullEvery/2 {
		need.Rule, need.Skip = planner.NeedHeartbeat, false
	}
	return need, nil
}
