package compactor

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/expire"
	"github.com/icekeeper/icekeeper/internal/commit"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// BenchmarkBesideWriter measures compaction against a streaming writer:
// how many runs commit, and how long a run takes from start to commit, for
// writers committing every 10 s, 1 s and 100 ms, on the SQL catalog with
// local disk and on the REST catalog with S3 (SeaweedFS). Side by side, on
// twin tables each with its own writer, the baseline is iceberg-go's
// compaction.Analyze + Table.RewriteDataFiles with the table property
// commit.retry.num-retries=10; icekeeper runs with its defaults. Runs
// alternate between the sides, each side's writer running through its own
// runs only; after each pair, snapshot expiration keeps both tables'
// metadata small, as a daemon would (a writer committing every 100 ms
// makes 36,000 snapshots an hour).
//
//	scripts/bench.sh -bench BesideWriter -benchtime 1x ./compactor
//
// ICEKEEPER_BENCH_STREAMING_RUNS sets the runs per side (default 10).
func BenchmarkBesideWriter(b *testing.B) {
	runs := 10
	if v, err := strconv.Atoi(os.Getenv("ICEKEEPER_BENCH_STREAMING_RUNS")); err == nil && v > 0 {
		runs = v
	}
	for _, path := range []struct {
		name string
		env  func(testing.TB, *iceberg.Schema, iceberg.PartitionSpec, string) (*env, *table.Table)
	}{
		{"sql-local", func(t testing.TB, sc *iceberg.Schema, spec iceberg.PartitionSpec, f string) (*env, *table.Table) {
			home := t.TempDir()
			return newEnvWith(t, configs.Embedded(home), home, sc, spec, f)
		}},
		{"rest-s3", newRESTEnv},
	} {
		for _, interval := range []time.Duration{10 * time.Second, time.Second, 100 * time.Millisecond} {
			b.Run(path.name+"/"+interval.String(), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					ik := newSide(b, path.env, interval, nil)
					ig := newSide(b, path.env, interval, iceberg.Properties{commit.PropNumRetries: "10"})
					for r := 0; r < runs; r++ {
						first, second := ik, ig
						if r%2 == 1 {
							first, second = ig, ik
						}
						first.run(b)
						second.run(b)
						ik.expire(b)
						ig.expire(b)
					}
					if ig.lastErr != "" {
						b.Logf("iceberg-go's last failure: %s", ig.lastErr)
					}
					b.ReportMetric(100*float64(ik.ok)/float64(runs), "icekeeper-success-%")
					b.ReportMetric(100*float64(ig.ok)/float64(runs), "iceberg-go-success-%")
					b.ReportMetric(ik.meanMs(), "icekeeper-ms-to-commit")
					b.ReportMetric(ig.meanMs(), "iceberg-go-ms-to-commit")
					b.ReportMetric(float64(ik.maxMs), "icekeeper-max-ms")
					b.ReportMetric(float64(ig.maxMs), "iceberg-go-max-ms")
					b.ReportMetric(float64(ik.writer.Stats().Retries+ig.writer.Stats().Retries), "writer-retries")
				}
			})
		}
	}
}

// side is one table with its writer and the runs made on it.
type side struct {
	e        *env
	baseline bool
	writer   *testkit.Writer
	retries  int // the writer's lost races over all runs
	ok       int
	lastErr  string // the baseline's last failure
	okMs     int64
	maxMs    int64
}

func newSide(b *testing.B, mk func(testing.TB, *iceberg.Schema, iceberg.PartitionSpec, string) (*env, *table.Table), interval time.Duration, props iceberg.Properties) *side {
	b.StopTimer()
	defer b.StartTimer()
	e, tbl := mk(b, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	if props != nil {
		tbl = e.setProps(tbl, props)
	}
	for i := 0; i < 100; i++ {
		tbl = e.Append(tbl, 50)
	}
	s := &side{e: e, baseline: props != nil}
	s.writer = &testkit.Writer{Load: func(ctx context.Context) (*table.Table, error) { return e.B.LoadTable(ctx, e.ID) },
		Interval: interval, Rows: 50, NextID: 1 << 40, Seed: 11}
	return s
}

// run adds five small files, so that every run has work whatever the
// writer's pace, starts the writer, and compacts once it is in its stride.
// Only one side's writer runs at a time: two writers committing every
// 100 ms are more than SeaweedFS's catalog keeps up with on two cores.
func (s *side) run(b *testing.B) {
	b.StopTimer()
	for i := 0; i < 5; i++ {
		for {
			_, err := testkit.AppendRandom(s.e.Ctx, s.e.Load(), 50, 0, s.e.Rng)
			if err == nil {
				break
			}
			if !commit.IsConflict(err) {
				b.Fatal(err)
			}
		}
	}
	stop := s.writer.Start(s.e.Ctx)
	if s.writer.Interval < 10*time.Second {
		s.writer.Await(2) // a slow writer's first commit is seconds away: no wait
	}
	b.StartTimer()
	begin := time.Now()
	var ok bool
	if s.baseline {
		ok = s.rewriteDataFiles(b)
	} else {
		out, fig := s.e.compact(&Job{MinInputFiles: 2})
		ok = out.Status == state.Successful && fig.Commits > 0
	}
	ms := time.Since(begin).Milliseconds()
	if err := stop(); err != nil {
		b.Fatalf("writer: %v", err)
	}
	if ok {
		s.ok++
		s.okMs += ms
		s.maxMs = max(s.maxMs, ms)
	}
}

// expire expires every snapshot but the newest, outside the timer.
func (s *side) expire(b *testing.B) {
	b.StopTimer()
	defer b.StartTimer()
	r := &jobs.Runner{Store: s.e.Store, Jobs: jobs.Map((&expire.Job{}).Definition())}
	out, err := r.Run(s.e.Ctx, s.e.Target(), maintenance.SnapshotManagement, "bench", jobs.Options{Now: time.Now().Add(1000 * time.Hour)})
	if err != nil || out.Status != state.Successful {
		b.Fatalf("expire between runs: %+v %v", out, err)
	}
}

func (s *side) rewriteDataFiles(b *testing.B) bool {
	tbl := s.e.Load()
	const target = 1 << 20 // as the test env's targetFileSizeMB
	cfg := compaction.DefaultConfig()
	cfg.TargetFileSizeBytes, cfg.MinFileSizeBytes, cfg.MaxFileSizeBytes = target, target*3/4, target*9/5
	cfg.MinInputFiles = 2
	plan, err := compaction.Analyze(s.e.Ctx, tbl, cfg)
	if err != nil {
		b.Fatal(err)
	}
	var groups []table.CompactionTaskGroup
	for _, g := range plan.Groups {
		groups = append(groups, table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes})
	}
	if len(groups) == 0 {
		return false
	}
	_, err = tbl.RewriteDataFiles(s.e.Ctx, groups, table.RewriteDataFilesOptions{GroupOptions: []table.CompactionGroupOption{table.WithCompactionTargetFileSize(target)}})
	if err != nil {
		s.lastErr = err.Error()
	}
	return err == nil
}

func (s *side) meanMs() float64 {
	if s.ok == 0 {
		return 0
	}
	return float64(s.okMs) / float64(s.ok)
}
