package compactor

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/commit"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
)

// A writer that rewrites the table's manifests while compaction commits
// (Flink's merge-append does, every so many commits) moves the inputs into
// manifests compaction has not seen: the rebase reads them, marks the
// inputs deleted there, and the rows stay exact.
func TestRebaseOnRewrittenManifests(t *testing.T) {
	e, tbl := smallTable(t)
	if n := len(manifestsOf(t, e, tbl)); n < 10 {
		t.Fatalf("%d manifests, want one per append", n)
	}
	fp := e.Rows(tbl, 0)
	job := &Job{MinInputFiles: 2, Retry: quickRetry(8)}
	job.beforeCommit = func(attempt int) {
		if attempt != 1 {
			return
		}
		tx := e.Load().NewTransaction()
		if _, err := tx.RewriteManifests(e.Ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Commit(e.Ctx); err != nil {
			t.Fatal(err)
		}
	}
	out, fig := e.compact(job)
	if out.Status != state.Successful || fig.GroupsCommitted == 0 || fig.Conflicts != 1 || fig.Rebases == 0 {
		t.Fatalf("%+v %+v", out, fig)
	}
	// Another commit came between the plan and this one: the run cannot
	// tell from its plan what the table holds, so it does not settle it.
	if out.Evaluation != nil {
		t.Fatalf("a run rebased on another commit recorded an evaluation: %+v", out.Evaluation)
	}
	after := e.Load()
	if !e.Rows(after, 0).Equal(fp) {
		t.Fatal("rows changed across a rebase on rewritten manifests")
	}
	if missing, err := tablecheck.MissingFiles(e.Ctx, after); err != nil || len(missing) > 0 {
		t.Fatalf("missing %v %v", missing, err)
	}
	// The inputs are gone from the table: one live file is left.
	live := 0
	for _, m := range manifestsOf(t, e, after) {
		entries, err := m.FetchEntries(mustFS(t, e, after), true)
		if err != nil {
			t.Fatal(err)
		}
		live += len(entries)
	}
	if live != fig.OutputFiles {
		t.Fatalf("%d live data files, want the %d outputs", live, fig.OutputFiles)
	}
}

// A position delete committed meanwhile in a partition compaction does not
// touch leaves every group alone.
func TestConcurrentDeleteElsewhere(t *testing.T) {
	spec := iceberg.NewPartitionSpec(tableenv.PF(1, 1000, "id_trunc", iceberg.TruncateTransform{Width: 1000}))
	e, tbl := newEnv(t, tableenv.BaseSchema, spec, "2")
	for i := 0; i < 8; i++ {
		tbl = e.Append(tbl, 100)
	}
	job := &Job{MinInputFiles: 2, Retry: quickRetry(8)}
	const newID = 5000 // partition id_trunc=5000, which has no group
	job.beforeCommit = func(attempt int) {
		if attempt != 1 {
			return
		}
		e.Next = newID
		e.PosDelete(e.Append(e.Load(), 20), newID)
	}
	out, fig := e.compact(job)
	if out.Status != state.Successful || fig.GroupsDropped != 0 || fig.GroupsCommitted != 1 || fig.Conflicts == 0 {
		t.Fatalf("a delete in another partition dropped groups: %+v %+v", out, fig)
	}
	if n := count(e.liveDeletes(), iceberg.EntryContentPosDeletes); n != 1 {
		t.Fatalf("%d position delete files, want the concurrent one", n)
	}
	got := ids(t, e.Ctx, e.Load())
	if got[newID] != 0 || len(got) != 800+19 {
		t.Fatalf("%d rows, row %d: %d; want 819 and the deleted row gone", len(got), newID, got[newID])
	}
}

// A deletion vector committed meanwhile on an input drops its group (v3).
func TestConcurrentDeletionVectorDropsGroup(t *testing.T) {
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "3")
	for i := 0; i < 6; i++ {
		tbl = e.Append(tbl, 100)
	}
	job := &Job{MinInputFiles: 2, Retry: quickRetry(8)}
	job.beforeCommit = func(attempt int) {
		if attempt == 1 {
			e.PosDelete(e.Load(), 42)
		}
	}
	out, fig := e.compact(job)
	if out.Status != state.Successful || fig.GroupsDropped != 1 || fig.GroupsCommitted != 0 || !strings.Contains(fig.Dropped[0], "position delete") {
		t.Fatalf("%+v %+v", out, fig)
	}
	if got := ids(t, e.Ctx, e.Load()); got[42] != 0 || len(got) != 599 {
		t.Fatalf("%d rows, row 42: %d", len(got), got[42])
	}
}

