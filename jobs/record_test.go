package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/maintenance"
)

// flakyStore fails the first fails calls of FinishRun (all of them when
// fails is negative), as a state store that went down would.
type flakyStore struct {
	state.Store
	fails    int32
	attempts atomic.Int32
}

func (f *flakyStore) FinishRun(ctx context.Context, r state.Run) error {
	if n := f.attempts.Add(1); f.fails < 0 || n <= f.fails {
		return errors.New("connection refused")
	}
	return f.Store.FinishRun(ctx, r)
}

func target(t *testing.T, k state.TableKey) Target {
	t.Helper()
	b, err := registry(t).Bucket(configs.LocalBucketARN)
	if err != nil {
		t.Fatal(err)
	}
	return Target{Bucket: b, Table: bucket.TableID{Namespace: strings.Split(k.Namespace, "."), Name: k.Name}}
}

func lastRun(t *testing.T, s state.Store, k state.TableKey, typ maintenance.JobType) state.Run {
	t.Helper()
	runs, err := s.Runs(context.Background(), k, typ, 1)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs of %s: %+v %v", k, runs, err)
	}
	return runs[0]
}

// A run's end is recorded although the store failed the first attempts.
func TestFinishRunRetried(t *testing.T) {
	s, _ := shared(t)
	flaky := &flakyStore{Store: s, fails: 3}
	r := &Runner{Store: flaky, Jobs: map[maintenance.JobType]Job{maintenance.Compaction: newFake(maintenance.Compaction).def()}, FinishRetry: time.Millisecond}
	out, err := r.Run(context.Background(), target(t, key(1)), maintenance.Compaction, "schedule", Options{})
	if err != nil || out.Status != state.Successful {
		t.Fatalf("run: %+v %v", out, err)
	}
	if n := flaky.attempts.Load(); n != 4 {
		t.Fatalf("%d attempts to record the end", n)
	}
	got := lastRun(t, s, key(1), maintenance.Compaction)
	var fig testFigures
	if err := json.Unmarshal(got.Metrics, &fig); got.Status != state.Successful || err != nil || fig.Values["n"] != 1 {
		t.Fatalf("recorded run %+v (%s): %v", got, got.Metrics, err)
	}
}

// A run whose end the store never takes: the runner gives up within its
// bound and says so, even when the job's context is cancelled; the sweep
// fails the run later.
func TestFinishRunGivesUpThenSwept(t *testing.T) {
	s, _ := shared(t)
	flaky := &flakyStore{Store: s, fails: -1}
	r := &Runner{Store: flaky, Jobs: map[maintenance.JobType]Job{maintenance.Compaction: newFake(maintenance.Compaction).def()},
		FinishWithin: 200 * time.Millisecond, FinishRetry: 10 * time.Millisecond}
	// The job outlives its context, whose end must not stop the retries.
	blocked := newFake(maintenance.Compaction)
	blocked.block = true
	r.Jobs[maintenance.Compaction] = blocked.def()
	// Cancelled once the job runs: a deadline would also cut short the
	// settings' read before it on a loaded machine.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for blocked.count(key(1)) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	start := time.Now()
	_, err := r.Run(ctx, target(t, key(1)), maintenance.Compaction, "schedule", Options{})
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "record the end of run") {
		t.Fatalf("run: %v", err)
	}
	if n := flaky.attempts.Load(); n < 3 || time.Since(start) > 5*time.Second {
		t.Fatalf("%d attempts in %v", n, time.Since(start))
	}
	if got := lastRun(t, s, key(1), maintenance.Compaction); got.Status != state.Running {
		t.Fatalf("recorded run %+v", got)
	}
	// An hour later, by the engine's clock.
	e := newEngine(t, s, registry(t), "w", nil, func(e *Engine) { e.now = func() time.Time { return time.Now().Add(time.Hour) } })
	if n, err := e.SweepRuns(context.Background()); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if got := lastRun(t, s, key(1), maintenance.Compaction); got.Status != state.Failed || got.FailureMessage != OutcomeNotRecorded || got.Finished.IsZero() {
		t.Fatalf("swept run %+v", got)
	}
}

