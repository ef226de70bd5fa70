package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/maintenance"
)

// fakeJob records its runs and catches two runs on one table at once.
type fakeJob struct {
	typ     maintenance.JobType
	sleep   time.Duration
	mu      sync.Mutex
	runs    map[string]int
	guard   *inflight // shared by fakes of several types to catch overlaps across them
	panicky bool
	block   bool
	hang    chan struct{}
}

// inflight counts runs that started on a table another run was on.
type inflight struct {
	mu       sync.Mutex
	tables   map[string]bool
	overlaps atomic.Int32
}

func newFake(typ maintenance.JobType) *fakeJob {
	return &fakeJob{typ: typ, runs: map[string]int{}, guard: &inflight{tables: map[string]bool{}}}
}

// def is the fake's definition.
func (f *fakeJob) def() Job { return define(f.typ, f.run) }

func (f *fakeJob) count(k state.TableKey) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs[k.String()]
}

func (f *fakeJob) run(ctx context.Context, r *Run[struct{}], fig *testFigures) error {
	key := r.Key().String()
	f.mu.Lock()
	f.runs[key]++
	f.mu.Unlock()
	g := f.guard
	g.mu.Lock()
	if g.tables[key] {
		g.overlaps.Add(1)
	}
	g.tables[key] = true
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.tables[key] = false
		g.mu.Unlock()
	}()
	if f.panicky {
		panic("boom")
	}
	if f.block {
		<-ctx.Done()
		return context.Cause(ctx)
	}
	if f.hang != nil {
		<-f.hang // a stuck process: deaf to cancellation
		return errors.New("released")
	}
	time.Sleep(f.sleep)
	fig.Values = map[string]float64{"n": 1}
	return nil
}

// shared is one state store (PostgreSQL when the test server is there,
// else a SQLite file) opened twice, as two replicas would.
func shared(t *testing.T) (state.Store, state.Store) {
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "state.db")
	if servers.PostgresAvailable() {
		dsn = servers.Postgres(t)
	}
	var stores []state.Store
	for i := 0; i < 2; i++ {
		s, err := state.Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	return stores[0], stores[1]
}

func registry(t *testing.T) *bucket.Registry {
	reg := configs.Embedded(t.TempDir()).Registry()
	t.Cleanup(reg.Close)
	return reg
}

func key(i int) state.TableKey {
	return state.TableKey{Bucket: configs.LocalBucketARN, Namespace: "ns", Name: fmt.Sprint("t", i)}
}

func waitEmpty(t *testing.T, s state.Store, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if n, err := s.QueueDepth(context.Background()); err == nil && n == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	n, _ := s.QueueDepth(context.Background())
	t.Fatalf("queue still holds %d jobs", n)
}

// newEngine is an engine on s that runs jobsOf, as a replica named holder.
func newEngine(t *testing.T, s state.Store, reg *bucket.Registry, holder string, jobsOf map[maintenance.JobType]Job, tune func(*Engine)) *Engine {
	t.Helper()
	e := &Engine{Store: s, Registry: reg, Holder: holder, Poll: 10 * time.Millisecond}
	if jobsOf != nil {
		e.Runner = &Runner{Store: s, Jobs: jobsOf}
	}
	if tune != nil {
		tune(e)
	}
	if err := e.Init(); err != nil {
		t.Fatal(err)
	}
	return e
}

// start runs e until the returned stop is called, which waits for it.
func start(t *testing.T, e *Engine) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx, context.Background()) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("engine %s: %v", e.Holder, err)
		}
	}
}

func enqueue(t *testing.T, e *Engine, k state.TableKey, typ maintenance.JobType) {
	t.Helper()
	if _, err := e.Enqueue(context.Background(), k, typ, "test", time.Now()); err != nil {
		t.Fatal(err)
	}
}

// onByDefault are the maintenance types a table runs without being asked
// (erasure is off until configured, and a run of it would only record
// that).
func onByDefault() []maintenance.JobType {
	var out []maintenance.JobType
	for _, typ := range maintenance.MaintenanceTypes() {
		if maintenance.Defaults(typ).Status == maintenance.Enabled {
			out = append(out, typ)
		}
	}
	return out
}

