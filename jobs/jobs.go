// Package jobs owns how maintenance runs: job types and the resolution of
// their settings (API override > config-file bucket default > built-in
// default), and the runner that executes a job on a table and records the
// run in the state store. The scheduler and job queue (River) of the daemon
// build on the same runner.
//
// A job type is one Definition (definition.go): its settings, its run and
// its optional behaviours in one literal, registered with one line. The
// runner does what is common: resolution, disabled handling, the table's
// one load, the unchanged rule, the run record, panics turned into failed
// runs.
package jobs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/cost"
	"github.com/icekeeper/icekeeper/internal/errtext"
	"github.com/icekeeper/icekeeper/internal/redact"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/tables"
)

// Target is the table a job runs on.
type Target struct {
	Bucket *bucket.Bucket
	Table  bucket.TableID
}

// Key is the target's state-store key.
func (t Target) Key() state.TableKey {
	return state.TableKey{Bucket: t.Bucket.ARN(), Namespace: t.Table.NamespaceString(), Name: t.Table.Name}
}

// TriggerCLI is the trigger of the runs of `icekeeper run`.
const TriggerCLI = "cli"

// Options are per-run switches from the CLI or API.
type Options struct {
	DryRun bool
	Now    time.Time // the run's clock; what-if previews set it
	RunID  int64     // the recorded run's ID, set by the Runner (0 for dry runs)
	// Progress, when set, is told how much of a long job is done (for a
	// terminal progress bar); jobs call it as they go.
	Progress func(done, total int)
	// Fanout, when set, lets a job with parts run them on every replica's
	// workers (the daemon sets it; one-shot runs do all the work here).
	Fanout Fanout
	// Loaded, when set, is the table as the caller loaded it just
	// before the run, which the run starts from instead of loading it
	// again (on a REST catalog each load downloads the metadata).
	Loaded *table.Table
	// Prices price the run's cost (nil: cost.DefaultPrices); the Runner
	// sets its own.
	Prices *cost.Prices
	// RewriteBytes, when set, caps the input bytes a compaction run
	// rewrites (its rewrite budget's allowance, Budgets.Allowance): the
	// groups of its plan that fit run, the rest are deferred to the next
	// run; 0 rewrites nothing. Nil: no cap.
	RewriteBytes *int64
	// Coexist, when set, is how the run shares the table with other
	// maintainers; the Runner sets its own.
	Coexist *Coexist
	// FreshSince, when set, is when the run was asked for (a queued run:
	// its fire). Removal's re-check before deleting takes another
	// table's metadata checked at or after it as fresh, so that the
	// deleting runs of one fire check each table of the domain once,
	// not once each (where the catalog cannot list every table's
	// metadata file in one query). Zero: every table is checked by the
	// run itself.
	FreshSince time.Time
}

// prices are the run's prices: its own, else S3 Tables' published ones.
func (o Options) prices() cost.Prices {
	if o.Prices != nil {
		return *o.Prices
	}
	return cost.DefaultPrices()
}

// Outcome is a job's result.
type Outcome struct {
	Status         state.RunStatus
	FailureMessage string
	// Figures is the job's own report (nil when it has none), recorded as
	// the run's metrics and printed by `icekeeper run`.
	Figures Figures
	// Evaluation, when set, is recorded with a successful run for the
	// unchanged rule (Run.Settled, Unchanged.Carried).
	Evaluation *state.Evaluation
	// Rewritten is the input bytes the run rewrote, for the rewrite
	// budgets (Definition.Rewritten).
	Rewritten int64
}

// Figures is a job's report of one run. Its JSON is stored with the run
// and served by the history API, so its fields keep their names. Figures
// embed Common, which the runner fills.
type Figures interface {
	// Counters are what the run did, for the metrics: each key must be
	// one of the job type's Counters in maintenance's type table.
	Counters() map[string]float64
	// Text is the report for a terminal.
	Text() string
	common() *Common
}

