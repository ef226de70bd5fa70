package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/cost"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// Definition is one job type, whole: everything the runner, the
// scheduler's poll, the engine and the configuration checks do for the
// type is read from here. S is the type's own settings, translated once
// per run from the table's resolved ones; F is its figures.
//
// The runner owns the skeleton of every run: the settings translated
// once, the table loaded once (Run.Load), the unchanged verdict (one
// function, which the scheduler's poll uses too), the skip recorded, and
// the figures every type shares (Common) filled. Run does the type's own
// work and nothing of that.
type Definition[S any, F Figures] struct {
	Name maintenance.JobType
	// Settings translates a table's resolved settings into the type's.
	// An error (wrapping maintenance.ErrInvalid) names what the run cannot
	// go without: the run fails with it, and a configuration that enables
	// the type without it is refused when it is written.
	Settings func(maintenance.Settings) (S, error)
	// Figures are the figures a run of s starts with; a run that stops
	// before its work (a skip, a failed load) records them as they are.
	Figures func(s S, opts Options) F
	// Run does one run. An error fails it; its message becomes the run's
	// failure message.
	Run func(ctx context.Context, r *Run[S], fig F) error

	// The behaviours below are optional: nil leaves each out.

	// Check refuses, when it is written, a configuration that enables
	// the type on a table it cannot run on, with an error wrapping
	// maintenance.ErrInvalid that says why.
	Check func(tbl *table.Table, s S) error
	// Unchanged puts the type under the unchanged rule: its decision
	// depends only on the table's metadata, S, thresholds of the clock it
	// can name (Run.Settled), and the rule's knobs.
	Unchanged *Rule[S]
	// Pending reads a successful run's recorded figures, for the
	// scheduler's need order: the bytes the run deferred for its rewrite
	// budget (0: none), and the bytes the next run is expected to rewrite
	// (0: unknown). Figures it cannot read are zeros.
	Pending func(figures json.RawMessage) (deferred, estimate int64)
	// Due reads a successful run's recorded figures for the need order:
	// when the oldest work the run left must be done (zero: none). A
	// table with a deadline is queued ahead of those without, the
	// nearest first.
	Due func(figures json.RawMessage) time.Time
	// RunPart does one part of a run that fanned its parts out
	// (Options.Fanout) and returns its output for the coordinator. It may
	// run on any replica, more than once, and must leave nothing behind
	// when it fails. A part is JSON that River keeps; on PostgreSQL its
	// numbers come back as float64 (53 bits), so a part carries large
	// integers as strings.
	RunPart func(ctx context.Context, t Target, part json.RawMessage) (json.RawMessage, error)
	// Rewritten puts the type's runs under the rewrite budgets (Budgets):
	// it is the input bytes a run rewrote, which the budgets count.
	Rewritten func(F) int64
	// Processed is the data a run read to rewrite it, for the run's cost
	// (cost.Figures' processed objects and bytes, and what S3 Tables
	// would charge for them).
	Processed func(F) cost.Work
	// Oldest is the oldest work the type has not taken on the table, for
	// its freshness target (planner.Oldest): base is the table as the
	// latest successful run that left nothing for later found it (nil:
	// none). ok false: nothing waits.
	Oldest func(meta table.Metadata, s S, base *planner.Base, now time.Time) (o planner.Oldest, ok bool, err error)
	// Summary is what a run did in one line, in the words its Text uses
	// ("234 files -> 21 files"), for the runs route and the dashboard,
	// which show it before the figures. It is given the figures of runs
	// the unchanged rule did not skip (RunSummary says those skipped);
	// duration and cost are added by RunSummary, the same for every type.
	Summary func(F) string
}

// Rule is a type's part in the unchanged rule (planner.Unchanged).
type Rule[S any] struct {
	// Knobs is what, besides S, steers the type's decision: the
	// executor's own process-level knobs. It is hashed with S into the
	// settings identity, so JSON must encode it whole.
	Knobs any
	// Idle, when set, tells from the table's metadata alone, its current
	// snapshot's summary totals, that a table changed since its last full
	// evaluation has nothing to do (planner.RuleSummary, where
	// Unchanged.SummaryMay): the run reads no manifest, and the
	// need-ordered fire does not queue it.
	Idle func(meta table.Metadata, s S) (reason string, ok bool)
}

