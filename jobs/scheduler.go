package jobs

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// Scheduler turns cron schedules into queued jobs: on each fire of a job
// type's schedule it enqueues that type for every table, spread over a
// jitter window so tables do not all start at once, or, with Needs, only
// the tables that need a run, those with most need first. It only enqueues;
// the Engine runs. Several replicas may schedule at once: the queue keeps
// one pending job per table and type.
type Scheduler struct {
	Store state.Queue
	Queue *Engine
	// Tables are the tables the scheduler queues jobs for.
	Tables *Discovery
	// Schedules are the cron expressions per job type; a type without
	// one runs on its default (maintenance.Type.Schedule).
	Schedules map[maintenance.JobType]string
	// Jitter is the window a table's start is spread over (default 5m).
	Jitter time.Duration
	// Rediscover is how often the tables are listed again (default 5m).
	Rediscover time.Duration
	// Skip, when set, leaves a table out of a fire of typ: the daemon
	// skips the types disabled for a table, so that a type that is off
	// unless configured (record expiration) queues no job per table and
	// fire. The API reports a disabled type from its configuration.
	Skip func(t Target, typ maintenance.JobType) bool
	// Needs, when set, orders each fire by need (Runner.Need): every
	// table is polled cheaply first, those that need a run are queued
	// due at the fire time in the order planner.NeedOrder gives, those
	// whose run would only skip are not queued, and those whose poll
	// failed are queued with their jitter, so that their run reports the
	// failure. Nil: every table is queued with its jitter.
	Needs func(ctx context.Context, t Target, typ maintenance.JobType, now time.Time) (planner.Need, error)
	// PollParallelism bounds the tables polled at once (default 16).
	PollParallelism int
	// FreshTypes are the job types a table's freshness target applies to
	// (Runner.FreshTypes); empty: freshness scheduling is off, and every
	// type waits for its fire.
	FreshTypes []maintenance.JobType
	// Freshness is the lags Needs records, which freshness scheduling
	// reads: when each table was last checked, its target and location.
	Freshness *Freshness
	// Debounce is how long a table's check waits after its first event
	// (default DefaultDebounce).
	Debounce time.Duration
	// Backstop is how long a table with a freshness target may go
	// without a check when no event comes; 0: a quarter of its target,
	// for a daemon without events.
	Backstop time.Duration
	// Dropped, when set, gives the dropped tables whose leftovers each
	// fire of unreferenced file removal queues too (their dropped keys):
	// those of the buckets with removeDroppedTables on.
	Dropped func(ctx context.Context) ([]state.TableKey, error)
	// Fired, when set, is told what each fire did (Metrics.Fired).
	Fired  func(typ maintenance.JobType, f Fire)
	Logger *slog.Logger
	Now    func() time.Time

	parsed map[maintenance.JobType]cron.Schedule

	fresh freshState
}

// Pending is why a need-ordered fire or a freshness check queued a
// table, and how much work it expects there.
type Pending struct {
	// Reason is planner.NeedBudget for work a rewrite budget deferred,
	// else the unchanged rule's verdict, else NeedDue.
	Reason string
	// Estimate is the bytes the run is expected to rewrite (0: unknown).
	Estimate int64
}

// NeedDue is the reason of a table queued by a job type the unchanged
// rule does not cover: its schedule fired.
const NeedDue = "due"

// pendingOf is the Pending of a polled need.
func pendingOf(n planner.Need) Pending {
	return Pending{Reason: cmp.Or(n.Reason(), NeedDue), Estimate: n.Estimate}
}

// reasonLabel is a need's reason as the pending-tables metric counts it.
func reasonLabel(n planner.Need) string {
	if n.Deferred > 0 {
		return "budget"
	}
	return cmp.Or(n.Rule, NeedDue)
}

