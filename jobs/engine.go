package jobs

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/maintenance"
)

// RunArgs is a queued run of one job type on one table: a River job. Its
// table and type make it unique while it waits or runs, so missed
// schedules and repeated API calls collapse into one pending run.
type RunArgs struct {
	Bucket    string              `json:"bucket" river:"unique"`
	Namespace string              `json:"namespace" river:"unique"`
	Name      string              `json:"name" river:"unique"`
	Type      maintenance.JobType `json:"type" river:"unique"`
	Trigger   string              `json:"trigger"`
	// Reason and Estimate are why a need-ordered fire or a freshness
	// check queued the run (Pending). They travel with the job, in the
	// queue every replica reads, so that any replica tells them; they
	// are not part of the run's uniqueness.
	Reason   string `json:"reason,omitempty"`
	Estimate int64  `json:"estimatedBytes,omitempty"`
}

// Kind names the job in River's tables.
func (RunArgs) Kind() string { return "icekeeper.run" }

// pendingStates are the states in which a run collapses a second one: all
// but the finished ones (River requires these four; retryable is a run
// waiting for its next attempt).
var pendingStates = []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
	rivertype.JobStateRetryable, rivertype.JobStateRunning, rivertype.JobStateScheduled}

// InsertOpts makes runs unique per table and type while pending.
func (RunArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: pendingStates}}
}

// Key is the run's table.
func (a RunArgs) Key() state.TableKey {
	return state.TableKey{Bucket: a.Bucket, Namespace: a.Namespace, Name: a.Name}
}

// EngineStore is what the engine uses of the state store.
type EngineStore interface {
	state.Queue
	state.Leases
	state.History
	state.Tables
}

// Engine is the daemon's job queue and its workers, on River
// (github.com/riverqueue/river) over the state store's database: River
// keeps runs unique per table and type, schedules them, hands each to one
// worker, retries on errors and stops gracefully. icekeeper adds two
// things River does not have:
//
//   - One job per table at a time, across job types and replicas: a lease
//     row per table, renewed while the job runs. A job that finds its
//     table's lease held is snoozed for a second.
//   - Takeover within a lease's life: River rescues a job whose worker died
//     only once it has run longer than a fixed horizon, which must be at
//     least the job timeout (an hour). The engine instead rescues, through
//     River's own rescue operation, a running job whose table lease has
//     expired on two sweeps in a row, so a dead replica's job runs again
//     about a lease TTL after the replica stopped renewing it.
type Engine struct {
	Store    EngineStore
	Registry *bucket.Registry
	// Runner runs the jobs; nil makes an engine that only queues (the API
	// of a process that runs no workers, tests).
	Runner *Runner
	// Holder names this replica in River and in leases; unique per process.
	Holder string
	// Parallelism bounds concurrent jobs (default 2).
	Parallelism int
	// FanOutParts is the fewest parts with which a run of a job that has
	// parts (Definition.RunPart: compaction's rewrite groups) fans them
	// out to every replica's workers; 0 never does.
	FanOutParts int
	// PartParallelism bounds the parts of fanned-out runs this replica
	// works on at once (default 2), besides its jobs.
	PartParallelism int
	// JobTimeout bounds one job (default 1h).
	JobTimeout time.Duration
	// LeaseTTL is how long a table lease lives without renewal (default
	// 1m); it is renewed every third of it while the job runs.
	LeaseTTL time.Duration
	// Poll is how often an idle worker looks for due jobs (default 1s).
	Poll   time.Duration
	Logger *slog.Logger
	// OnTakeover, when set, is called when a job whose worker died runs
	// again.
	OnTakeover func(RunArgs)
	// Budgets, when set, bound the rewrites of the job types they apply
	// to (Definition.Rewritten): a job takes a concurrency slot of its
	// bucket and of the daemon, or is snoozed for SlotWait, and runs with
	// its bytes allowance.
	Budgets *Budgets
	// SlotWait is how long a job that found no free rewrite slot waits
	// before it tries again (default 5s).
	SlotWait time.Duration

	client   *river.Client[*sql.Tx]
	driver   riverdriver.Driver[*sql.Tx]
	suspects map[int64]suspect // running jobs without a live lease on the last sweep, by ID
	// now is the clock leases, sweeps and budgets are kept by (time.Now;
	// tests shift it, so that a lease lapses by the clock they set, not
	// by how busy the machine is).
	now func() time.Time
	// sweepEvery is how often Run sweeps (half the lease TTL), and
	// rescueAfter how long a job must have been found without a lease,
	// by the wall clock, before it is rescued (as long: two sweeps in a
	// row). A job that just finished releases its lease a moment before
	// River records it complete; tests shorten both.
	sweepEvery, rescueAfter time.Duration
	// partRetry is the wait before a failed part's second attempt, twice
	// it before the third, and so on (1s; tests shorten it).
	partRetry time.Duration
}

