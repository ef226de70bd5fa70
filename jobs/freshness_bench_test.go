package jobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// BenchmarkFreshness runs the daemon's pieces (scheduler, River engine,
// runner) beside a writer that commits to one table every Every, with a
// freshness target Target on it and a second table nobody writes to,
// once with events (a notification after each commit, polls every hour)
// and once with polls alone (every quarter of the target), Duration
// each. It reports, per mode:
//
//   - the lag, sampled every second: the age of the oldest commit no
//     successful compaction has taken yet (p95 and max, in seconds);
//   - commit-to-plan: from a commit to the queueing of a run that takes
//     it (0 when one waited already), mean and max;
//   - commit-to-run: from a commit to the start of the run that took it
//     (mean and max);
//   - checks per hour of the second table, unchanged, with the same
//     target (each one metadata read: one GET over S3).
//
// Defaults are scaled down (Target 24s, Every 2s, Duration 90s); the
// issue's figures come from
//
//	ICEKEEPER_FRESHNESS="target=2m every=10s duration=30m" go test -run '^$' -bench Freshness -benchtime 1x -timeout 2h ./jobs/
func BenchmarkFreshness(b *testing.B) {
	target, every, duration := 24*time.Second, 2*time.Second, 90*time.Second
	if v := os.Getenv("ICEKEEPER_FRESHNESS"); v != "" {
		var t, e, d string
		if _, err := fmt.Sscanf(v, "target=%s every=%s duration=%s", &t, &e, &d); err != nil {
			b.Fatalf("ICEKEEPER_FRESHNESS=%q: %v", v, err)
		}
		for _, p := range []struct {
			s string
			d *time.Duration
		}{{t, &target}, {e, &every}, {d, &duration}} {
			var err error
			if *p.d, err = time.ParseDuration(p.s); err != nil {
				b.Fatal(err)
			}
		}
	}
	for range b.N {
		for _, mode := range []string{"events", "polls"} {
			r := freshnessRun(b, mode, target, every, duration)
			b.Logf("%s: lag p95 %.1fs max %.1fs (target %v); commit-to-plan mean %.1fs max %.1fs; commit-to-run mean %.1fs max %.1fs; %d commits; unchanged table: %d checks in %v (%.1f per hour)",
				mode, r.lagP95, r.lagMax, target, r.checkMean, r.checkMax, r.planMean, r.planMax, r.commits, r.idleChecks, duration, r.idlePerHour)
			b.ReportMetric(r.lagP95, mode+"-lag-p95-s")
			b.ReportMetric(r.lagMax, mode+"-lag-max-s")
			b.ReportMetric(r.checkMean, mode+"-commit-to-plan-mean-s")
			b.ReportMetric(r.checkMax, mode+"-commit-to-plan-max-s")
			b.ReportMetric(r.planMean, mode+"-commit-to-run-mean-s")
			b.ReportMetric(r.planMax, mode+"-commit-to-run-max-s")
			b.ReportMetric(r.idlePerHour, mode+"-unchanged-checks/h")
		}
	}
}

type freshnessResult struct {
	lagP95, lagMax, checkMean, checkMax, planMean, planMax, idlePerHour float64
	commits, idleChecks                                                 int
}