// Init parses the schedules; Run calls it.
func (s *Scheduler) Init() error {
	if s.Jitter <= 0 {
		s.Jitter = 5 * time.Minute
	}
	if s.Rediscover <= 0 {
		s.Rediscover = 5 * time.Minute
	}
	if s.PollParallelism <= 0 {
		s.PollParallelism = 16
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	s.parsed = map[maintenance.JobType]cron.Schedule{}
	for _, typ := range maintenance.Types() {
		spec := s.Schedules[typ.Name]
		if spec == "" {
			spec = typ.Schedule
		}
		sched, err := cron.ParseStandard(spec)
		if err != nil {
			return fmt.Errorf("schedule of %s: %w", typ.Name, err)
		}
		s.parsed[typ.Name] = sched
	}
	return nil
}

// jitter spreads tables deterministically over the window, so a table
// starts at the same offset after every fire and the API can tell when.
// The window is Jitter, but at most a quarter of the schedule's interval,
// so that short demo schedules stay short.
func (s *Scheduler) jitter(t Target, typ maintenance.JobType) time.Duration {
	return s.jitterOf(t.Key().String(), typ)
}

// jitterOf is jitter for the table of state key key.
func (s *Scheduler) jitterOf(key string, typ maintenance.JobType) time.Duration {
	window := s.Jitter
	first := s.parsed[typ].Next(s.Now())
	if interval := s.parsed[typ].Next(first).Sub(first); interval/4 < window {
		window = interval / 4
	}
	if window <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(key + "|" + string(typ)))
	return time.Duration(h.Sum64() % uint64(window))
}

// Next returns when typ next starts on t. With Needs, that is the next
// fire, at which t is queued in its order of need if it needs a run.
func (s *Scheduler) Next(t Target, typ maintenance.JobType) time.Time {
	next := s.parsed[typ].Next(s.Now())
	if s.Needs != nil {
		return next
	}
	return next.Add(s.jitter(t, typ))
}

// fire enqueues typ for every table at the fire time plus its jitter,
// or, with Needs, the tables that need a run in their order of need.
func (s *Scheduler) fire(ctx context.Context, typ maintenance.JobType, at time.Time, trigger string) error {
	tables := make([]Target, 0, len(s.Tables.Tables()))
	for _, t := range s.Tables.Tables() {
		if s.Skip == nil || !s.Skip(t, typ) {
			tables = append(tables, t)
		}
	}
	if s.Needs != nil {
		return s.fireByNeed(ctx, typ, tables, at, trigger)
	}
	keys := make([]state.TableKey, 0, len(tables))
	due := make(map[state.TableKey]time.Time, len(tables))
	for _, t := range tables {
		keys = append(keys, t.Key())
		due[t.Key()] = at.Add(s.jitter(t, typ))
	}
	queued, err := s.Queue.EnqueueMany(ctx, keys, typ, trigger, func(k state.TableKey) Placement { return Placement{At: due[k]} })
	if err != nil {
		return err
	}
	s.Logger.Info("schedule fired", "job", typ, "at", at, "trigger", trigger, "queued", queued)
	s.fired(typ, Fire{Tables: len(tables), Queued: queued})
	return s.Store.SetLastFire(ctx, typ, at)
}

// Fire is what one fire of a job type's schedule did.
type Fire struct {
	// Tables are the tables the type was fired for; Queued those queued.
	Tables, Queued int
	// A need-ordered fire also counts those it left out because their
	// run would only skip as unchanged (Skipped) and those queued because
	// their poll failed (PollErrors), and how long the polls took.
	Skipped, PollErrors int
	Poll                time.Duration
	// Pending counts the tables a need-ordered fire queued by reason:
	// "budget" for work a rewrite budget deferred, else the unchanged
	// rule's verdict, else NeedDue.
	Pending map[string]int
}

// fired tells Fired, if set.
func (s *Scheduler) fired(typ maintenance.JobType, f Fire) {
	if s.Fired != nil {
		s.Fired(typ, f)
	}
}