// ErrReadOnly is returned for a run asked of a table of a read-only
// bucket.
var ErrReadOnly = errors.New("the bucket is read-only")

// CheckWritable returns ErrReadOnly, saying why, for a read-only bucket.
func CheckWritable(b *bucket.Bucket) error {
	if b.ReadOnly() {
		return fmt.Errorf("%w: %s is declared readOnly; its tables are read for the references of its domain, never maintained", ErrReadOnly, b.Name())
	}
	return nil
}

// ErrNotAvailable marks a job type this build of icekeeper does not have.
var ErrNotAvailable = errors.New("not available in this version of icekeeper")

// Runner runs jobs on tables and records the runs.
type Runner struct {
	Store interface {
		state.History
		SettingsStore
	}
	// Resolver resolves each run's settings; nil: the built-in defaults
	// under the store's overrides.
	Resolver *Resolver
	Jobs     map[maintenance.JobType]Job
	Logger   *slog.Logger
	// Observe, when set, sees every recorded run when it ends (metrics).
	Observe func(state.Run, Outcome)
	// Loaded, when set, sees every table Need loads, with its settings
	// (Metrics.Polled: health gauges from the poll's load).
	Loaded func(t Target, tbl *table.Table, s maintenance.Settings, now time.Time)
	// Prices price each run's cost (nil: cost.DefaultPrices).
	Prices *cost.Prices
	// Coexist is how runs share tables with other maintainers (nil:
	// icekeeper is the only one).
	Coexist *Coexist
	// Freshness, when set, is told each table's lag by Need.
	Freshness *Freshness
	// Dropped, when set, removes a dropped table's leftovers (RunDropped).
	Dropped DroppedRemoval
	// Tables, when set, is the registry of tables, told of every table a
	// run or Need loads before anything kept of it is read: a table
	// dropped and created again under its name starts afresh, a renamed
	// one keeps its state.
	Tables *tables.Registry
	// FullEvery is the unchanged rule's backstop: a run evaluates in full
	// once the last full evaluation is this old, even if nothing changed
	// (0: DefaultFullEvery; negative: the rule is off, every run is full).
	FullEvery time.Duration
	// FinishWithin bounds the attempts to record a run's end (default 1m);
	// FinishRetry is the wait after the first failed one (default 500ms),
	// doubled after each next one up to 10s.
	FinishWithin, FinishRetry time.Duration
}

// FreshTypes are the job types a freshness target applies to: those
// whose definition says what of a table waits (Definition.Oldest).
func (r *Runner) FreshTypes() []maintenance.JobType {
	var out []maintenance.JobType
	for _, typ := range maintenance.JobTypes() {
		if j, ok := r.Jobs[typ]; ok && j.fresh() {
			out = append(out, typ)
		}
	}
	return out
}

// CheckTableConfig checks that typ's job can run on t once override is
// t's table-level configuration of typ (Definition.Settings and
// Definition.Check).
func (r *Runner) CheckTableConfig(ctx context.Context, t Target, typ maintenance.JobType, override maintenance.Config) error {
	job, ok := r.Jobs[typ]
	if !ok {
		return nil
	}
	s, err := r.resolver().WithOverride(ctx, t, typ, override)
	if err != nil {
		return err
	}
	return job.check(ctx, t, s)
}

// resolver is the Runner's Resolver, or one with the built-in defaults
// over the store's overrides.
func (r *Runner) resolver() *Resolver {
	if r.Resolver != nil {
		return r.Resolver
	}
	return &Resolver{Store: r.Store}
}