// Two engines on one store (two replicas) run every queued job exactly
// once and never two jobs of one table at a time; queueing a pending job
// again adds nothing.
func TestWorkersRunEachJobOnce(t *testing.T) {
	s1, s2 := shared(t)
	reg := registry(t)
	fakes := map[maintenance.JobType]*fakeJob{}
	jobsOf := map[maintenance.JobType]Job{}
	guard := &inflight{tables: map[string]bool{}}
	for _, typ := range onByDefault() {
		fakes[typ] = newFake(typ)
		fakes[typ].sleep = 15 * time.Millisecond
		fakes[typ].guard = guard
		jobsOf[typ] = fakes[typ].def()
	}
	e1 := newEngine(t, s1, reg, "replica-1", jobsOf, func(e *Engine) { e.Parallelism = 3 })
	e2 := newEngine(t, s2, reg, "replica-2", jobsOf, func(e *Engine) { e.Parallelism = 3 })
	const tables = 5
	for i := 0; i < tables; i++ {
		for _, typ := range onByDefault() {
			enqueue(t, e1, key(i), typ)
			if ok, err := e2.Enqueue(context.Background(), key(i), typ, "again", time.Now()); err != nil || ok {
				t.Fatalf("a pending job was queued twice: %v %v", ok, err)
			}
		}
	}
	if n, _ := s1.QueueDepth(context.Background()); n != tables*len(onByDefault()) {
		t.Fatalf("queue depth %d", n)
	}
	stop1, stop2 := start(t, e1), start(t, e2)
	waitEmpty(t, s1, 30*time.Second)
	stop1()
	stop2()
	for _, typ := range onByDefault() {
		for i := 0; i < tables; i++ {
			if n := fakes[typ].count(key(i)); n != 1 {
				t.Errorf("%s on %s ran %d times", typ, key(i), n)
			}
		}
	}
	// Across job types too, on one replica as across two: the table lease
	// serialises a table's jobs.
	if n := guard.overlaps.Load(); n != 0 {
		t.Fatalf("%d runs overlapped on one table", n)
	}
	for i := 0; i < tables; i++ {
		runs, _ := s1.Runs(context.Background(), key(i), maintenance.Compaction, 5)
		if len(runs) != 1 || runs[0].Status != state.Successful {
			t.Fatalf("runs of %s: %+v", key(i), runs)
		}
	}
}

// A replica dies holding a job (its store connections gone, as after
// kill -9: no cleanup, no renewal). Once its table lease lapses, another
// replica rescues the job and runs it, the dead run is marked Failed, and
// the status reflects the new run.
func TestTakeoverAfterCrash(t *testing.T) {
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "state.db")
	if servers.PostgresAvailable() {
		dsn = servers.Postgres(t)
	}
	dying, err := state.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := state.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close() })
	reg := registry(t)
	ctx := context.Background()
	k := key(1)

	frozen := newFake(maintenance.Compaction)
	release := make(chan struct{})
	frozen.hang = release
	dead := newEngine(t, dying, reg, "dead", map[maintenance.JobType]Job{maintenance.Compaction: frozen.def()}, nil)
	enqueue(t, dead, k, maintenance.Compaction)
	stopDead, cancelDead := context.WithCancel(ctx)
	go func() { _ = dead.Run(stopDead, stopDead) }()
	t.Cleanup(func() { close(release); cancelDead() })
	for frozen.count(k) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	dying.Close() // the replica is gone: nothing it holds is renewed or finished

	fake := newFake(maintenance.Compaction)
	var takeovers atomic.Int32
	// The survivor's clock runs two lease TTLs (a minute each) ahead: the
	// dead replica's lease has lapsed by it, while the survivor's own
	// leases, renewed every 20 s, never lapse however slow the machine.
	survivor := newEngine(t, s2, reg, "survivor", map[maintenance.JobType]Job{maintenance.Compaction: fake.def()}, func(e *Engine) {
		e.OnTakeover = func(RunArgs) { takeovers.Add(1) }
		e.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
		e.sweepEvery, e.rescueAfter = 20*time.Millisecond, 3*time.Second
	})
	stop := start(t, survivor)
	waitEmpty(t, s2, 20*time.Second)
	stop()
	if fake.count(k) != 1 || takeovers.Load() != 1 {
		t.Fatalf("runs %d, takeovers %d", fake.count(k), takeovers.Load())
	}
	runs, _ := s2.Runs(ctx, k, maintenance.Compaction, 5)
	if len(runs) != 2 || runs[1].Status != state.Failed || !strings.Contains(runs[1].FailureMessage, "stopped before it finished") || runs[0].Status != state.Successful {
		t.Fatalf("runs after takeover: %+v", runs)
	}
	last, _ := s2.LastRuns(ctx, k)
	if last[maintenance.Compaction].Status != state.Successful {
		t.Fatalf("status after takeover: %+v", last[maintenance.Compaction])
	}
}