// Run is one run of a type with settings S, as the runner hands it to the
// type's Run.
type Run[S any] struct {
	Target
	Settings S
	Options

	tbl *table.Table
	u   *Unchanged
	// settled is the evaluation the run recorded with Settled.
	settled *state.Evaluation
}

// Load returns the table as the run found it: loaded once, by whichever of
// the runner and the type asks first. A type loads it again itself only
// after a commit of its own.
func (r *Run[S]) Load(ctx context.Context) (*table.Table, error) {
	if r.tbl != nil {
		return r.tbl, nil
	}
	tbl, err := r.Bucket.LoadTable(ctx, r.Table)
	if err != nil {
		return nil, err
	}
	r.tbl = tbl
	return tbl, nil
}

// Settled records that the run evaluated tbl in full and found nothing to
// do on it: a later run on the same metadata file and settings may skip,
// until validUntil, when the clock alone may change the decision (zero:
// never). It does nothing for a type outside the unchanged rule, or in a
// dry run.
func (r *Run[S]) Settled(tbl *table.Table, validUntil time.Time) {
	if r.u == nil || r.DryRun {
		return
	}
	r.settled = &state.Evaluation{RunID: r.RunID, At: r.Now, SnapshotID: planner.CurrentSnapshotID(tbl.Metadata()),
		MetadataLocation: tbl.MetadataLocation(), SettingsHash: r.u.SettingsHash, ValidUntil: validUntil}
}

// Common are the figures every job type reports, filled by the runner.
// A type's figures embed it, so their JSON keeps these names.
type Common struct {
	DryRun bool `json:"dryRun,omitempty"`
	// Unchanged is the unchanged rule's verdict (nil: the type is outside
	// the rule, or the rule is off).
	Unchanged *planner.UnchangedVerdict `json:"unchanged,omitempty"`
	// DurationMs is the run's time, from the settings' translation to the
	// type's return.
	DurationMs int64 `json:"durationMs"`
	// Cost is what the run spent: requests, bytes, processed data, and
	// their price.
	Cost *cost.Figures `json:"cost,omitempty"`
	// Base is the table as the run found it: what a successful run took,
	// for the freshness of the next (Definition.Oldest).
	Base *planner.Base `json:"base,omitempty"`
}

func (c *Common) common() *Common { return c }

// RunCost is the cost a run's figures recorded (nil: none, as for a type
// that records no figures).
func RunCost(f Figures) *cost.Figures {
	if f == nil {
		return nil
	}
	return f.common().Cost
}

// Job is a job type as the runner drives it: a *Definition of any
// settings and figures. Only Definition implements it.
type Job interface {
	// Type is the job type the definition defines.
	Type() maintenance.JobType
	// Summarize is what a run did, in one line, from its recorded
	// figures (Definition.Summary); "" when the type has no summary or
	// the figures cannot be read.
	Summarize(figures json.RawMessage) string

	run(ctx context.Context, t Target, all maintenance.Settings, rule *ruleState, opts Options) (Outcome, error)
	verdict(tbl *table.Table, all maintenance.Settings, rule ruleState, now time.Time) (planner.UnchangedVerdict, error)
	check(ctx context.Context, t Target, all maintenance.Settings) error
	underRule() bool
	pending(figures json.RawMessage) (deferred, estimate int64)
	due(figures json.RawMessage) time.Time
	runPart(ctx context.Context, t Target, part json.RawMessage) (json.RawMessage, error)
	budgeted() bool
	oldest(meta table.Metadata, all maintenance.Settings, base *planner.Base, now time.Time) (planner.Oldest, bool, error)
	fresh() bool
}

// ruleState is the unchanged rule's state before a run, as the store has
// it: the last full evaluation (nil: none) and the backstop.
type ruleState struct {
	last      *state.Evaluation
	fullEvery time.Duration
}

// errNoParts is a part of a type that has none: a part queued by another
// version of icekeeper.
var errNoParts = errors.New("has no parts")

// Type implements Job.
func (d *Definition[S, F]) Type() maintenance.JobType { return d.Name }

// unchanged is the rule's part of a run with s.
func (d *Definition[S, F]) unchanged(s S, rule ruleState) (*Unchanged, error) {
	hash, err := planner.SettingsHash(d.Name, s, d.Unchanged.Knobs)
	if err != nil {
		return nil, fmt.Errorf("settings identity of %s: %w", d.Name, err)
	}
	return &Unchanged{Last: rule.last, SettingsHash: hash, FullEvery: rule.fullEvery}, nil
}