// Init builds the River client; Run starts it. An engine without a
// Runner only queues, and needs no Run.
func (e *Engine) Init() error {
	e.Parallelism = cmp.Or(max(e.Parallelism, 0), 2)
	e.PartParallelism = cmp.Or(max(e.PartParallelism, 0), 2)
	e.JobTimeout = cmp.Or(max(e.JobTimeout, 0), time.Hour)
	e.LeaseTTL = cmp.Or(max(e.LeaseTTL, 0), time.Minute)
	e.Poll = cmp.Or(max(e.Poll, 0), time.Second)
	e.SlotWait = cmp.Or(max(e.SlotWait, 0), 5*time.Second)
	e.partRetry = cmp.Or(e.partRetry, time.Second)
	e.sweepEvery = cmp.Or(e.sweepEvery, e.LeaseTTL/2)
	e.rescueAfter = cmp.Or(e.rescueAfter, e.LeaseTTL/2)
	if e.now == nil {
		e.now = time.Now
	}
	if e.Logger == nil {
		e.Logger = slog.New(slog.DiscardHandler)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &runWorker{e: e})
	river.AddWorker(workers, &partWorker{e: e})
	cfg := &river.Config{
		ID:                cmp.Or(e.Holder, "icekeeper"),
		Workers:           workers,
		PollOnly:          true, // neither driver here listens for notifications
		FetchPollInterval: e.Poll,
		FetchCooldown:     min(e.Poll, 100*time.Millisecond),
		// The engine times jobs itself, so that a run that overran is
		// recorded as such; River's rescue is the backstop for jobs the
		// lease sweep misses.
		JobTimeout:           -1,
		RescueStuckJobsAfter: e.JobTimeout + e.LeaseTTL,
		// River's own records below warnings (client started, leader
		// elected, …) are not the operator's business.
		Logger: slog.New(warnings{e.Logger.Handler()}).With("component", "river"),
	}
	if e.Runner != nil {
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: e.Parallelism}, partsQueue: {MaxWorkers: e.PartParallelism}}
	}
	e.driver = e.Store.Engine()
	c, err := river.NewClient(e.driver, cfg)
	if err != nil {
		return fmt.Errorf("job engine: %w", err)
	}
	e.client, e.suspects = c, map[int64]suspect{}
	return nil
}

// Enqueue queues typ on the table k, due at at, unless a run of it is
// already pending (then it returns false).
func (e *Engine) Enqueue(ctx context.Context, k state.TableKey, typ maintenance.JobType, trigger string, at time.Time) (bool, error) {
	n, err := e.EnqueueMany(ctx, []state.TableKey{k}, typ, trigger, func(state.TableKey) Placement { return Placement{At: at} })
	return n == 1, err
}

// Placement is when a queued run is due, and why it was queued.
type Placement struct {
	At time.Time
	Pending
}