// Run runs job type typ on t. Dry runs are not recorded. The returned
// error is for failures of icekeeper itself (the state store); a failing
// job is an Outcome with status Failed.
func (r *Runner) Run(ctx context.Context, t Target, typ maintenance.JobType, trigger string, opts Options) (Outcome, error) {
	if err := CheckWritable(t.Bucket); err != nil {
		return Outcome{}, err
	}
	job, ok := r.Jobs[typ]
	if !ok {
		return Outcome{Status: state.Skipped, FailureMessage: fmt.Sprintf("%s is %v", typ, ErrNotAvailable)}, nil
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	if opts.Prices == nil {
		opts.Prices = r.Prices
	}
	if opts.Coexist == nil {
		opts.Coexist = r.Coexist
	}
	if r.Tables != nil && opts.Loaded == nil {
		// A table that cannot be loaded is the job's to report, as it
		// would be without the registry; one the catalog no longer has
		// was dropped since it was queued, and a run recorded under its
		// name would be the next table's of that name.
		switch tbl, err := t.Bucket.LoadTable(ctx, t.Table); {
		case err == nil:
			opts.Loaded = tbl
		case errors.Is(err, bucket.ErrNoSuchTable):
			if err := r.Tables.Gone(ctx, t.Bucket, t.Table); err != nil {
				return Outcome{}, err
			}
			return Outcome{Status: state.Skipped, FailureMessage: fmt.Sprintf("%s is no longer in its catalog: dropped since the run was asked for", t.Key())}, nil
		}
	}
	if opts.Loaded != nil {
		if _, err := r.Tables.Observe(ctx, t.Bucket, t.Table, opts.Loaded); err != nil {
			return Outcome{}, err
		}
	}
	settings, err := r.resolver().Table(ctx, t)
	if err != nil {
		return Outcome{}, fmt.Errorf("resolve %s settings of %s: %w", typ, t.Key(), err)
	}
	run := state.Run{Table: t.Key(), Type: typ, Trigger: trigger, Started: time.Now()}
	if !opts.DryRun {
		if run.ID, err = r.Store.StartRun(ctx, run); err != nil {
			return Outcome{}, err
		}
		opts.RunID = run.ID
	}
	var out Outcome
	if settings.For(typ).Status == maintenance.Disabled {
		out = Outcome{Status: state.Disabled}
	} else {
		out = r.safeRun(ctx, job, t, settings, r.rule(ctx, t, job), opts)
	}
	return r.end(ctx, run, out, opts)
}

// end records run's outcome out (a dry run's is only logged), and tells
// Observe.
func (r *Runner) end(ctx context.Context, run state.Run, out Outcome, opts Options) (Outcome, error) {
	typ := run.Type
	var err error
	run.Finished, run.Status, run.FailureMessage = time.Now(), out.Status, out.FailureMessage
	if out.Status == state.Successful {
		run.Evaluation = out.Evaluation
	}
	if out.Figures != nil {
		if run.Metrics, err = json.Marshal(out.Figures); err != nil {
			return out, fmt.Errorf("encode %s figures: %w", typ, err)
		}
		// Figures may quote a URI with its credentials; mask them in the
		// values, so that object names stay exact and the JSON valid.
		if run.Metrics, err = redact.JSON(run.Metrics); err != nil {
			return out, fmt.Errorf("redact %s figures: %w", typ, err)
		}
	}
	if r.Logger != nil {
		r.Logger.Info("job finished", "table", run.Table.String(), "job", typ, "status", out.Status,
			"failure", out.FailureMessage, "dryRun", opts.DryRun, "duration", run.Finished.Sub(run.Started))
	}
	if !opts.DryRun {
		if err := r.finish(ctx, run); err != nil {
			return out, err
		}
		if r.Observe != nil {
			r.Observe(run, out)
		}
	}
	return out, nil
}

// rule is the unchanged rule's state for a run of job on t, nil where the
// rule does not apply or is off. A store that cannot say what the last
// run saw costs a full evaluation, never a wrong skip.
func (r *Runner) rule(ctx context.Context, t Target, job Job) *ruleState {
	if !job.underRule() || r.FullEvery < 0 {
		return nil
	}
	rule := &ruleState{fullEvery: cmp.Or(r.FullEvery, DefaultFullEvery)}
	last, found, err := r.Store.LastEvaluation(ctx, t.Key(), job.Type())
	if err != nil {
		if r.Logger != nil {
			r.Logger.Warn("last evaluation not read; evaluating in full", "table", t.Key().String(), "job", job.Type(), "err", err)
		}
		return rule
	}
	if found {
		rule.last = &last
	}
	return rule
}

// finish records the end of run, retrying with growing waits: the job's
// work is done (a commit may have landed), and a store that is briefly
// down must not leave the run "Running" forever. It records even when ctx
// was cancelled mid-run, within its own deadline. A run whose end is
// still not recorded is failed later by the engine's sweep.
func (r *Runner) finish(ctx context.Context, run state.Run) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cmp.Or(r.FinishWithin, time.Minute))
	defer cancel()
	wait := cmp.Or(r.FinishRetry, 500*time.Millisecond)
	for attempt := 1; ; attempt++ {
		err := r.Store.FinishRun(ctx, run)
		if err == nil || errors.Is(err, state.ErrNotFound) {
			return err
		}
		if r.Logger != nil {
			r.Logger.Warn("could not record the end of a run", "run", run.ID, "table", run.Table.String(), "job", run.Type,
				"status", run.Status, "attempt", attempt, "err", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("record the end of run %d (%d attempts): %w", run.ID, attempt, err)
		case <-t.C:
		}
		wait = min(2*wait, 10*time.Second)
	}
}

