package compactor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/commit"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

func smallTable(t *testing.T) (*env, *table.Table) {
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	for i := 0; i < 10; i++ {
		tbl = e.Append(tbl, 200)
	}
	return e, tbl
}

// An equality delete committed while the rewrite runs still applies to the
// rewritten rows: they keep the start's sequence number.
func TestConcurrentEqualityDeleteStillApplies(t *testing.T) {
	e, _ := smallTable(t)
	job := &Job{MinInputFiles: 2, Retry: quickRetry(8)}
	job.beforeCommit = func(attempt int) {
		if attempt == 1 {
			e.EqDelete(e.Load(), 10, 1010, 1999)
		}
	}
	out, fig := e.compact(job)
	if out.Status != state.Successful || fig.CommitAttempts != 2 {
		t.Fatalf("%+v %+v", out, fig)
	}
	got := ids(t, e.Ctx, e.Load())
	for _, id := range []int64{10, 1010, 1999} {
		if got[id] != 0 {
			t.Fatalf("row %d was resurrected by compaction", id)
		}
	}
	if len(got) != 2000-3 {
		t.Fatalf("%d rows, want %d", len(got), 2000-3)
	}
}

// A position delete committed while the rewrite runs touches rows the
// rewrite already copied: the group is dropped, its outputs removed, and
// the delete stands.
func TestConcurrentPositionDeleteDropsGroup(t *testing.T) {
	e, _ := smallTable(t)
	dataDir := strings.TrimPrefix(e.Load().Location(), "file://") + "/data"
	job := &Job{MinInputFiles: 2, Retry: quickRetry(8)}
	job.beforeCommit = func(attempt int) {
		if attempt == 1 {
			e.PosDelete(e.Load(), 7, 1507)
		}
	}
	before := countFiles(t, dataDir)
	out, fig := e.compact(job)
	if out.Status != state.Successful || fig.GroupsDropped != 1 || fig.GroupsCommitted != 0 {
		t.Fatalf("%+v %+v", out, fig)
	}
	got := ids(t, e.Ctx, e.Load())
	if got[7] != 0 || got[1507] != 0 || len(got) != 1998 {
		t.Fatalf("rows wrong after a dropped group: %d rows, 7:%d 1507:%d", len(got), got[7], got[1507])
	}
	// Only the concurrent delete's own file was added to the data directory.
	if after := countFiles(t, dataDir); after != before+1 {
		t.Fatalf("data files %d → %d: outputs of the dropped group were left behind", before, after)
	}
}

// A streaming writer appends and deletes while compaction runs: no row is
// lost, duplicated or resurrected, and compaction gets through.
func TestStreamingWriter(t *testing.T) {
	e, _ := smallTable(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	appended, deleted := map[int64]bool{}, map[int64]bool{}
	nextID := e.Next
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			tbl := e.Load()
			var err error
			if i%3 == 2 {
				victim := int64(1 + (i*37)%2000)
				_, err = tbl.Delete(e.Ctx, iceberg.EqualTo(iceberg.Reference("id"), victim), nil)
				if err == nil {
					mu.Lock()
					deleted[victim] = true
					mu.Unlock()
				}
			} else {
				var n *table.Table
				n, err = appendIDs(e, tbl, nextID, 20)
				if err == nil {
					mu.Lock()
					for id := nextID; id < nextID+20; id++ {
						appended[id] = true
					}
					mu.Unlock()
					nextID += 20
					_ = n
				}
			}
			if err != nil && !errors.Is(err, table.ErrCommitFailed) && !strings.Contains(err.Error(), "requirement failed") {
				t.Error(err)
				return
			}
			time.Sleep(3 * time.Millisecond)
		}
	}()
	succeeded := 0
	for i := 0; i < 3; i++ {
		out, _ := e.compact(&Job{MinInputFiles: 2, Retry: quickRetry(7)})
		if out.Status == state.Successful {
			succeeded++
		} else if out.FailureMessage != commit.MsgStaleMetadata {
			t.Errorf("compaction %d: %+v", i, out)
		}
	}
	close(stop)
	wg.Wait()
	if succeeded == 0 {
		t.Fatal("compaction never got through the streaming writer")
	}
	got := ids(t, e.Ctx, e.Load())
	for id := int64(1); id <= 2000; id++ {
		want := 1
		if deleted[id] {
			want = 0
		}
		if got[id] != want {
			t.Fatalf("row %d appears %d times, want %d", id, got[id], want)
		}
	}
	for id := range appended {
		if got[id] != 1 {
			t.Fatalf("appended row %d appears %d times", id, got[id])
		}
	}
	if len(got) != 2000-len(deleted)+len(appended) {
		t.Fatalf("%d rows, want %d", len(got), 2000-len(deleted)+len(appended))
	}
}

func appendIDs(e *env, tbl *table.Table, first int64, n int) (*table.Table, error) {
	mu := &e.rngMu
	mu.Lock()
	defer mu.Unlock()
	return testkit.AppendRandom(e.Ctx, tbl, n, first, e.Rng)
}