// EnqueueMany queues typ on every table, each placed by place, and
// returns how many were not pending already or are now due sooner. A
// table whose run is pending keeps that run, its due time and its reason,
// unless the run waits for a later time than this placement's (a
// freshness target lowered and the daemon restarted, a schedule's fire
// before a freshness run queued for later): then the run is queued again
// at the sooner time, for this placement's reason. A run that has started
// is left alone.
func (e *Engine) EnqueueMany(ctx context.Context, keys []state.TableKey, typ maintenance.JobType, trigger string, place func(state.TableKey) Placement) (int, error) {
	const batch = 500
	queued := 0
	for len(keys) > 0 {
		n := min(len(keys), batch)
		params := make([]river.InsertManyParams, 0, n)
		slot := make(map[state.TableKey]int, n) // a table's index in params
		for _, k := range keys[:n] {
			p := place(k)
			args := RunArgs{Bucket: k.Bucket, Namespace: k.Namespace, Name: k.Name, Type: typ, Trigger: trigger, Reason: p.Reason, Estimate: p.Estimate}
			slot[k] = len(params)
			params = append(params, river.InsertManyParams{Args: args, InsertOpts: &river.InsertOpts{ScheduledAt: p.At}})
		}
		res, err := e.client.InsertMany(ctx, params)
		if err != nil {
			return queued, fmt.Errorf("queue %s on %d tables: %w", typ, n, err)
		}
		var sooner []river.InsertManyParams
		for _, r := range res {
			if !r.UniqueSkippedAsDuplicate {
				queued++
				continue
			}
			if p, ok := e.later(ctx, r.Job, params, slot); ok {
				sooner = append(sooner, p)
			}
		}
		if len(sooner) > 0 {
			res, err := e.client.InsertMany(ctx, sooner)
			if err != nil {
				return queued, fmt.Errorf("queue %s sooner on %d tables: %w", typ, len(sooner), err)
			}
			for _, r := range res {
				if !r.UniqueSkippedAsDuplicate {
					queued++
				}
			}
		}
		keys = keys[n:]
	}
	return queued, nil
}

// soonerBy is how much sooner a placement must be than a pending run's
// due time to queue that run again: jitter and clocks move placements by
// less, and each move costs the queue a delete and an insert.
const soonerBy = time.Second

// later reports whether the pending run j waits for a later time than
// its table's placement in params (at index slot[table]) and has been taken out
// of the queue, so that the placement can be inserted in its stead.
func (e *Engine) later(ctx context.Context, j *rivertype.JobRow, params []river.InsertManyParams, slot map[state.TableKey]int) (river.InsertManyParams, bool) {
	if j == nil || j.State != rivertype.JobStateScheduled {
		return river.InsertManyParams{}, false
	}
	var a RunArgs
	if json.Unmarshal(j.EncodedArgs, &a) != nil {
		return river.InsertManyParams{}, false
	}
	i, ok := slot[a.Key()]
	if !ok || !j.ScheduledAt.After(params[i].InsertOpts.ScheduledAt.Add(soonerBy)) {
		return river.InsertManyParams{}, false
	}
	// Gone already (started, finished or moved by another replica): the
	// insert finds out which.
	if _, err := e.client.JobDelete(ctx, j.ID); err != nil && !errors.Is(err, rivertype.ErrNotFound) {
		if !errors.Is(err, rivertype.ErrJobRunning) {
			e.Logger.Warn("a pending run not queued sooner", "table", a.Key().String(), "job", a.Type, "err", err)
		}
		return river.InsertManyParams{}, false
	}
	e.Logger.Debug("pending run queued sooner", "table", a.Key().String(), "job", a.Type, "from", j.ScheduledAt, "to", params[i].InsertOpts.ScheduledAt)
	return params[i], true
}

