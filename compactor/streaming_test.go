package compactor

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
)

// newRESTEnv is newEnv on the Iceberg REST catalog with SigV4 and S3
// (SeaweedFS), the path users of table buckets take.
func newRESTEnv(t testing.TB, sc *iceberg.Schema, spec iceberg.PartitionSpec, format string) (*env, *table.Table) {
	t.Helper()
	e, tbl := tableenv.NewREST(t, sc, spec, format)
	return &env{Env: e}, tbl
}

// streamingRuns is how many compactions run beside the writer; the issue's
// acceptance figure is 20 (ICEKEEPER_STREAMING_RUNS=20), CI runs fewer.
func streamingRuns(t *testing.T) int {
	if v := os.Getenv("ICEKEEPER_STREAMING_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("ICEKEEPER_STREAMING_RUNS=%q", v)
		}
		return n
	}
	return 4
}

// Beside a writer that appends a batch every 100 ms, as a low-latency
// Flink job does, every compaction run commits, and so does its manifest
// rewrite where the writer's commits left enough small manifests (it is
// rebased like the data commit); the visible rows are
// exactly those before plus those the writer committed, no reachable file
// is missing, and the writer committed every batch it began.
func TestBesideStreamingWriter(t *testing.T) {
	testkit.SkipUnderRace(t)
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	besideWriter(t, e, tbl, 300, streamingRuns(t))
}

// The same on the REST catalog with SigV4 and S3.
func TestBesideStreamingWriterREST(t *testing.T) {
	e, tbl := newRESTEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	besideWriter(t, e, tbl, 150, streamingRuns(t))
}

func besideWriter(t *testing.T, e *env, tbl *table.Table, files, runs int) {
	tbl = e.AppendCommits(tbl, files, 50)
	want := e.Rows(tbl, 0)
	w := &testkit.Writer{
		Load:     func(ctx context.Context) (*table.Table, error) { return e.B.LoadTable(ctx, e.ID) },
		Interval: 100 * time.Millisecond, Rows: 50, NextID: 1 << 40, Seed: 3,
	}
	stop := w.Start(e.Ctx)
	for i := 0; i < runs; i++ {
		// Let the writer add a few files, so that every run has work and
		// the writer commits while it runs.
		w.Await(5)
		out, fig := e.compact(&Job{MinInputFiles: 2})
		if out.Status != state.Successful || fig.Commits == 0 {
			t.Errorf("run %d beside the writer: %s %s, %d commits", i, out.Status, out.FailureMessage, fig.Commits)
			continue
		}
		t.Logf("run %d: %d files -> %d in %d commits, %d attempts (%d lost, %d rebased), %d dropped, rewrite %d ms, commit %d ms; manifests %d small, %d rewritten (%d lost, %d rebased) in %d ms",
			i, fig.InputFiles, fig.OutputFiles, fig.Commits, fig.CommitAttempts, fig.Conflicts, fig.Rebases, fig.GroupsDropped, fig.RewriteMs, fig.CommitMs,
			fig.ManifestsSmall, fig.ManifestsRewritten, fig.ManifestConflicts, fig.ManifestRebases, fig.ManifestMs)
		if fig.ManifestsSmall >= fig.ManifestsMinimum && (fig.ManifestsRewritten == 0 || fig.ManifestsDeferred) {
			t.Errorf("run %d beside the writer: the manifest rewrite of %d small manifests did not land", i, fig.ManifestsSmall)
		}
	}
	if err := stop(); err != nil {
		t.Fatalf("the writer failed: %v", err)
	}
	st := w.Stats()
	t.Logf("writer: %d batches, %d retries (at most %d for one batch), slowest batch %v", st.Batches, st.Retries, st.MaxRetry, st.Slowest)
	if st.Batches == 0 {
		t.Fatal("the writer committed nothing")
	}
	want.Add(w.Written())
	after := e.Load()
	if got := e.Rows(after, 0); !got.Equal(want) {
		t.Fatalf("visible rows %v, want %v (before plus the writer's)", got, want)
	}
	missing, err := tablecheck.MissingFiles(e.Ctx, after)
	if err != nil || len(missing) > 0 {
		t.Fatalf("reachable files missing: %v %v", missing, err)
	}
}