// A cancellation right before the commit (a crash at the last moment)
// leaves the table as it was and no outputs behind.
func TestCancelBeforeCommit(t *testing.T) {
	e, tbl := smallTable(t)
	loc := tbl.MetadataLocation()
	fp := e.Rows(tbl, 0)
	dataDir := strings.TrimPrefix(tbl.Location(), "file://") + "/data"
	before := countFiles(t, dataDir)
	ctx, cancel := context.WithCancel(e.Ctx)
	job := &Job{MinInputFiles: 2}
	job.beforeCommit = func(int) { cancel() }
	r := e.Runner(job.Definition())
	out, err := r.Run(ctx, e.Target(), maintenance.Compaction, "test", jobs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != state.Failed {
		t.Fatalf("cancelled run: %+v", out)
	}
	after := e.Load()
	if after.MetadataLocation() != loc || !e.Rows(after, 0).Equal(fp) {
		t.Fatal("a cancelled compaction changed the table")
	}
	if n := countFiles(t, dataDir); n != before {
		t.Fatalf("data files %d → %d after a cancelled run", before, n)
	}
}

// A corrupt data file fails the run: nothing committed, outputs removed.
func TestCorruptDataFile(t *testing.T) {
	e, tbl := smallTable(t)
	loc := tbl.MetadataLocation()
	tasks, err := tbl.Scan().PlanFiles(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	victim := strings.TrimPrefix(tasks[3].File.FilePath(), "file://")
	if err := os.WriteFile(victim, []byte("not parquet"), 0o644); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Dir(victim)
	before := countFiles(t, dataDir)
	out, _ := e.compact(&Job{MinInputFiles: 2})
	if out.Status != state.Failed || !strings.Contains(out.FailureMessage, "nothing committed") {
		t.Fatalf("%+v", out)
	}
	if e.Load().MetadataLocation() != loc {
		t.Fatal("a failed compaction committed")
	}
	if n := countFiles(t, dataDir); n != before {
		t.Fatalf("data files %d → %d: outputs left behind", before, n)
	}
}

// Without a sort order, sort and z-order fail with a reason instead of
// silently binpacking.
func TestStrategiesNeedASortOrder(t *testing.T) {
	e, _ := smallTable(t)
	for _, strat := range []maintenance.Strategy{maintenance.StrategySort, maintenance.StrategyZOrder} {
		k := e.Target().Key()
		if err := e.Store.PutTableConfig(e.Ctx, k, maintenance.Compaction, maintenance.Config{Status: maintenance.Enabled,
			Settings: &maintenance.CompactionSettings{Strategy: strat}}); err != nil {
			t.Fatal(err)
		}
		loc := e.Load().MetadataLocation()
		out, _ := e.compact(&Job{MinInputFiles: 2})
		if out.Status != state.Failed || !strings.Contains(out.FailureMessage, "needs a table sort order") || e.Load().MetadataLocation() != loc {
			t.Errorf("strategy %s: %+v", strat, out)
		}
	}
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// Files younger than the minimum file age are left to the writer; once
// they are old enough they are compacted.
func TestMinimumFileAge(t *testing.T) {
	e, _ := smallTable(t)
	e.Defaults.Knobs.MinFileAgeMinutes = 60
	run := func(now time.Time) (jobs.Outcome, *Figures) {
		r := e.Runner((&Job{MinInputFiles: 2}).Definition())
		out, err := r.Run(e.Ctx, e.Target(), maintenance.Compaction, "test", jobs.Options{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return out, out.Figures.(*Figures)
	}
	out, fig := run(time.Now())
	if out.Status != state.Successful || fig.GroupsPlanned != 0 || len(fig.Plan.Skipped) == 0 || !strings.Contains(fig.Plan.Skipped[0].Reason, "minimum file age") {
		t.Fatalf("young files: %+v %+v", out, fig.Plan)
	}
	out, fig = run(time.Now().Add(2 * time.Hour))
	if out.Status != state.Successful || fig.GroupsCommitted == 0 {
		t.Fatalf("old files: %+v %+v", out, fig)
	}
}

// A commit that lands but whose answer is lost must not make compaction
// delete the files it just committed: here every commit "fails" after
// landing, and every reachable file must still exist.
func TestLostCommitAnswerKeepsOutputs(t *testing.T) {
	e, tbl := smallTable(t)
	fp := e.Rows(tbl, 0)
	job := &Job{MinInputFiles: 2, Retry: quickRetry(1)}
	job.afterCommit = func(err error) error {
		if err == nil {
			return errors.New("connection reset by peer (the commit landed)")
		}
		return err
	}
	out, fig := e.compact(job)
	if out.Status != state.Successful || fig.GroupsCommitted == 0 || fig.GroupsDropped != 0 {
		t.Fatalf("a landed commit should count as committed: %+v %+v", out, fig)
	}
	after := e.Load()
	if !e.Rows(after, 0).Equal(fp) {
		t.Fatal("rows changed")
	}
	missing, err := tablecheck.MissingFiles(e.Ctx, after)
	if err != nil || len(missing) > 0 {
		t.Fatalf("compaction deleted files its own landed commit references: %v %v", missing, err)
	}
}

// quickRetry is a commit retry policy that retries n times at once.
func quickRetry(n int) *commit.Policy {
	return &commit.Policy{Retries: n, MinWait: time.Millisecond, MaxWait: time.Millisecond, Timeout: time.Minute}
}

// A table dropped and created again under its name after the manifest
// rewrite committed, while the data rewrite runs (the data stage planned
// on the table the manifest commit returned): nothing the run wrote for
// the old table reaches the new one, whose rows and files stay as its
// own append left them; on local disk and on S3.
func TestTableCreatedAgainBeforeTheDataCommit(t *testing.T) {
	for _, c := range bothStores() {
		t.Run(c.name, func(t *testing.T) {
			e, tbl := c.env(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
			for i := 0; i < 20; i++ {
				tbl = e.Append(tbl, 100)
			}
			old := tbl.Metadata().TableUUID()
			var fresh *table.Table
			job := &Job{MinInputFiles: 2, Retry: quickRetry(8)}
			job.beforeCommit = func(attempt int) {
				if attempt != 1 {
					return
				}
				fresh = e.Append(e.Recreate(tableenv.BaseSchema), 50)
			}
			out, fig := e.compact(job)
			if fig == nil || fig.ManifestsRewritten == 0 || fresh == nil {
				t.Fatalf("the manifest rewrite did not commit before the data commit: %s %s %+v", out.Status, out.FailureMessage, fig)
			}
			if fig.GroupsCommitted != 0 {
				t.Fatalf("%d groups committed across a drop and create: %s %s", fig.GroupsCommitted, out.Status, out.FailureMessage)
			}
			now := e.Load()
			if now.Metadata().TableUUID() == old || len(now.Metadata().Snapshots()) != 1 ||
				now.CurrentSnapshot().SnapshotID != fresh.CurrentSnapshot().SnapshotID {
				t.Fatalf("the new table changed: %d snapshots, head %d, want its append's %d",
					len(now.Metadata().Snapshots()), now.CurrentSnapshot().SnapshotID, fresh.CurrentSnapshot().SnapshotID)
			}
			if got := ids(t, e.Ctx, now); len(got) != 50 {
				t.Fatalf("the new table holds %d rows, want its 50", len(got))
			}
			if missing, err := tablecheck.MissingFiles(e.Ctx, now); err != nil || len(missing) > 0 {
				t.Fatalf("the new table misses %v (%v)", missing, err)
			}
			t.Logf("%s (%s): %d groups dropped", out.Status, out.FailureMessage, fig.GroupsDropped)
		})
	}
}

// A table dropped and created again under its name while the manifest
// rewrite commits, the new one with as many small manifests of its own:
// the rewrite, staged on the old table's manifests, commits nothing on the
// new one — not even a merge of the new one's manifests — and the new
// table stays as its appends left it, every file of it there; on local
// disk and on S3.
func TestTableCreatedAgainBeforeTheManifestCommit(t *testing.T) {
	for _, c := range bothStores() {
		t.Run(c.name, func(t *testing.T) {
			e, tbl := c.env(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
			for range 20 {
				tbl = e.Append(tbl, 10)
			}
			var fresh *table.Table
			job := &Job{MinInputFiles: 1000, Retry: quickRetry(8)}
			job.beforeManifestCommit = func(attempt int) {
				if attempt != 1 {
					return
				}
				fresh = e.Recreate(tableenv.BaseSchema)
				for range 20 {
					fresh = e.Append(fresh, 5)
				}
			}
			out, fig := e.compact(job)
			if fresh == nil || fig.ManifestsRewritten != 0 || fig.GroupsCommitted != 0 {
				t.Fatalf("%s %s: %d manifests rewritten, %d groups committed across a drop and create", out.Status, out.FailureMessage, fig.ManifestsRewritten, fig.GroupsCommitted)
			}
			now := e.Load()
			if now.CurrentSnapshot().SnapshotID != fresh.CurrentSnapshot().SnapshotID || len(now.Metadata().Snapshots()) != 20 {
				t.Fatalf("the new table changed: head %d, %d snapshots; want its own 20 appends'", now.CurrentSnapshot().SnapshotID, len(now.Metadata().Snapshots()))
			}
			if got := ids(t, e.Ctx, now); len(got) != 100 {
				t.Fatalf("the new table holds %d rows, want its 100", len(got))
			}
			if missing, err := tablecheck.MissingFiles(e.Ctx, now); err != nil || len(missing) > 0 {
				t.Fatalf("the new table misses %v (%v)", missing, err)
			}
		})
	}
}
