package jobs

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/maintenance"
)

// fakeJob records its runs and catches two runs on one table at once.
type fakeJob struct {
	typ      maintenance.JobType
	sleep    time.Duration
	mu       sync.Mutex
	runs     map[string]int
	inflight map[string]bool
	overlaps atomic.Int32
	panicky  bool
	block    bool
}

func newFake(typ maintenance.JobType) *fakeJob {
	return &fakeJob{typ: typ, runs: map[string]int{}, inflight: map[string]bool{}}
}

func (f *fakeJob) Type() maintenance.JobType { return f.typ }

func (f *fakeJob) count(k state.TableKey) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs[k.String()]
}

func (f *fakeJob) Run(ctx context.Context, t Target, _ maintenance.Settings, _ Options) (Outcome, error) {
	key := t.Key().String()
	f.mu.Lock()
	if f.inflight[key] {
		f.overlaps.Add(1)
	}
	f.inflight[key] = true
	f.runs[key]++
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inflight[key] = false
		f.mu.Unlock()
	}()
	if f.panicky {
		panic("boom")
	}
	if f.block {
		<-ctx.Done()
		return Outcome{}, context.Cause(ctx)
	}
	time.Sleep(f.sleep)
	return Outcome{Figures: map[string]int{"n": 1}}, nil
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