// judge is the unchanged verdict on tbl for a run with s at now: the one
// place it is decided, for runs and for the scheduler's poll alike. The
// summary totals stand in for this evaluation, not for the last full one:
// a skip on them carries that one on, so the backstop still counts from
// it.
func (d *Definition[S, F]) judge(u *Unchanged, tbl *table.Table, s S, now time.Time) planner.UnchangedVerdict {
	v := u.Check(planner.CurrentSnapshotID(tbl.Metadata()), tbl.MetadataLocation(), now)
	if d.Unchanged.Idle != nil && u.SummaryMay(v, now) {
		if reason, idle := d.Unchanged.Idle(tbl.Metadata(), s); idle {
			v = planner.UnchangedVerdict{Skip: true, Rule: planner.RuleSummary, Reason: reason, SinceRun: v.SinceRun}
		}
	}
	return v
}

func (d *Definition[S, F]) verdict(tbl *table.Table, all maintenance.Settings, rule ruleState, now time.Time) (planner.UnchangedVerdict, error) {
	s, err := d.Settings(all)
	if err != nil {
		return planner.UnchangedVerdict{}, err
	}
	u, err := d.unchanged(s, rule)
	if err != nil {
		return planner.UnchangedVerdict{}, err
	}
	return d.judge(u, tbl, s, now), nil
}

// run is the skeleton of every run; rule is nil where the unchanged rule
// is off.
func (d *Definition[S, F]) run(ctx context.Context, t Target, all maintenance.Settings, rule *ruleState, opts Options) (Outcome, error) {
	begin := time.Now()
	s, err := d.Settings(all)
	if err != nil {
		return Outcome{}, err
	}
	fig := d.Figures(s, opts)
	c := fig.common()
	c.DryRun = opts.DryRun
	// The meter counts every request made with ctx, and the table IO the
	// run builds from it shares one metered HTTP client.
	meter := &cost.Meter{}
	ctx = cost.With(t.Bucket.WithTableIO(ctx), meter)
	defer func() {
		c.DurationMs = time.Since(begin).Milliseconds()
		var w cost.Work
		if d.Processed != nil {
			w = d.Processed(fig)
		}
		figures := meter.Figures(opts.prices(), w)
		c.Cost = &figures
	}()
	out := Outcome{Figures: fig}
	r := &Run[S]{Target: t, Settings: s, Options: opts, tbl: opts.Loaded}
	if d.Unchanged != nil && rule != nil {
		if r.u, err = d.unchanged(s, *rule); err != nil {
			return out, err
		}
		tbl, err := r.Load(ctx)
		if err != nil {
			return out, err
		}
		c.Base = planner.BaseOf(tbl.Metadata())
		v := d.judge(r.u, tbl, s, opts.Now)
		c.Unchanged = &v
		// A dry run never skips: it shows the verdict and still
		// evaluates, so that its plan stays visible.
		if v.Skip && !opts.DryRun {
			out.Evaluation = r.u.Carried()
			return out, nil
		}
	}
	if !opts.DryRun && opts.Coexist != nil {
		work, release, err := d.coexist(ctx, r)
		if err != nil {
			return out, err
		}
		defer release()
		ctx = work
	}
	err = d.Run(ctx, r, fig)
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, ErrOtherMaintainer) {
		err = cause // the lock was lost: say so, not "context canceled"
	}
	if c.Base == nil && r.tbl != nil {
		c.Base = planner.BaseOf(r.tbl.Metadata())
	}
	out.Evaluation = r.settled
	if d.Rewritten != nil {
		out.Rewritten = d.Rewritten(fig)
	}
	return out, err
}

// coexist applies the coexistence rules before a run's work: a rewriting
// type steps aside for another maintainer's recent rewrite, and every
// type holds the table's Flink maintenance lock, where one is
// configured, until release.
func (d *Definition[S, F]) coexist(ctx context.Context, r *Run[S]) (work context.Context, release func(), err error) {
	c := r.Coexist
	if d.budgeted() && c.StepAside != nil {
		tbl, err := r.Load(ctx)
		if err != nil {
			return nil, nil, err
		}
		if err := c.stepAside(r.Target, tbl, r.Now); err != nil {
			return nil, nil, err
		}
	}
	var lock *FlinkLock
	if c.Lock != nil {
		lock = c.Lock(r.Target)
	}
	if lock == nil {
		return ctx, func() {}, nil
	}
	return lock.Acquire(ctx, r.Target)
}