// safeRun turns errors and panics of a job into a Failed outcome: a bug in
// one job must never take the process down.
func (r *Runner) safeRun(ctx context.Context, job Job, t Target, settings maintenance.Settings, rule *ruleState, opts Options) (out Outcome) {
	defer func() {
		if p := recover(); p != nil {
			if r.Logger != nil {
				r.Logger.Error("job panicked", "table", t.Key().String(), "job", job.Type(), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			}
			out = Outcome{Status: state.Failed, FailureMessage: fmt.Sprintf("internal error: %v", p)}
		}
	}()
	out, err := job.run(ctx, t, settings, rule, opts)
	switch {
	case errors.Is(err, ErrOtherMaintainer):
		// Not a failure of the job: it left the table to its other
		// maintainer, and says why.
		out.Status, out.FailureMessage = state.Skipped, errtext.Short(err)
	case err != nil:
		out.Status, out.FailureMessage = state.Failed, errtext.Short(err)
	}
	if out.Status == "" {
		out.Status = state.Successful
	}
	// A failure message is shown by the API and the CLI, and kept: it
	// must not carry a credential an HTTP client quoted from a URI.
	out.FailureMessage = redact.Text(out.FailureMessage)
	return out
}

// ErrRegistry is returned by Register for a set of jobs that does not
// cover maintenance's type table exactly.
var ErrRegistry = errors.New("job registry does not match the job types")

// Register returns the jobs by type, refusing a set that misses a job type
// of maintenance's type table, has one twice, or has one the table does
// not know: a daemon that started with such a set would schedule a type
// nothing runs, or run one the API cannot configure.
func Register(js ...Job) (map[maintenance.JobType]Job, error) {
	out := make(map[maintenance.JobType]Job, len(js))
	for _, j := range js {
		typ := j.Type()
		if _, ok := maintenance.Lookup(typ); !ok {
			return nil, fmt.Errorf("%w: %s is not in the type table", ErrRegistry, typ)
		}
		if _, dup := out[typ]; dup {
			return nil, fmt.Errorf("%w: %s registered twice", ErrRegistry, typ)
		}
		out[typ] = j
	}
	for _, typ := range maintenance.JobTypes() {
		if _, ok := out[typ]; !ok {
			return nil, fmt.Errorf("%w: no job runs %s", ErrRegistry, typ)
		}
	}
	return out, nil
}