func freshnessRun(b *testing.B, mode string, target, every, duration time.Duration) freshnessResult {
	f := newFleet(b, 2)
	hot, idle := f.target(0), f.target(1)
	f.setProperty(b, 0, planner.FreshnessProperty, target.String())
	f.setProperty(b, 1, planner.FreshnessProperty, target.String())
	fresh := &jobs.Freshness{}
	var mu sync.Mutex
	idleChecks := 0
	counting := false
	f.runner.Freshness = fresh
	f.runner.Loaded = func(t jobs.Target, _ *table.Table, _ maintenance.Settings, _ time.Time) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case !counting:
		case t.Key() == idle.Key():
			idleChecks++
		}
	}
	e := &jobs.Engine{Store: f.store, Registry: f.reg, Runner: f.runner, Holder: "bench", Poll: 200 * time.Millisecond}
	if err := e.Init(); err != nil {
		b.Fatal(err)
	}
	// Schedules that do not fire within the run: only freshness queues.
	yearly := "0 0 1 1 *"
	sc := &jobs.Scheduler{Store: f.store, Queue: e, Tables: &jobs.Discovery{Registry: f.reg}, Needs: f.runner.Need,
		Freshness: fresh, FreshTypes: []maintenance.JobType{maintenance.Compaction}, Debounce: min(5*time.Second, every/2),
		Schedules: map[maintenance.JobType]string{maintenance.Compaction: yearly, maintenance.SnapshotManagement: yearly,
			maintenance.UnreferencedFileRemoval: yearly, maintenance.RecordExpiration: yearly, maintenance.Erasure: yearly}}
	if mode == "events" {
		sc.Backstop = time.Hour
	}
	// As the daemon does: a run's end checks its table again.
	f.runner.Observe = func(run state.Run, _ jobs.Outcome) { sc.Notify([]state.TableKey{run.Table}) }
	ctx, stop := context.WithCancel(f.ctx)
	var bg sync.WaitGroup
	bg.Go(func() { _ = sc.Run(ctx) })
	bg.Go(func() { _ = e.Run(ctx, ctx) })
	defer func() { stop(); bg.Wait() }()

	// Let the startup check of both tables pass before counting.
	time.Sleep(3 * time.Second)
	mu.Lock()
	counting = true
	mu.Unlock()

	type commit struct {
		at  time.Time
		seq int64
	}
	var commits []commit
	var lags []float64
	begin := time.Now()
	nextWrite, nextSample := begin, begin
	for time.Since(begin) < duration {
		now := time.Now()
		if !now.Before(nextWrite) {
			if err := testkit.AppendRows(f.ctx, f.b, f.ids[0], 10); err != nil {
				b.Fatal(err)
			}
			// The append is the newest snapshot not icekeeper's: a
			// compaction may have committed since.
			var snap *table.Snapshot
			for _, s := range f.load(b, 0).Metadata().Snapshots() {
				if !planner.ByIcekeeper(s) && (snap == nil || s.SequenceNumber > snap.SequenceNumber) {
					snap = &s
				}
			}
			commits = append(commits, commit{at: time.UnixMilli(snap.TimestampMs), seq: snap.SequenceNumber})
			if mode == "events" {
				sc.Notify([]state.TableKey{hot.Key()}) // what the event route does on the webhook's POST
			}
			nextWrite = nextWrite.Add(every)
		}
		if !now.Before(nextSample) {
			taken := takenSeq(b, f, hot)
			lag := 0.0
			for _, c := range commits {
				if c.seq > taken {
					lag = time.Since(c.at).Seconds()
					break
				}
			}
			lags = append(lags, lag)
			nextSample = nextSample.Add(time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
	elapsed := time.Since(begin)
	mu.Lock()
	counting = false
	r := freshnessResult{commits: len(commits), idleChecks: idleChecks, idlePerHour: float64(idleChecks) / elapsed.Hours()}
	mu.Unlock()

	// Commit-to-plan: how long after each commit a run that takes it
	// was queued; 0 for a commit that lands while such a run waits.
	res, err := e.Client().JobList(f.ctx, river.NewJobListParams().Kinds(jobs.RunArgs{}.Kind()).
		States(rivertype.JobStateCompleted, rivertype.JobStateRunning, rivertype.JobStateScheduled, rivertype.JobStateAvailable).First(10000))
	if err != nil {
		b.Fatal(err)
	}
	var planned []float64
	for _, c := range commits {
		latency := -1.0
		for _, j := range res.Jobs {
			var a jobs.RunArgs
			if json.Unmarshal(j.EncodedArgs, &a) != nil || a.Key() != hot.Key() {
				continue
			}
			starts := j.AttemptedAt == nil || j.AttemptedAt.After(c.at)
			switch {
			case !j.CreatedAt.After(c.at) && starts:
				latency = 0
			case j.CreatedAt.After(c.at) && (latency < 0 || j.CreatedAt.Sub(c.at).Seconds() < latency):
				latency = j.CreatedAt.Sub(c.at).Seconds()
			}
		}
		if latency >= 0 {
			planned = append(planned, latency)
		}
	}
	r.checkMean, r.checkMax = mean(planned), percentile(planned, 1)
	// Commit-to-run, over the commits a run took before the end.
	runs, err := f.store.Runs(f.ctx, hot.Key(), maintenance.Compaction, 10000)
	if err != nil {
		b.Fatal(err)
	}
	slices.Reverse(runs) // oldest first
	var plans []float64
	for _, c := range commits {
		for _, run := range runs {
			if run.Status == state.Successful && run.Started.After(c.at) && baseSeq(run) >= c.seq {
				plans = append(plans, run.Started.Sub(c.at).Seconds())
				break
			}
		}
	}
	r.lagP95, r.lagMax = percentile(lags, 0.95), percentile(lags, 1)
	r.planMean, r.planMax = mean(plans), percentile(plans, 1)
	return r
}

func mean(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m += x / float64(len(xs))
	}
	return m
}

// takenSeq is the highest sequence number a successful compaction of t
// took (its run's base).
func takenSeq(b *testing.B, f *fleet, t jobs.Target) int64 {
	runs, err := f.store.Runs(f.ctx, t.Key(), maintenance.Compaction, 50)
	if err != nil {
		b.Fatal(err)
	}
	var taken int64
	for _, r := range runs {
		if r.Status == state.Successful {
			taken = max(taken, baseSeq(r))
		}
	}
	return taken
}

func baseSeq(r state.Run) int64 {
	var fig struct {
		Base *planner.Base `json:"base"`
	}
	if json.Unmarshal(r.Metrics, &fig) != nil || fig.Base == nil {
		return 0
	}
	return fig.Base.SequenceNumber
}

// percentile is the q-th quantile of xs by the nearest rank (0: none).
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