// A live job is not rescued: the sweep leaves a job alone while its
// worker holds the table lease, however long it runs. The engine's clock
// runs two minutes ahead, so that every job looks older than the lease
// TTL; the sweep runs every 20 ms and would rescue a job found without a
// lease for 2 s (River records a job complete a moment after its worker
// released the lease); the lease lives a minute, so no renewal on a busy
// machine is ever late.
func TestSweepSparesLiveJobs(t *testing.T) {
	s, _ := shared(t)
	reg := registry(t)
	slow := newFake(maintenance.Compaction)
	slow.sleep = 4 * time.Second
	e := newEngine(t, s, reg, "w", map[maintenance.JobType]Job{maintenance.Compaction: slow.def()}, func(e *Engine) {
		e.sweepEvery, e.rescueAfter = 20*time.Millisecond, 2*time.Second
		e.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	})
	enqueue(t, e, key(1), maintenance.Compaction)
	stop := start(t, e)
	waitEmpty(t, s, 20*time.Second)
	stop()
	if n := slow.count(key(1)); n != 1 {
		t.Fatalf("a job running through 200 sweeps ran %d times", n)
	}
}

// A panicking job is a Failed run, and the engine goes on; a job that
// overruns its timeout fails with a message saying so.
func TestPanicAndTimeout(t *testing.T) {
	s, _ := shared(t)
	reg := registry(t)
	ctx := context.Background()
	p := newFake(maintenance.Compaction)
	p.panicky = true
	slow := newFake(maintenance.SnapshotManagement)
	slow.block = true
	e := newEngine(t, s, reg, "w", map[maintenance.JobType]Job{maintenance.Compaction: p.def(), maintenance.SnapshotManagement: slow.def()},
		func(e *Engine) { e.JobTimeout = 200 * time.Millisecond })
	for _, typ := range []maintenance.JobType{maintenance.Compaction, maintenance.SnapshotManagement} {
		enqueue(t, e, key(1), typ)
	}
	stop := start(t, e)
	waitEmpty(t, s, 20*time.Second)
	stop()
	last, _ := s.LastRuns(ctx, key(1))
	if r := last[maintenance.Compaction]; r.Status != state.Failed || !strings.Contains(r.FailureMessage, "internal error: boom") {
		t.Fatalf("panicking job: %+v", r)
	}
	if r := last[maintenance.SnapshotManagement]; r.Status != state.Failed || !strings.Contains(r.FailureMessage, "exceeded its timeout") {
		t.Fatalf("slow job: %+v", r)
	}
}

// Shutting down cancels running jobs when the grace period ends and gives
// them back to the queue, due at once, instead of dropping them.
func TestShutdownRequeues(t *testing.T) {
	s, _ := shared(t)
	reg := registry(t)
	ctx := context.Background()
	slow := newFake(maintenance.Compaction)
	slow.block = true
	e := newEngine(t, s, reg, "w", map[maintenance.JobType]Job{maintenance.Compaction: slow.def()}, nil)
	enqueue(t, e, key(1), maintenance.Compaction)
	stop, cancelStop := context.WithCancel(ctx)
	hard, cancelHard := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(stop, hard) }()
	for slow.count(key(1)) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	cancelStop()
	time.Sleep(50 * time.Millisecond)
	cancelHard()
	<-done
	if n, _ := s.QueueDepth(ctx); n != 1 {
		t.Fatalf("cancelled job not requeued: depth %d", n)
	}
	res, err := e.client.JobList(ctx, river.NewJobListParams())
	if err != nil || len(res.Jobs) != 1 || res.Jobs[0].State != rivertype.JobStateAvailable || res.Jobs[0].ScheduledAt.After(time.Now()) {
		t.Fatalf("requeued job: %+v %v", res, err)
	}
}