// The sweep fails only runs no worker is on: not a young run, not one
// whose table lease is held (a live worker, on any replica), not a
// one-shot CLI run, not one whose job is queued again (its next attempt
// records the takeover).
func TestSweepRuns(t *testing.T) {
	s, _ := shared(t)
	ctx := context.Background()
	e := newEngine(t, s, registry(t), "w", nil, func(e *Engine) { e.LeaseTTL = time.Minute })
	now := time.Now()
	old := now.Add(-time.Hour)
	start := func(k state.TableKey, typ maintenance.JobType, trigger string, at time.Time) int64 {
		t.Helper()
		id, err := s.StartRun(ctx, state.Run{Table: k, Type: typ, Trigger: trigger, Started: at})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	start(key(1), maintenance.Compaction, "schedule", old)    // abandoned
	start(key(2), maintenance.Compaction, "schedule", old)    // lease held
	start(key(3), maintenance.Compaction, TriggerCLI, old)    // one-shot run
	start(key(4), maintenance.Compaction, "api", now)         // young
	start(key(5), maintenance.Compaction, "schedule", old)    // queued again
	start(key(6), maintenance.SnapshotManagement, "api", old) // another type queued
	if ok, err := s.AcquireLease(ctx, leaseName(key(2)), "other/1/1", now, time.Hour); err != nil || !ok {
		t.Fatalf("lease: %v %v", ok, err)
	}
	enqueue(t, e, key(5), maintenance.Compaction)
	enqueue(t, e, key(6), maintenance.Compaction)
	// A run due tomorrow does not keep today's alive.
	start(key(7), maintenance.Compaction, "schedule", old)
	if _, err := e.Enqueue(ctx, key(7), maintenance.Compaction, "schedule", now.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	n, err := e.SweepRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]state.RunStatus{1: state.Failed, 2: state.Running, 3: state.Running, 4: state.Running, 5: state.Running, 7: state.Failed}
	for i, st := range want {
		if got := lastRun(t, s, key(i), maintenance.Compaction); got.Status != st {
			t.Errorf("run of table %d: %+v, want %s", i, got, st)
		}
	}
	if got := lastRun(t, s, key(6), maintenance.SnapshotManagement); got.Status != state.Failed || got.FailureMessage != OutcomeNotRecorded {
		t.Errorf("run of table 6: %+v", got)
	}
	if n != 3 {
		t.Fatalf("swept %d runs", n)
	}
	// Once the lease is given up, the run is abandoned.
	if err := s.ReleaseLease(ctx, leaseName(key(2)), "other/1/1"); err != nil {
		t.Fatal(err)
	}
	if n, err := e.SweepRuns(ctx); err != nil || n != 1 {
		t.Fatalf("second sweep: %d %v", n, err)
	}
}

// The daemon sweeps when it starts, not only a lease TTL later.
func TestSweepRunsAtStart(t *testing.T) {
	s, _ := shared(t)
	ctx := context.Background()
	if _, err := s.StartRun(ctx, state.Run{Table: key(1), Type: maintenance.Compaction, Trigger: "schedule", Started: time.Now().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, s, registry(t), "w", map[maintenance.JobType]Job{}, func(e *Engine) { e.LeaseTTL = time.Hour })
	stop := start(t, e)
	defer stop()
	deadline := time.Now().Add(10 * time.Second)
	for lastRun(t, s, key(1), maintenance.Compaction).Status == state.Running {
		if time.Now().After(deadline) {
			t.Fatal("the run is still Running")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := lastRun(t, s, key(1), maintenance.Compaction); got.FailureMessage != OutcomeNotRecorded {
		t.Fatalf("swept run %+v", got)
	}
}