// runUntilEmpty runs w until s's queue is empty, then stops it and waits.
func runUntilEmpty(t *testing.T, w *Worker, s state.Store) {
	t.Helper()
	ctx := context.Background()
	stop, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { w.Run(stop, ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitEmpty(t, s, 10*time.Second)
}

// Two workers on one store (two replicas) run every queued job exactly
// once and never two jobs of one table at a time.
func TestWorkersRunEachJobOnce(t *testing.T) {
	s1, s2 := shared(t)
	reg := registry(t)
	fakes := map[maintenance.JobType]*fakeJob{}
	jobsOf := map[maintenance.JobType]Job{}
	for _, typ := range maintenance.JobTypes {
		fakes[typ] = newFake(typ)
		fakes[typ].sleep = 15 * time.Millisecond
		jobsOf[typ] = fakes[typ]
	}
	const tables = 5
	for i := 0; i < tables; i++ {
		for _, typ := range maintenance.JobTypes {
			if _, err := s1.Enqueue(context.Background(), state.QueuedJob{Table: key(i), Type: typ, Trigger: "test", NotBefore: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
	}
	stop, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i, s := range []state.Store{s1, s2} {
		w := &Worker{Store: s, Registry: reg, Runner: &Runner{Store: s, Jobs: jobsOf}, Holder: fmt.Sprint("replica-", i), Parallelism: 3, Poll: 10 * time.Millisecond}
		wg.Add(1)
		go func() { defer wg.Done(); w.Run(stop, context.Background()) }()
	}
	waitEmpty(t, s1, 30*time.Second)
	cancel()
	wg.Wait()
	overlaps := int32(0)
	for _, typ := range maintenance.JobTypes {
		f := fakes[typ]
		for i := 0; i < tables; i++ {
			if n := f.count(key(i)); n != 1 {
				t.Errorf("%s on %s ran %d times", typ, key(i), n)
			}
		}
		overlaps += f.overlaps.Load()
	}
	if overlaps != 0 {
		t.Fatalf("%d runs overlapped on one table", overlaps)
	}
	// Across job types too: the table lease serialises a table's jobs.
	for i := 0; i < tables; i++ {
		runs, _ := s1.Runs(context.Background(), key(i), maintenance.Compaction, 5)
		if len(runs) != 1 || runs[0].Status != state.Successful {
			t.Fatalf("runs of %s: %+v", key(i), runs)
		}
	}
}

// A replica dies holding a job (kill -9: no cleanup). After its claim and
// lease expire another replica runs the job, the dead run is marked
// Failed, and the status reflects the new run.
func TestTakeoverAfterCrash(t *testing.T) {
	s1, s2 := shared(t)
	reg := registry(t)
	ctx := context.Background()
	k := key(1)
	if _, err := s1.Enqueue(ctx, state.QueuedJob{Table: k, Type: maintenance.Compaction, Trigger: "test", NotBefore: time.Now()}); err != nil {
		t.Fatal(err)
	}
	ttl := 300 * time.Millisecond
	// The dying replica: claims, takes the table lease, records a run, dies.
	j, err := s1.Claim(ctx, "dead", time.Now(), ttl)
	if err != nil || j == nil {
		t.Fatal(j, err)
	}
	if ok, _ := s1.AcquireLease(ctx, "table:"+k.String(), "dead", time.Now(), ttl); !ok {
		t.Fatal("lease")
	}
	deadRun, _ := s1.StartRun(ctx, state.Run{Table: k, Type: maintenance.Compaction, Trigger: "test", Started: time.Now()})

	fake := newFake(maintenance.Compaction)
	var takeovers atomic.Int32
	w := &Worker{Store: s2, Registry: reg, Runner: &Runner{Store: s2, Jobs: map[maintenance.JobType]Job{maintenance.Compaction: fake}},
		Holder: "survivor", LeaseTTL: ttl, Poll: 20 * time.Millisecond, OnTakeover: func(state.QueuedJob) { takeovers.Add(1) }}
	runUntilEmpty(t, w, s2)
	if fake.count(k) != 1 || takeovers.Load() != 1 {
		t.Fatalf("runs %d, takeovers %d", fake.count(k), takeovers.Load())
	}
	runs, _ := s2.Runs(ctx, k, maintenance.Compaction, 5)
	if len(runs) != 2 || runs[1].ID != deadRun || runs[1].Status != state.Failed || runs[0].Status != state.Successful {
		t.Fatalf("runs after takeover: %+v", runs)
	}
	last, _ := s2.LastRuns(ctx, k)
	if last[maintenance.Compaction].Status != state.Successful {
		t.Fatalf("status after takeover: %+v", last[maintenance.Compaction])
	}
}

// A panicking job is a Failed run, and the worker goes on; a job that
// overruns its timeout fails with a message saying so.
func TestPanicAndTimeout(t *testing.T) {
	s, _ := shared(t)
	reg := registry(t)
	ctx := context.Background()
	p := newFake(maintenance.Compaction)
	p.panicky = true
	slow := newFake(maintenance.SnapshotManagement)
	slow.block = true
	w := &Worker{Store: s, Registry: reg, Runner: &Runner{Store: s, Jobs: map[maintenance.JobType]Job{maintenance.Compaction: p, maintenance.SnapshotManagement: slow}},
		Holder: "w", JobTimeout: 200 * time.Millisecond, Poll: 10 * time.Millisecond}
	for _, typ := range []maintenance.JobType{maintenance.Compaction, maintenance.SnapshotManagement} {
		s.Enqueue(ctx, state.QueuedJob{Table: key(1), Type: typ, Trigger: "test", NotBefore: time.Now()})
	}
	runUntilEmpty(t, w, s)
	last, _ := s.LastRuns(ctx, key(1))
	if r := last[maintenance.Compaction]; r.Status != state.Failed || !strings.Contains(r.FailureMessage, "internal error: boom") {
		t.Fatalf("panicking job: %+v", r)
	}
	if r := last[maintenance.SnapshotManagement]; r.Status != state.Failed || !strings.Contains(r.FailureMessage, "exceeded its timeout") {
		t.Fatalf("slow job: %+v", r)
	}
}

// Shutting down cancels running jobs when the grace period ends and gives
// them back to the queue instead of dropping them.
func TestShutdownRequeues(t *testing.T) {
	s, _ := shared(t)
	reg := registry(t)
	ctx := context.Background()
	slow := newFake(maintenance.Compaction)
	slow.block = true
	w := &Worker{Store: s, Registry: reg, Runner: &Runner{Store: s, Jobs: map[maintenance.JobType]Job{maintenance.Compaction: slow}}, Holder: "w", Poll: 10 * time.Millisecond}
	s.Enqueue(ctx, state.QueuedJob{Table: key(1), Type: maintenance.Compaction, Trigger: "test", NotBefore: time.Now()})
	stop, cancelStop := context.WithCancel(ctx)
	hard, cancelHard := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { w.Run(stop, hard); close(done) }()
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
	j, _ := s.Claim(ctx, "next", time.Now(), time.Minute)
	if j == nil || j.Attempts != 2 {
		t.Fatalf("requeued job %+v", j)
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
	sc := &Scheduler{Store: s, Tables: &Discovery{Registry: reg}, Jitter: 10 * time.Minute, Now: func() time.Time { return clock },
		Schedules: map[maintenance.JobType]string{maintenance.Compaction: "@hourly", maintenance.SnapshotManagement: "0 */6 * * *", maintenance.UnreferencedFileRemoval: "@daily"}}
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
	j, _ := s.Claim(ctx, "w", clock.Add(time.Hour), time.Minute)
	if j == nil || j.Type != maintenance.Compaction || j.NotBefore.Before(clock.Add(-time.Second)) || j.NotBefore.After(clock.Add(10*time.Minute)) {
		t.Fatalf("queued job %+v (jitter outside the window)", j)
	}
	s.Complete(ctx, j.ID, "w")
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
}