// runDropped runs removal on the leftovers of the dropped table uuid,
// once named name: nothing when the registry no longer records it
// dropped there (it came back, or its record is gone).
func (e *Engine) runDropped(ctx context.Context, b *bucket.Bucket, name state.TableKey, uuid, trigger string, opts Options) (Outcome, error) {
	recs, err := e.Store.TablesWithUUID(ctx, name.Bucket, uuid)
	if err != nil {
		return Outcome{}, err
	}
	for _, rec := range recs {
		if !rec.Live() && rec.Key == name {
			return e.Runner.RunDropped(ctx, b, rec, trigger, opts)
		}
	}
	return Outcome{Status: state.Skipped, FailureMessage: fmt.Sprintf("table %s (%s) is not recorded dropped", name, uuid)}, nil
}

// Client is the River client, for River's UI.
func (e *Engine) Client() *river.Client[*sql.Tx] { return e.client }

// Run works until stop is done, then takes no new jobs and waits for the
// running ones; those are cancelled when hard is done, and go back to the
// queue. A cancelled job never leaves a half-done commit: catalog commits
// are atomic.
func (e *Engine) Run(stop, hard context.Context) error {
	if err := e.client.Start(context.WithoutCancel(hard)); err != nil {
		return fmt.Errorf("start the job engine: %w", err)
	}
	var sweeper sync.WaitGroup
	sweepCtx, endSweep := context.WithCancel(hard)
	// Runs left Running by a process that stopped before this one
	// started, or whose end could not be recorded, fail at once.
	if _, err := e.SweepRuns(sweepCtx); err != nil {
		e.Logger.Warn("sweep for runs whose outcome was not recorded", "err", err)
	}
	sweeper.Go(func() {
		t := time.NewTicker(e.sweepEvery)
		defer t.Stop()
		for {
			select {
			case <-sweepCtx.Done():
				return
			case <-t.C:
			}
			if err := e.Sweep(sweepCtx); err != nil && sweepCtx.Err() == nil {
				e.Logger.Warn("sweep for jobs of stopped workers", "err", err)
			}
			if _, err := e.SweepRuns(sweepCtx); err != nil && sweepCtx.Err() == nil {
				e.Logger.Warn("sweep for runs whose outcome was not recorded", "err", err)
			}
		}
	})
	<-stop.Done()
	endSweep()
	sweeper.Wait()
	stopped := make(chan error, 1)
	go func() { stopped <- e.client.Stop(context.WithoutCancel(hard)) }()
	select {
	case err := <-stopped:
		return err
	case <-hard.Done():
		return e.client.StopAndCancel(context.WithoutCancel(hard))
	}
}

// Sweep rescues the running jobs whose worker stopped: their lease (a
// run's table lease, a part's own) has lapsed, on this sweep and on every
// sweep for rescueAfter before it (a job that just finished releases its
// lease a moment before River records it complete), and they started more
// than a lease TTL ago.
func (e *Engine) Sweep(ctx context.Context) error {
	res, err := e.client.JobList(ctx, river.NewJobListParams().Kinds(RunArgs{}.Kind(), PartArgs{}.Kind()).States(rivertype.JobStateRunning).First(10000))
	if err != nil {
		return err
	}
	now := e.now()
	horizon := now.Add(-e.LeaseTTL)
	suspects := map[int64]suspect{}
	rescue := riverdriver.JobRescueManyParams{StuckHorizon: horizon}
	for _, j := range res.Jobs {
		if j.AttemptedAt == nil || j.AttemptedAt.After(horizon) {
			continue
		}
		lease := partLease(j.ID)
		if j.Kind == (RunArgs{}).Kind() {
			var a RunArgs
			if err := json.Unmarshal(j.EncodedArgs, &a); err != nil {
				continue
			}
			lease = leaseName(a.Key())
		}
		holder, err := e.Store.LeaseHolder(ctx, lease, now)
		if err != nil {
			return err
		}
		if holder != "" {
			continue
		}
		seen, ok := e.suspects[j.ID]
		if !ok || seen.attempt != j.Attempt {
			seen = suspect{attempt: j.Attempt, since: time.Now()}
		}
		suspects[j.ID] = seen
		if time.Since(seen.since) < e.rescueAfter {
			continue
		}
		msg, _ := json.Marshal(rivertype.AttemptError{At: now, Attempt: j.Attempt, Error: "the worker running this job stopped renewing its lease"})
		rescue.ID = append(rescue.ID, j.ID)
		rescue.Error = append(rescue.Error, msg)
		rescue.FinalizedAt = append(rescue.FinalizedAt, nil)
		// River schedules by the wall clock: available at once.
		rescue.ScheduledAt = append(rescue.ScheduledAt, time.Now())
		rescue.State = append(rescue.State, string(rivertype.JobStateAvailable))
		delete(suspects, j.ID)
	}
	e.suspects = suspects
	if len(rescue.ID) == 0 {
		return nil
	}
	if _, err := e.driver.GetExecutor().JobRescueMany(ctx, &rescue); err != nil {
		return fmt.Errorf("rescue %d jobs: %w", len(rescue.ID), err)
	}
	e.Logger.Warn("rescued jobs whose worker stopped", "jobs", len(rescue.ID))
	return nil
}