// fireByNeed polls every table, PollParallelism at a time, and queues
// those that need a run. The queue runs jobs in the order of their due
// times, so the order of need is kept as due times a millisecond apart
// from the fire time on: insertion order alone is not an order River
// promises.
func (s *Scheduler) fireByNeed(ctx context.Context, typ maintenance.JobType, tables []Target, at time.Time, trigger string) error {
	begin := time.Now()
	needs := make([]planner.Need, len(tables))
	failed := make([]bool, len(tables))
	sem := make(chan struct{}, s.PollParallelism)
	var wg sync.WaitGroup
	for i, t := range tables {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			n, err := s.Needs(ctx, t, typ, at)
			if err != nil {
				s.Logger.Debug("table not polled; queued to report it", "table", t.Key().String(), "job", typ, "err", err)
				failed[i] = true
				return
			}
			needs[i] = n
		})
	}
	wg.Wait()
	polled := time.Since(begin)
	if err := ctx.Err(); err != nil {
		return err
	}
	order, skipped := planner.NeedOrder(needs)
	keys := make([]state.TableKey, 0, len(tables))
	due := make(map[state.TableKey]time.Time, len(tables))
	needing, errs := 0, 0
	pending, reasons := map[state.TableKey]Pending{}, map[string]int{}
	for rank, i := range order {
		if failed[i] {
			continue
		}
		needing++
		keys = append(keys, tables[i].Key())
		due[tables[i].Key()] = at.Add(time.Duration(rank) * time.Millisecond)
		pending[tables[i].Key()] = pendingOf(needs[i])
		reasons[reasonLabel(needs[i])]++
	}
	for i, t := range tables {
		if failed[i] {
			errs++
			keys = append(keys, t.Key())
			due[t.Key()] = at.Add(s.jitter(t, typ))
		}
	}
	queued, err := s.Queue.EnqueueMany(ctx, keys, typ, trigger, func(k state.TableKey) Placement { return Placement{At: due[k], Pending: pending[k]} })
	if err != nil {
		return err
	}
	s.Logger.Info("schedule fired", "job", typ, "at", at, "trigger", trigger, "polled", len(tables), "needingWork", needing,
		"queued", queued, "skippedUnchanged", skipped, "pollErrors", errs, "pollDuration", polled)
	s.fired(typ, Fire{Tables: len(tables), Queued: queued, Skipped: skipped, PollErrors: errs, Poll: polled, Pending: reasons})
	return s.Store.SetLastFire(ctx, typ, at)
}

// Tick does what is due at now: for each job type whose schedule fired
// since its last recorded fire, one round of jobs — however many fires
// were missed while no scheduler ran, they are caught up once. A type
// that never fired starts counting from now.
func (s *Scheduler) Tick(ctx context.Context) error {
	now := s.Now()
	for _, typ := range maintenance.JobTypes() {
		last, err := s.Store.LastFire(ctx, typ)
		if err != nil {
			return err
		}
		if last.IsZero() {
			if err := s.Store.SetLastFire(ctx, typ, now); err != nil {
				return err
			}
			continue
		}
		next := s.parsed[typ].Next(last)
		if next.After(now) {
			continue
		}
		trigger := "schedule"
		if s.parsed[typ].Next(next).Before(now) {
			trigger = "catch-up" // more than one fire was missed
		}
		if err := s.fire(ctx, typ, now, trigger); err != nil {
			return err
		}
		if typ == maintenance.UnreferencedFileRemoval {
			s.fireDropped(ctx, now, trigger)
		}
	}
	return nil
}

// fireDropped queues removal of the dropped tables' leftovers, spread
// over the jitter window like the tables' runs. A failure to list them
// is logged: the live tables' fire stands.
func (s *Scheduler) fireDropped(ctx context.Context, at time.Time, trigger string) {
	if s.Dropped == nil {
		return
	}
	keys, err := s.Dropped(ctx)
	if err == nil && len(keys) > 0 {
		_, err = s.Queue.EnqueueMany(ctx, keys, maintenance.UnreferencedFileRemoval, trigger, func(k state.TableKey) Placement {
			return Placement{At: at.Add(s.jitterOf(k.String(), maintenance.UnreferencedFileRemoval))}
		})
	}
	if err != nil {
		s.Logger.Warn("dropped tables' leftovers not queued", "err", err)
		return
	}
	if len(keys) > 0 {
		s.Logger.Info("dropped tables' leftovers queued", "tables", len(keys))
	}
}

// Run discovers tables and ticks every second until ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	if err := s.Init(); err != nil {
		return err
	}
	s.Tables.Discover(ctx)
	lastDiscover := s.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if s.Now().Sub(lastDiscover) >= s.Rediscover {
			s.Tables.Discover(ctx)
			lastDiscover = s.Now()
			s.forgetGone()
		}
		if err := s.Tick(ctx); err != nil && ctx.Err() == nil {
			s.Logger.Error("scheduler tick failed", "err", err)
		}
		s.checkFresh(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// forgetGone drops the lags of tables discovery no longer lists (dropped,
// or filtered out), so that their series leave /metrics.
func (s *Scheduler) forgetGone() {
	if s.Freshness == nil {
		return
	}
	live := map[state.TableKey]bool{}
	for _, t := range s.Tables.Tables() {
		live[t.Key()] = true
	}
	s.Freshness.Forget(func(k state.TableKey) bool { return live[k] })
}
