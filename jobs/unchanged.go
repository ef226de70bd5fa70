package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
	"github.com/icekeeper/icekeeper/tables"
)

// DefaultFullEvery is how old the last full evaluation of a table may be
// before a run evaluates in full again even though nothing changed: the
// unchanged rule's backstop (planner.Unchanged).
const DefaultFullEvery = 24 * time.Hour

// Unchanged is the unchanged rule's part of one run of a type under the
// rule: what the last full evaluation saw, and this run's settings
// identity. A nil *Unchanged is a run without the rule: every check says
// evaluate in full, and nothing is recorded.
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

// Carried is what a run that skipped records: the evaluation it rested
// on, so that the backstop counts from the last full one.
func (u *Unchanged) Carried() *state.Evaluation {
	if u == nil || u.Last == nil {
		return nil
	}
	ev := *u.Last
	return &ev
}

// Need is the cheap look a scheduler takes at t before queueing typ on
// it at now: for a type under the unchanged rule, the verdict a run at now
// would reach (the same function decides both), from one load of the
// table's metadata and the rule's state as the run would build it; every
// other type needs a run, without any read.
// LastSuccess is the end of the latest run when it succeeded, else the
// last full evaluation (zero: neither). A table the rule would skip still
// needs a run (planner.NeedHeartbeat) once its last success is half the
// backstop old. Deferred and Estimate come from the last successful
// run's figures (Definition.Pending). An error is a table whose run
// must say what went wrong.
func (r *Runner) Need(ctx context.Context, t Target, typ maintenance.JobType, now time.Time) (planner.Need, error) {
	need, changed, err := r.need(ctx, t, typ, now)
	if changed {
		// The load found the name holding another table than the one
		// whose runs were read: read them again, now the new table's.
		need, _, err = r.need(ctx, t, typ, now)
	}
	return need, err
}

// need is Need, and whether the registry found the table under t's name
// changed.
func (r *Runner) need(ctx context.Context, t Target, typ maintenance.JobType, now time.Time) (planner.Need, bool, error) {
	var need planner.Need
	job, known := r.Jobs[typ]
	// A store that cannot say when the last run was costs only the
	// table's place in the order, never its run.
	if runs, err := r.Store.LastRuns(ctx, t.Key()); err == nil {
		if last, ok := runs[typ]; ok && last.Status == state.Successful {
			need.LastSuccess = last.Finished
			if known {
				need.Deferred, need.Estimate = job.pending(last.Metrics)
				need.Due = job.due(last.Metrics)
			}
		}
	}
	if !known {
		return need, false, nil
	}
	settings, err := r.resolver().Table(ctx, t)
	if err != nil {
		return need, false, fmt.Errorf("resolve %s settings of %s: %w", typ, t.Key(), err)
	}
	rule := r.rule(ctx, t, job)
	if rule == nil && !job.fresh() {
		return need, false, nil
	}
	tbl, err := t.Bucket.LoadTable(ctx, t.Table)
	if errors.Is(err, bucket.ErrNoSuchTable) {
		// Dropped since the listing (a drop event's check, a poll).
		if gerr := r.Tables.Gone(ctx, t.Bucket, t.Table); gerr != nil {
			return need, false, errors.Join(err, gerr)
		}
	}
	if err != nil {
		return need, false, err
	}
	if ch, err := r.Tables.Observe(ctx, t.Bucket, t.Table, tbl); err != nil {
		return need, false, err
	} else if ch != tables.Known && ch != tables.New {
		return need, true, nil
	}
	if r.Loaded != nil {
		r.Loaded(t, tbl, settings, now)
	}
	if rule != nil {
		v, err := job.verdict(tbl, settings, *rule, now)
		if err != nil {
			return need, false, err
		}
		need.Rule, need.Skip = v.Rule, v.Skip
		if need.LastSuccess.IsZero() && rule.last != nil {
			need.LastSuccess = rule.last.At
		}
		// Alerts on the age of the last success (24 h, the default backstop)
		// must not fire on a table left alone because nothing changed.
		if need.Skip && now.Sub(need.LastSuccess) >= rule.fullEvery/2 {
			need.Rule, need.Skip = planner.NeedHeartbeat, false
		}
	}
	if job.fresh() {
		r.freshness(ctx, t, job, tbl, settings, now, &need)
	}
	return need, false, nil
}

// freshness adds to need what the type's oldest work not taken and its
// recent runs say: the deadline the table's freshness target sets, and
// the back-off of a table whose commits keep losing. It records the lag
// in Freshness. A store that cannot list the runs costs the lag its
// reason and base (every snapshot counts as work), never the run.
func (r *Runner) freshness(ctx context.Context, t Target, job Job, tbl *table.Table, settings maintenance.Settings, now time.Time, need *planner.Need) {
	var rec recent
	if runs, err := r.Store.Runs(ctx, t.Key(), job.Type(), historyLen); err == nil {
		rec = readRecent(job, runs)
	}
	meta := tbl.Metadata()
	target, err := planner.FreshnessTarget(meta.Properties(), time.Duration(settings.Knobs.FreshnessTargetSeconds)*time.Second)
	lag := Lag{Target: target, Waits: rec.waits, Checked: now}
	if err != nil {
		lag.Waits = "configuration: " + err.Error()
	}
	need.Target = target
	if o, ok, err := job.oldest(meta, settings, rec.base, now); err == nil && ok {
		lag.Oldest = &o
		if due := o.Since.Add(target); target > 0 && (need.Due.IsZero() || due.Before(need.Due)) {
			need.Due = due
		}
	}
	if until := rec.backoffUntil(); now.Before(until) {
		lag.Waits = fmt.Sprintf("backoff: %d runs in a row lost every commit to concurrent ones; next try after %s",
			rec.conflicts, until.UTC().Format(time.RFC3339))
		need.Rule, need.Skip = NeedBackoff, true
	}
	if r.Freshness != nil {
		r.Freshness.Set(t.Key(), tbl.Location(), job.Type(), lag)
	}
}