// suspect is a running job found without a live lease: its attempt, and
// since when (wall clock).
type suspect struct {
	attempt int
	since   time.Time
}

// OutcomeNotRecorded is the failure message of a run whose end was never
// recorded: its worker finished or died while the state store was down.
const OutcomeNotRecorded = "outcome not recorded"

// SweepRuns fails, with OutcomeNotRecorded, the runs recorded as Running
// that no worker is on any more, and returns how many. A run is abandoned
// when all of these hold:
//
//   - the daemon ran it: a one-shot `icekeeper run` (TriggerCLI) takes
//     no lease, so nothing tells a live one from a dead one, and its rows
//     are left alone;
//   - it started more than a lease TTL ago;
//   - its table's lease is free: a daemon worker records a run's start and
//     end (retries included) while it holds and renews the table lease,
//     so a run whose worker is alive, on any replica, has a held lease;
//   - no River job of its table and type is running, available,
//     retryable or scheduled within a lease TTL (queued to run now, or
//     snoozed): a job whose worker died is rescued by Sweep, and its next
//     attempt fails the run itself with a message that says so.
//
// A worker cut off from the store for longer than the lease TTL may still
// be running when its run is failed here; when it records its end, the
// real outcome replaces the failure.
func (e *Engine) SweepRuns(ctx context.Context) (int, error) {
	now := e.now()
	runs, err := e.Store.RunningRuns(ctx, now.Add(-e.LeaseTTL))
	if err != nil || len(runs) == 0 {
		return 0, err
	}
	res, err := e.client.JobList(ctx, river.NewJobListParams().Kinds(RunArgs{}.Kind()).
		States(rivertype.JobStateRunning, rivertype.JobStateAvailable, rivertype.JobStateRetryable, rivertype.JobStateScheduled).First(10000))
	if err != nil {
		return 0, fmt.Errorf("list jobs: %w", err)
	}
	type tableJob struct {
		k   state.TableKey
		typ maintenance.JobType
	}
	queued := map[tableJob]bool{}
	for _, j := range res.Jobs {
		if j.State == rivertype.JobStateScheduled && j.ScheduledAt.After(now.Add(e.LeaseTTL)) {
			continue // tomorrow's run does not vouch for today's
		}
		var a RunArgs
		if json.Unmarshal(j.EncodedArgs, &a) == nil {
			queued[tableJob{a.Key(), a.Type}] = true
		}
	}
	failed := 0
	for _, r := range runs {
		if r.Trigger == TriggerCLI || queued[tableJob{r.Table, r.Type}] {
			continue
		}
		holder, err := e.Store.LeaseHolder(ctx, leaseName(r.Table), now)
		if err != nil {
			return failed, err
		}
		if holder != "" {
			continue
		}
		ok, err := e.Store.FailRun(ctx, r, OutcomeNotRecorded, now)
		if err != nil {
			return failed, err
		}
		if ok {
			failed++
			e.Logger.Warn("failed a run whose outcome was not recorded", "run", r.ID, "table", r.Table.String(), "job", r.Type, "started", r.Started)
		}
	}
	return failed, nil
}