func (d *Definition[S, F]) oldest(meta table.Metadata, all maintenance.Settings, base *planner.Base, now time.Time) (planner.Oldest, bool, error) {
	if d.Oldest == nil {
		return planner.Oldest{}, false, nil
	}
	s, err := d.Settings(all)
	if err != nil {
		return planner.Oldest{}, false, err
	}
	return d.Oldest(meta, s, base, now)
}

func (d *Definition[S, F]) fresh() bool { return d.Oldest != nil }

func (d *Definition[S, F]) check(ctx context.Context, t Target, all maintenance.Settings) error {
	if all.For(d.Name).Status != maintenance.Enabled {
		return nil // checked again by the change that enables it
	}
	s, err := d.Settings(all)
	if err != nil || d.Check == nil {
		return err
	}
	tbl, err := t.Bucket.LoadTable(ctx, t.Table)
	if err != nil {
		return err
	}
	return d.Check(tbl, s)
}

func (d *Definition[S, F]) underRule() bool { return d.Unchanged != nil }

func (d *Definition[S, F]) pending(figures json.RawMessage) (int64, int64) {
	if d.Pending == nil {
		return 0, 0
	}
	return d.Pending(figures)
}

func (d *Definition[S, F]) due(figures json.RawMessage) time.Time {
	if d.Due == nil {
		return time.Time{}
	}
	return d.Due(figures)
}

func (d *Definition[S, F]) runPart(ctx context.Context, t Target, part json.RawMessage) (json.RawMessage, error) {
	if d.RunPart == nil {
		return nil, fmt.Errorf("%s %w", d.Name, errNoParts)
	}
	return d.RunPart(ctx, t, part)
}

func (d *Definition[S, F]) budgeted() bool { return d.Rewritten != nil }

// Summarize implements Job: the recorded figures decoded into F, a run
// the unchanged rule skipped said so in the rule's words, the others
// handed to Summary.
func (d *Definition[S, F]) Summarize(figures json.RawMessage) string {
	if len(figures) == 0 {
		return ""
	}
	fig, err := decodeFigures[F](figures)
	if err != nil {
		return "" // figures of another version, or none: no summary rather than a wrong one
	}
	if v := fig.common().Unchanged; v != nil && v.Skip && !fig.common().DryRun {
		return "skipped: " + v.Reason // "unchanged since run 12 (…)"
	}
	if d.Summary == nil {
		return ""
	}
	return d.Summary(fig)
}

// decodeFigures decodes recorded figures into a new F. Figures are
// pointers to structs (their methods have pointer receivers), so F's zero
// value is nil and the struct it points to is made first. A cost of
// another shape (one recorded by another version) is left out rather
// than costing the summary: what a run did does not depend on it, and
// RunSummary reads the cost loosely on its own.
func decodeFigures[F Figures](raw json.RawMessage) (F, error) {
	decode := func(raw []byte) (F, error) {
		var fig F
		if t := reflect.TypeFor[F](); t.Kind() == reflect.Pointer {
			fig = reflect.New(t.Elem()).Interface().(F)
			return fig, json.Unmarshal(raw, fig)
		}
		return fig, json.Unmarshal(raw, &fig)
	}
	fig, err := decode(raw)
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && (typeErr.Field == "Common.cost" || strings.HasPrefix(typeErr.Field, "Common.cost.")) {
		var fields map[string]json.RawMessage
		if json.Unmarshal(raw, &fields) == nil {
			delete(fields, "cost")
			if without, merr := json.Marshal(fields); merr == nil {
				fig, err = decode(without)
			}
		}
	}
	if err != nil {
		return fig, fmt.Errorf("decode figures: %w", err)
	}
	return fig, nil
}

// Map returns jobs by type, without Register's check that they cover the
// type table (for tests and benchmarks that run one type).
func Map(js ...Job) map[maintenance.JobType]Job {
	out := make(map[maintenance.JobType]Job, len(js))
	for _, j := range js {
		out[j.Type()] = j
	}
	return out
}
