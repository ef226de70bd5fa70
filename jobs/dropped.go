package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/errtext"
	"github.com/icekeeper/icekeeper/internal/redact"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/maintenance"
)

// DroppedRemoval removes the leftovers of a dropped table (orphan's
// RunDropped): the one job that runs on a table no catalog lists any
// more. A run that finds the table is not a dropped table's leftovers
// any more returns an error wrapping ErrNotLeftover.
type DroppedRemoval func(ctx context.Context, b *bucket.Bucket, rec state.TableRecord, s maintenance.Settings, opts Options) (Figures, error)

// ErrNotLeftover is what DroppedRemoval wraps for a table that is live
// again, or whose files lie in a live table's location: its run is
// Skipped with the reason.
var ErrNotLeftover = errors.New("not a dropped table's leftovers")

// RunDropped runs unreferenced file removal on the leftovers of rec, a
// table of b the registry recorded dropped, with b's settings, and
// records the run under rec's dropped key, beside the dropped table's
// other runs. It runs only where the bucket's removeDroppedTables is on
// (a dry run: anywhere) and removal is enabled; otherwise the outcome is
// Disabled, unrecorded.
func (r *Runner) RunDropped(ctx context.Context, b *bucket.Bucket, rec state.TableRecord, trigger string, opts Options) (Outcome, error) {
	typ := maintenance.UnreferencedFileRemoval
	if err := CheckWritable(b); err != nil {
		return Outcome{}, err
	}
	if r.Dropped == nil {
		return Outcome{Status: state.Skipped, FailureMessage: "removal of dropped tables' leftovers is " + ErrNotAvailable.Error()}, nil
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	settings, err := r.resolver().with(ctx, b.ARN(), nil)
	if err != nil {
		return Outcome{}, fmt.Errorf("resolve the settings of bucket %s: %w", b.Name(), err)
	}
	if settings.For(typ).Status == maintenance.Disabled || !settings.Knobs.RemoveDroppedTables && !opts.DryRun {
		return Outcome{Status: state.Disabled, FailureMessage: "removeDroppedTables is off on bucket " + b.Name()}, nil
	}
	run := state.Run{Table: rec.StateKey(), Type: typ, Trigger: trigger, Started: time.Now()}
	if !opts.DryRun {
		if run.ID, err = r.Store.StartRun(ctx, run); err != nil {
			return Outcome{}, err
		}
		opts.RunID = run.ID
	}
	fig, err := r.Dropped(ctx, b, rec, settings, opts)
	out := Outcome{Status: state.Successful, Figures: fig}
	switch {
	case errors.Is(err, ErrNotLeftover):
		out.Status, out.FailureMessage = state.Skipped, errtext.Short(err)
	case err != nil:
		out.Status, out.FailureMessage = state.Failed, redact.Text(errtext.Short(err))
	}
	return r.end(ctx, run, out, opts)
}

// DroppedTables returns the dropped keys of the tables the registry
// (store) recorded dropped from every bucket of reg, read-only ones
// aside, whose settings (r) turn removeDroppedTables and removal on:
// what a fire of removal queues beside the live tables (Scheduler.Dropped).
func DroppedTables(ctx context.Context, reg *bucket.Registry, r *Resolver, store state.Tables) ([]state.TableKey, error) {
	var out []state.TableKey
	for _, b := range reg.Buckets() {
		if b.ReadOnly() {
			continue
		}
		s, err := r.with(ctx, b.ARN(), nil)
		if err != nil {
			return nil, fmt.Errorf("resolve the settings of bucket %s: %w", b.Name(), err)
		}
		if !s.Knobs.RemoveDroppedTables || s.For(maintenance.UnreferencedFileRemoval).Status == maintenance.Disabled {
			continue
		}
		recs, err := store.DroppedTables(ctx, b.ARN(), time.Time{})
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			if rec.Collected.IsZero() {
				out = append(out, rec.StateKey())
			}
		}
	}
	return out, nil
}
