package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// rewritingJob rewrites up to its allowance of want bytes per run, and
// counts how many of its runs overlap.
type rewritingJob struct {
	want    int64
	sleep   time.Duration
	mu      sync.Mutex
	caps    []*int64
	running atomic.Int32
	most    atomic.Int32
}

// def is the job's definition: compaction's, under the rewrite budgets.
func (j *rewritingJob) def() Job {
	d := define(maintenance.Compaction, j.run)
	d.Rewritten = func(f *testFigures) int64 { return f.Bytes }
	d.Pending = j.pending
	return d
}

func (j *rewritingJob) run(_ context.Context, r *Run[struct{}], fig *testFigures) error {
	o := r.Options
	n := j.running.Add(1)
	defer j.running.Add(-1)
	for {
		if m := j.most.Load(); n <= m || j.most.CompareAndSwap(m, n) {
			break
		}
	}
	j.mu.Lock()
	j.caps = append(j.caps, o.RewriteBytes)
	j.mu.Unlock()
	time.Sleep(j.sleep)
	fig.Bytes = j.want
	if o.RewriteBytes != nil && *o.RewriteBytes < j.want {
		fig.Bytes, fig.Defer = *o.RewriteBytes, j.want-*o.RewriteBytes
	}
	return nil
}

func (j *rewritingJob) pending(figures json.RawMessage) (int64, int64) {
	var f testFigures
	if json.Unmarshal(figures, &f) != nil {
		return 0, 0
	}
	return f.Defer, f.Defer
}