func TestSchedulerCatchesUpOnce(t *testing.T) {
	s, _ := shared(t)
	home := t.TempDir()
	reg := configs.Embedded(home).Registry()
	t.Cleanup(reg.Close)
	b, _ := reg.Bucket("local")
	if _, err := demo.Create(context.Background(), b, demo.Options{Appends: 3}); err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 6, 1, 10, 30, 0, 0, time.UTC)
	e := newEngine(t, s, reg, "w", nil, nil)
	sc := &Scheduler{Store: s, Queue: e, Tables: &Discovery{Registry: reg}, Jitter: 10 * time.Minute, Now: func() time.Time { return clock },
		Schedules: map[maintenance.JobType]string{maintenance.Compaction: "@hourly", maintenance.SnapshotManagement: "0 */6 * * *", maintenance.UnreferencedFileRemoval: "@daily",
			maintenance.RecordExpiration: "0 1 * * *"}}
	if err := sc.Init(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sc.Tables.Discover(ctx)
	if len(sc.Tables.Tables()) != 1 {
		t.Fatalf("discovered %v", sc.Tables.Tables())
	}
	tick := func(at time.Time) int {
		t.Helper()
		clock = at
		if err := sc.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		n, _ := s.QueueDepth(ctx)
		return n
	}
	if n := tick(clock); n != 0 {
		t.Fatalf("first tick queued %d: a fresh scheduler must not fire at once", n)
	}
	if n := tick(clock.Add(20 * time.Minute)); n != 0 { // 10:50
		t.Fatalf("queued %d before the hour", n)
	}
	if n := tick(time.Date(2026, 6, 1, 11, 0, 1, 0, time.UTC)); n != 1 {
		t.Fatalf("the hourly fire queued %d", n)
	}
	res, err := e.client.JobList(ctx, river.NewJobListParams())
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("queued jobs: %+v %v", res, err)
	}
	var args RunArgs
	j := res.Jobs[0]
	if err := json.Unmarshal(j.EncodedArgs, &args); err != nil || args.Type != maintenance.Compaction || j.ScheduledAt.Before(clock.Add(-time.Second)) || j.ScheduledAt.After(clock.Add(10*time.Minute)) {
		t.Fatalf("queued job %+v %+v (jitter outside the window)", j, args)
	}
	if _, err := e.client.JobDelete(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	// Down for five hours: one catch-up round, not five; snapshot
	// management's 12:00 and 18:00... only 12:00 and 06:00 boundaries
	// passed once.
	if n := tick(time.Date(2026, 6, 1, 16, 10, 0, 0, time.UTC)); n != 2 {
		t.Fatalf("after downtime %d jobs queued, want one compaction and one snapshot management", n)
	}
	if n := tick(time.Date(2026, 6, 1, 16, 20, 0, 0, time.UTC)); n != 2 {
		t.Fatalf("queued again within the hour: %d", n)
	}
	if next := sc.Next(sc.Tables.Tables()[0], maintenance.Compaction); next.Before(time.Date(2026, 6, 1, 17, 0, 0, 0, time.UTC)) || next.After(time.Date(2026, 6, 1, 17, 10, 0, 0, time.UTC)) {
		t.Fatalf("next compaction %v", next)
	}
	// A type skipped for the table (disabled) queues nothing at its fire;
	// the next fire without the skip does.
	all, err := e.client.JobList(ctx, river.NewJobListParams())
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range all.Jobs {
		if _, err := e.client.JobDelete(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
	}
	sc.Skip = func(_ Target, typ maintenance.JobType) bool { return typ == maintenance.Compaction }
	if n := tick(time.Date(2026, 6, 1, 17, 0, 1, 0, time.UTC)); n != 0 {
		t.Fatalf("a skipped type queued %d", n)
	}
	sc.Skip = nil
	if n := tick(time.Date(2026, 6, 1, 18, 0, 1, 0, time.UTC)); n != 2 {
		t.Fatalf("the next fires queued %d, want compaction and snapshot management", n)
	}
}

// A run queued for later is moved to a sooner time another replica's
// placement asks for, on the shared store (PostgreSQL in CI), for that
// placement's trigger; a later or equal placement leaves it; many tables
// at once move together (EnqueueMany's batch).
func TestQueuedRunMovedSooner(t *testing.T) {
	s1, s2 := shared(t)
	reg := registry(t)
	a := newEngine(t, s1, reg, "a", nil, nil)
	b := newEngine(t, s2, reg, "b", nil, nil)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	keys := []state.TableKey{key(0), key(1), key(2)}
	place := func(at time.Time) func(state.TableKey) Placement {
		return func(state.TableKey) Placement { return Placement{At: at} }
	}
	queue := func(e *Engine, trigger string, at time.Time) int {
		t.Helper()
		n, err := e.EnqueueMany(ctx, keys, maintenance.Compaction, trigger, place(at))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	check := func(trigger string, due time.Time, why string) {
		t.Helper()
		q, err := b.Queued(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(q) != len(keys) {
			t.Fatalf("%s: %d runs queued, want %d", why, len(q), len(keys))
		}
		for _, r := range q {
			if r.Trigger != trigger || r.Due.Sub(due).Abs() > time.Millisecond {
				t.Fatalf("%s: %+v, want %q due at %v", why, r, trigger, due)
			}
		}
	}
	if n := queue(a, "freshness", now.Add(time.Hour)); n != 3 {
		t.Fatalf("first placement queued %d", n)
	}
	if n := queue(b, "schedule", now.Add(2*time.Hour)); n != 0 {
		t.Fatalf("a later placement queued %d", n)
	}
	if n := queue(b, "schedule", now.Add(time.Hour)); n != 0 {
		t.Fatalf("the same placement queued %d", n)
	}
	check("freshness", now.Add(time.Hour), "after a later and an equal placement")
	if n := queue(b, "schedule", now.Add(time.Minute)); n != 3 {
		t.Fatalf("a sooner placement moved %d runs, want 3", n)
	}
	check("schedule", now.Add(time.Minute), "after a sooner placement")
}