// A table rolled back past the run's start while it commits: nothing
// planned on the old state commits, and its outputs are removed.
func TestRollbackDuringCommit(t *testing.T) {
	e, tbl := smallTable(t)
	old := tbl.Metadata().Snapshots()[3].SnapshotID
	job := &Job{MinInputFiles: 2, Retry: quickRetry(8)}
	job.beforeCommit = func(attempt int) {
		if attempt != 1 {
			return
		}
		cat, err := e.B.Catalog(e.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		cur := e.Load().CurrentSnapshot().SnapshotID
		if _, _, err := cat.CommitTable(e.Ctx, table.Identifier{"t", "x"},
			[]table.Requirement{table.AssertRefSnapshotID(table.MainBranch, &cur)},
			[]table.Update{table.NewSetSnapshotRefUpdate(table.MainBranch, old, table.BranchRef, 0, 0, 0)}); err != nil {
			t.Fatal(err)
		}
	}
	want := e.Rows(tbl, old)
	dataDir := strings.TrimPrefix(tbl.Location(), "file://") + "/data"
	before := countFiles(t, dataDir)
	out, fig := e.compact(job)
	if out.Status != state.Successful || fig.GroupsCommitted != 0 || fig.GroupsDropped != fig.GroupsPlanned || !strings.Contains(fig.Dropped[0], "rolled back") {
		t.Fatalf("%+v %+v", out, fig)
	}
	if !e.Rows(e.Load(), 0).Equal(want) {
		t.Fatal("rows are not the rolled-back snapshot's")
	}
	if after := countFiles(t, dataDir); after != before {
		t.Fatalf("data files %d → %d: outputs left behind", before, after)
	}
}

// Only a true conflict reads as stale metadata; any other commit error
// keeps its cause in the failure message, and nothing is committed or left
// behind.
func TestCommitErrorsKeepTheirCause(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		err        error
	}{
		{"storage failure", "commit compaction of t.x: write metadata: disk full", errors.New("write metadata: disk full")},
		{"conflict every time", commit.MsgStaleMetadata, table.ErrCommitFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, tbl := smallTable(t)
			loc := tbl.MetadataLocation()
			meta := strings.TrimPrefix(tbl.Location(), "file://") + "/metadata"
			metaBefore := countFiles(t, meta)
			job := &Job{MinInputFiles: 2, Retry: quickRetry(3)}
			job.commitTable = func(context.Context, table.Identifier, []table.Requirement, []table.Update) (table.Metadata, string, error) {
				return nil, "", tc.err
			}
			out, fig := e.compact(job)
			if out.Status != state.Failed || out.FailureMessage != tc.want {
				t.Fatalf("failure %q, want %q", out.FailureMessage, tc.want)
			}
			if tc.err == table.ErrCommitFailed && fig.CommitAttempts != 4 {
				t.Fatalf("%d attempts, want 4", fig.CommitAttempts)
			}
			if e.Load().MetadataLocation() != loc {
				t.Fatal("the table changed")
			}
			if n := countFiles(t, meta); n != metaBefore {
				t.Fatalf("metadata files %d → %d: manifests of a failed commit left behind", metaBefore, n)
			}
		})
	}
}

func manifestsOf(t *testing.T, e *env, tbl *table.Table) []iceberg.ManifestFile {
	t.Helper()
	ms, err := tbl.CurrentSnapshot().Manifests(mustFS(t, e, tbl))
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func mustFS(t *testing.T, e *env, tbl *table.Table) icebergio.IO {
	t.Helper()
	fs, err := tbl.FS(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// Once a commit has lost a race, the table is busy: the rest of the run
// commits in smaller batches, each of which keeps what it committed.
func TestBusyTableCommitsSmallerBatches(t *testing.T) {
	spec := iceberg.NewPartitionSpec(tableenv.PF(1, 1000, "id_bucket", iceberg.BucketTransform{NumBuckets: 40}))
	e, tbl := newEnv(t, tableenv.BaseSchema, spec, "2")
	for i := 0; i < 4; i++ {
		tbl = e.Append(tbl, 1000) // 40 partitions of 4 files
	}
	fp := e.Rows(tbl, 0)
	job := &Job{MinInputFiles: 2, BatchGroups: 10, BusyBatchGroups: 3, Retry: quickRetry(8)}
	raced := false
	job.beforeCommit = func(int) {
		if !raced {
			raced = true
			e.Next = 1 << 30
			e.Append(e.Load(), 10)
		}
	}
	out, fig := e.compact(job)
	if out.Status != state.Successful || fig.GroupsPlanned != 40 || fig.GroupsCommitted != 40 {
		t.Fatalf("%+v %+v", out, fig)
	}
	// The first batch of 10 lost once; the other 30 groups went 3 at a time.
	if fig.Commits != 1+10 || fig.Conflicts != 1 {
		t.Fatalf("%d commits (%d conflicts), want 11", fig.Commits, fig.Conflicts)
	}
	if got := e.Rows(e.Load(), 0); got.Rows != fp.Rows+10 {
		t.Fatalf("%d rows, want %d", got.Rows, fp.Rows+10)
	}
}