func ledgerStore(t *testing.T) state.Store {
	t.Helper()
	s, err := state.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The allowance sums the ledger of the last hour, per bucket and for the
// daemon, and takes the share of the smaller limit.
func TestBudgetAllowance(t *testing.T) {
	ctx := context.Background()
	s := ledgerStore(t)
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	b := &Budgets{Store: s, Daemon: Limits{RewriteBytesPerHour: 1000, TableSharePercent: 50},
		Buckets: map[string]BucketLimits{"arn:a": {Name: "a", Limits: Limits{RewriteBytesPerHour: 400, TableSharePercent: 100}}}}
	for _, r := range []struct {
		bucket string
		ago    time.Duration
		n      int64
	}{{"arn:a", 10 * time.Minute, 300}, {"arn:b", 20 * time.Minute, 450}, {"arn:a", 2 * time.Hour, 5000}} {
		if err := s.RecordRewrite(ctx, r.bucket, now.Add(-r.ago), r.n); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		bucket string
		want   int64
	}{
		{"arn:a", 100}, // bucket: 400-300 left; daemon 1000-750; share 100% of 400
		{"arn:b", 250}, // daemon only: 1000-750 left, share 50% of 1000 = 500
	} {
		got, err := b.Allowance(ctx, tc.bucket, now)
		if err != nil || got == nil || *got != tc.want {
			t.Errorf("allowance of %s: %v %v, want %d", tc.bucket, deref(got), err, tc.want)
		}
	}
	unbounded := &Budgets{Store: s, Daemon: Limits{MaxConcurrentRewrites: 2}}
	if got, err := unbounded.Allowance(ctx, "arn:a", now); err != nil || got != nil {
		t.Errorf("allowance without a bytes limit: %v %v, want none", deref(got), err)
	}
	use, err := b.Use(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(use) != 2 || use[0].Scope != DaemonScope || use[0].Used != 750 || use[0].BytesPerHour != 1000 ||
		use[1].Scope != "a" || use[1].Used != 300 || use[1].BytesPerHour != 400 {
		t.Fatalf("use %+v", use)
	}
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg, s)
	b.Observe = m.Budget
	if err := b.Refresh(ctx, now); err != nil {
		t.Fatal(err)
	}
	if v := testutil.ToFloat64(m.budgetUsed.WithLabelValues("a")); v != 300 {
		t.Errorf("bytes used gauge of a: %v", v)
	}
	if v := testutil.ToFloat64(m.budgetCap.WithLabelValues(DaemonScope)); v != 1000 {
		t.Errorf("limit gauge of the daemon: %v", v)
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// Slots: a scope's slots are taken one per job, across holders, and a
// job that finds none holds nothing.
func TestBudgetSlots(t *testing.T) {
	ctx := context.Background()
	s := ledgerStore(t)
	now := time.Now()
	b := &Budgets{Store: s, Daemon: Limits{MaxConcurrentRewrites: 2},
		Buckets: map[string]BucketLimits{"arn:a": {Name: "a", Limits: Limits{MaxConcurrentRewrites: 1}}}}
	first, ok, err := b.AcquireSlots(ctx, "arn:a", "h1", now, time.Minute)
	if err != nil || !ok || len(first) != 2 {
		t.Fatalf("first job: %v %v %v", first, ok, err)
	}
	if got, ok, _ := b.AcquireSlots(ctx, "arn:a", "h2", now, time.Minute); ok || got != nil {
		t.Fatalf("second job of a full bucket got %v", got)
	}
	// The failed attempt released the daemon slot it had taken first?
	// It takes the bucket's first, so the daemon still has one free.
	other, ok, err := b.AcquireSlots(ctx, "arn:b", "h3", now, time.Minute)
	if err != nil || !ok || len(other) != 1 {
		t.Fatalf("a job of another bucket: %v %v %v", other, ok, err)
	}
	if _, ok, _ := b.AcquireSlots(ctx, "arn:c", "h4", now, time.Minute); ok {
		t.Fatal("a third job got a daemon slot of two")
	}
	b.ReleaseSlots(ctx, first, "h1")
	again, ok, err := b.AcquireSlots(ctx, "arn:a", "h2", now, time.Minute)
	if err != nil || !ok {
		t.Fatalf("after release: %v %v %v", again, ok, err)
	}
	if use, _ := b.Use(ctx, now); use[0].Running != 2 || use[1].Running != 1 {
		t.Fatalf("use %+v", use)
	}
}

// A full daemon slot snoozes compaction jobs; once it frees they run,
// never more at once than the slots, each with its allowance, and their
// bytes go to the ledger. Other job types are not held back.
func TestEngineBudget(t *testing.T) {
	ctx := context.Background()
	s1, _ := shared(t)
	reg := registry(t)
	rw := &rewritingJob{want: 600, sleep: 30 * time.Millisecond}
	other := newFake(maintenance.SnapshotManagement)
	jobsOf := map[maintenance.JobType]Job{maintenance.Compaction: rw.def(), maintenance.SnapshotManagement: other.def()}
	budgets := &Budgets{Store: s1, Daemon: Limits{MaxConcurrentRewrites: 1, RewriteBytesPerHour: 1000, TableSharePercent: 100}}
	e := newEngine(t, s1, reg, "replica-1", jobsOf, func(e *Engine) {
		e.Parallelism, e.SlotWait, e.Budgets = 3, 20*time.Millisecond, budgets
	})
	// Another replica's rewrite holds the only slot.
	if ok, err := s1.AcquireLease(ctx, "rewrite:*:0", "elsewhere", time.Now(), time.Minute); err != nil || !ok {
		t.Fatal(ok, err)
	}
	for i := 0; i < 3; i++ {
		enqueue(t, e, key(i), maintenance.Compaction)
	}
	enqueue(t, e, key(0), maintenance.SnapshotManagement)
	stop := start(t, e)
	defer stop()
	deadline := time.Now().Add(10 * time.Second)
	for other.count(key(0)) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	rw.mu.Lock()
	held := len(rw.caps)
	rw.mu.Unlock()
	if other.count(key(0)) != 1 || held != 0 {
		t.Fatalf("with the slot held: %d compactions ran, snapshot management ran %d times", held, other.count(key(0)))
	}
	if err := s1.ReleaseLease(ctx, "rewrite:*:0", "elsewhere"); err != nil {
		t.Fatal(err)
	}
	waitEmpty(t, s1, 20*time.Second)
	if m := rw.most.Load(); m != 1 {
		t.Fatalf("%d compactions ran at once with one slot", m)
	}
	// 1000 an hour: the first takes 600, the second the 400 left, the
	// third nothing.
	rw.mu.Lock()
	var caps []int64
	for _, c := range rw.caps {
		if c == nil {
			t.Fatal("a budgeted run without an allowance")
		}
		caps = append(caps, *c)
	}
	rw.mu.Unlock()
	if len(caps) != 3 || caps[0] != 1000 || caps[1] != 400 || caps[2] != 0 {
		t.Fatalf("allowances %v, want [1000 400 0]", caps)
	}
	used, err := s1.RewrittenSince(ctx, time.Now().Add(-time.Hour))
	if err != nil || used[configs.LocalBucketARN] != 1000 {
		t.Fatalf("ledger %v %v, want 1000 bytes", used, err)
	}
	if h, _ := s1.LeaseHolder(ctx, "rewrite:*:0", time.Now()); h != "" {
		t.Fatalf("slot still held by %q after the jobs", h)
	}

	// The next fire puts the tables whose runs deferred work first, with
	// their deferred bytes as the estimate.
	runner := e.Runner
	runner.FullEvery = -1
	var deferred []planner.Need
	for i := 0; i < 3; i++ {
		n, err := runner.Need(ctx, Target{Bucket: reg.Buckets()[0], Table: bucket.TableIDOf(key(i).Namespace, key(i).Name)}, maintenance.Compaction, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		deferred = append(deferred, n)
	}
	carried := 0
	for _, n := range deferred {
		if n.Deferred > 0 {
			carried++
			if n.Reason() != planner.NeedBudget || n.Estimate != n.Deferred {
				t.Fatalf("need %+v", n)
			}
		}
	}
	if carried != 2 {
		t.Fatalf("needs %+v: want two tables carrying deferred work", deferred)
	}
	order, _ := planner.NeedOrder(deferred)
	if deferred[order[0]].Deferred == 0 || deferred[order[1]].Deferred == 0 {
		t.Fatalf("order %v of %+v: carried-over work not first", order, deferred)
	}
}

// The pending gauge holds the last fire's reasons only.
func TestPendingMetric(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg, ledgerStore(t))
	job := string(maintenance.Compaction)
	m.Fired(maintenance.Compaction, Fire{Pending: map[string]int{"budget": 2, planner.RuleFirst: 1}})
	if v := testutil.ToFloat64(m.pending.WithLabelValues(job, "budget")); v != 2 {
		t.Fatalf("budget tables %v", v)
	}
	m.Fired(maintenance.Compaction, Fire{Pending: map[string]int{planner.RuleClock: 4}})
	if n := testutil.CollectAndCount(m.pending); n != 1 {
		t.Fatalf("%d series after a fire with one reason", n)
	}
	if v := testutil.ToFloat64(m.pending.WithLabelValues(job, planner.RuleClock)); v != 4 {
		t.Fatalf("clock tables %v", v)
	}
}

// brokenLedger is a store whose rewrite ledger cannot be read.
type brokenLedger struct{ state.Store }

func (brokenLedger) RewrittenSince(context.Context, time.Time) (map[string]int64, error) {
	return nil, errors.New("ledger unreadable")
}

// A job whose bytes budget cannot be read does not run unbounded: it
// waits, spending no attempt, and holds no slot meanwhile.
func TestEngineBudgetUnreadable(t *testing.T) {
	ctx := context.Background()
	s, _ := shared(t)
	rw := &rewritingJob{want: 10}
	budgets := &Budgets{Store: brokenLedger{s}, Daemon: Limits{MaxConcurrentRewrites: 1, RewriteBytesPerHour: 1000}}
	e := newEngine(t, s, registry(t), "replica-1", map[maintenance.JobType]Job{maintenance.Compaction: rw.def()}, func(e *Engine) {
		e.SlotWait, e.Budgets = 20*time.Millisecond, budgets
	})
	enqueue(t, e, key(0), maintenance.Compaction)
	stop := start(t, e)
	time.Sleep(500 * time.Millisecond)
	stop()
	rw.mu.Lock()
	ran := len(rw.caps)
	rw.mu.Unlock()
	if ran != 0 {
		t.Fatalf("%d runs without a readable budget", ran)
	}
	res, err := e.Client().JobList(ctx, river.NewJobListParams().Kinds(RunArgs{}.Kind()))
	if err != nil || len(res.Jobs) != 1 || res.Jobs[0].Attempt > 1 || res.Jobs[0].State == rivertype.JobStateDiscarded {
		t.Fatalf("the waiting job: %+v %v", res, err)
	}
	if h, _ := s.LeaseHolder(ctx, "rewrite:*:0", time.Now()); h != "" {
		t.Fatalf("slot held by %q while the job waits", h)
	}
}