func leaseName(k state.TableKey) string { return "table:" + k.String() }

type runWorker struct {
	river.WorkerDefaults[RunArgs]
	e *Engine
}

func (w *runWorker) Work(ctx context.Context, job *river.Job[RunArgs]) error {
	e, a := w.e, job.Args
	k := a.Key()
	log := e.Logger.With("table", k.String(), "job", a.Type, "queued", job.ID)
	name, droppedUUID := k.Live()
	b, err := e.Registry.Bucket(name.Bucket)
	if err != nil {
		log.Warn("dropping a job of a bucket no longer configured", "err", err)
		return nil
	}
	// The holder names this attempt, not just this replica: two jobs of
	// one table on one replica must not share the lease, nor an attempt
	// the one before it.
	lease, holder := leaseName(k), fmt.Sprintf("%s/%d/%d", e.Holder, job.ID, job.Attempt)
	ok, err := e.Store.AcquireLease(ctx, lease, holder, e.now(), e.LeaseTTL)
	if err != nil {
		return fmt.Errorf("take the lease of %s: %w", k, err)
	}
	if !ok {
		// Another job of this table runs, here or on another replica.
		return river.JobSnooze(time.Second)
	}
	defer e.Store.ReleaseLease(context.WithoutCancel(ctx), lease, holder)
	if job.Attempt > 1 {
		// An earlier attempt was rescued: its worker died, and the run it
		// recorded as Running never finished.
		n, _ := e.Store.FailRunning(ctx, k, a.Type, "the worker running this job stopped before it finished; the job was run again", e.now())
		log.Warn("took over a job whose worker stopped", "attempt", job.Attempt, "abandonedRuns", n)
		if e.OnTakeover != nil {
			e.OnTakeover(a)
		}
	}

	leases := []string{lease}
	// Queued since CreatedAt: what was checked since counts as fresh.
	opts := Options{FreshSince: job.CreatedAt}
	def, known := e.Runner.Jobs[a.Type]
	budgeted := e.Budgets != nil && known && def.budgeted()
	if budgeted {
		// A job that cannot read its budget does not run unbounded: it
		// waits like one without a slot. A snooze, unlike an error,
		// spends no attempt, so a later attempt never looks like a
		// takeover.
		slots, ok, err := e.Budgets.AcquireSlots(ctx, k.Bucket, holder, e.now(), e.LeaseTTL)
		if err != nil {
			log.Warn("rewrite budget not read; the job waits", "err", err)
			return river.JobSnooze(e.SlotWait)
		}
		if !ok {
			// As many rewrites as the budget allows run already, here or
			// on another replica.
			return river.JobSnooze(e.SlotWait)
		}
		defer e.Budgets.ReleaseSlots(ctx, slots, holder)
		if opts.RewriteBytes, err = e.Budgets.Allowance(ctx, k.Bucket, e.now()); err != nil {
			log.Warn("rewrite budget not read; the job waits", "err", err)
			return river.JobSnooze(e.SlotWait)
		}
		leases = append(leases, slots...)
	}

	jobCtx, cancel := context.WithTimeoutCause(ctx, e.JobTimeout, fmt.Errorf("job exceeded its timeout of %v", e.JobTimeout))
	defer cancel()
	stopRenewing := e.renew(ctx, leases, holder, cancel)
	t := Target{Bucket: b, Table: bucket.TableIDOf(k.Namespace, k.Name)}
	if e.FanOutParts > 0 {
		opts.Fanout = &fanout{e: e, key: k, typ: a.Type, coordinator: holder}
	}
	var out Outcome
	if droppedUUID != "" {
		out, err = e.runDropped(jobCtx, b, name, droppedUUID, a.Trigger, opts)
	} else {
		out, err = e.Runner.Run(jobCtx, t, a.Type, a.Trigger, opts)
	}
	stopRenewing()
	if err != nil {
		log.Error("job could not be recorded", "err", err)
	}
	if budgeted {
		if err := e.Budgets.Record(ctx, k.Bucket, e.now(), out); err != nil {
			log.Error("bytes rewritten could not be recorded in the rewrite ledger", "err", err)
		}
		if err := e.Budgets.Refresh(context.WithoutCancel(ctx), e.now()); err != nil {
			log.Warn("rewrite budgets not refreshed", "err", err)
		}
	}
	if out.Status == state.Failed {
		log.Warn("job failed", "message", out.FailureMessage)
	}
	if ctx.Err() != nil {
		// Shutting down: the job was cancelled, not finished. Give it back
		// at once, for a restart or another replica.
		return river.JobSnooze(0)
	}
	return nil
}

// renew renews the leases every third of the TTL until the returned func
// is called, and calls cancel if one was lost: the job must stop, for
// another worker runs it now, or its rewrite slot is someone else's.
func (e *Engine) renew(ctx context.Context, leases []string, holder string, cancel context.CancelFunc) (stop func()) {
	done := make(chan struct{})
	var beats sync.WaitGroup
	beats.Go(func() {
		t := time.NewTicker(e.LeaseTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				for _, lease := range leases {
					if ok, err := e.Store.AcquireLease(ctx, lease, holder, e.now(), e.LeaseTTL); err == nil && !ok {
						e.Logger.Error("lost the lease of a running job; cancelling it", "lease", lease)
						cancel()
						return
					}
				}
			}
		}
	})
	return func() { close(done); beats.Wait() }
}

// warnings passes on a handler's records of level Warn and above.
type warnings struct{ slog.Handler }

func (h warnings) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

func (h warnings) WithAttrs(attrs []slog.Attr) slog.Handler {
	return warnings{h.Handler.WithAttrs(attrs)}
}

func (h warnings) WithGroup(name string) slog.Handler { return warnings{h.Handler.WithGroup(name)} }

// QueuedRun is a run waiting in the queue or running.
type QueuedRun struct {
	Table   state.TableKey
	Type    maintenance.JobType
	Trigger string
	// Due is when the run may start: River's scheduled time, which a
	// need-ordered fire sets a millisecond apart in its order.
	Due time.Time
	// Running says a worker has it now.
	Running bool
	// Pending is why it was queued (empty: queued otherwise).
	Pending
}

// Queued lists up to limit runs queued or running, in the order they
// run: those running first, then by due time.
func (e *Engine) Queued(ctx context.Context, limit int) ([]QueuedRun, error) {
	var out []QueuedRun
	for _, states := range [][]rivertype.JobState{{rivertype.JobStateRunning},
		{rivertype.JobStateAvailable, rivertype.JobStateRetryable, rivertype.JobStateScheduled, rivertype.JobStatePending}} {
		if len(out) >= limit {
			break
		}
		res, err := e.client.JobList(ctx, river.NewJobListParams().Kinds(RunArgs{}.Kind()).States(states...).
			OrderBy(river.JobListOrderByScheduledAt, river.SortOrderAsc).First(limit-len(out)))
		if err != nil {
			return nil, fmt.Errorf("list queued jobs: %w", err)
		}
		for _, j := range res.Jobs {
			var a RunArgs
			if json.Unmarshal(j.EncodedArgs, &a) != nil {
				continue
			}
			out = append(out, QueuedRun{Table: a.Key(), Type: a.Type, Trigger: a.Trigger, Due: j.ScheduledAt,
				Running: j.State == rivertype.JobStateRunning, Pending: Pending{Reason: a.Reason, Estimate: a.Estimate}})
		}
	}
	return out, nil
}
