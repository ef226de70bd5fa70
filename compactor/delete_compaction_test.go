package compactor

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/internal/rowdigest"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// deleteTable is a table whose partitions each hold big data files (right
// for the 1 MB target, so no data rewrite takes them) and one small file,
// and position deletes over all of them from many commits.
type deleteTable struct {
	bigRows   int // rows of one append's big files, all partitions together
	parts     int // partitions
	deletes   int // delete commits
	perCommit int // rows each delete commit deletes in each data file
	// oneFileEach makes each delete commit delete in one data file only,
	// so that on v3 the vectors end up in as many Puffin files.
	oneFileEach bool
	// noSmall leaves out the small file, so that no data rewrite runs.
	noSmall bool
}

func (d deleteTable) fill(e *env, tbl *table.Table) *table.Table {
	e.T.Helper()
	first := e.Next
	for range 2 {
		tbl = e.Append(tbl, d.bigRows)
	}
	if !d.noSmall {
		tbl = e.Append(tbl, 20*d.parts) // small: the data rewrite takes it
	}
	last := e.Next - 1
	for k := range d.deletes {
		var ids []int64
		for f := range 3 {
			if d.oneFileEach && f != k%3 {
				continue
			}
			lo := first + int64(f*d.bigRows)
			if f == 2 {
				if !d.noSmall {
					ids = append(ids, last-int64(k)) // in the small file
				}
				continue
			}
			for r := range d.perCommit {
				ids = append(ids, lo+int64(k*d.perCommit+r)*97%int64(d.bigRows))
			}
		}
		tbl = e.PosDelete(tbl, ids...)
	}
	return tbl
}

// deleteShape counts, over the live data files, the delete files applied
// to each (the most), the distinct delete files (Puffin files counted
// once), the rows the data files lose to deletes (visible is how many
// the table shows), and the data files not within the planner's
// well-sized range of the 1 MB target.
func deleteShape(e *env, tbl *table.Table, visible int64) (most, distinct int, deleted int64, misfits []string) {
	e.T.Helper()
	tasks, err := tbl.Scan().PlanFiles(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	files := map[string]bool{}
	for _, t := range rebase.WholeFiles(tasks) {
		pos := planner.PositionDeletes(t)
		most = max(most, len(pos))
		for _, d := range pos {
			files[d.FilePath()] = true
		}
		deleted += t.File.Count()
		if s := t.File.FileSizeBytes(); t.File.Count() > 1000 && (s < 3<<18 || s > 18<<20/10) {
			misfits = append(misfits, t.File.FilePath()+": "+strconv.FormatInt(s, 10)+" bytes")
		}
	}
	return most, len(files), deleted - visible, misfits
}

// checkDeleteCompaction runs compaction and asserts what delete-file
// compaction promises: the same rows now and at the snapshot before, no
// reachable file missing, one delete file per data file (v2) or one Puffin
// file (v3), exactly the deleted rows' positions written, and a second run
// with nothing to do.
func (e *env) checkDeleteCompaction(job *Job, v3 bool) *Figures {
	e.T.Helper()
	before := e.Load()
	fpBefore := e.Rows(before, 0)
	snapBefore := before.CurrentSnapshot().SnapshotID
	mostBefore, filesBefore, _, misfits := deleteShape(e, before, fpBefore.Rows)
	if len(misfits) > 0 {
		e.T.Fatalf("the test's big files are not well-sized, so a data rewrite may take them: %v", misfits)
	}
	if !v3 && mostBefore < 2 {
		e.T.Fatalf("the test's data files have at most %d delete files each; it needs more", mostBefore)
	}
	e.opts.DryRun = true
	_, dry := e.compact(job)
	e.opts.DryRun = false
	if len(dry.DeletePlan) == 0 || !strings.Contains(dry.Text(), "would be rewritten into") || e.Load().CurrentSnapshot().SnapshotID != snapBefore {
		e.T.Fatalf("the dry run planned no delete rewrite, or changed the table:\n%s", dry.Text())
	}
	out, fig := e.compact(job)
	if out.Status != state.Successful {
		e.T.Fatalf("compaction: %s: %s", out.Status, out.FailureMessage)
	}
	if fig.DeleteGroupsCommitted == 0 {
		e.T.Fatalf("no deletes were compacted:\n%s", fig.Text())
	}
	after := e.checkSameRows(fpBefore, snapBefore)
	most, files, deleted, _ := deleteShape(e, after, fpBefore.Rows)
	if most != 1 {
		e.T.Errorf("a data file has %d delete files after, want 1 (%d before)", most, mostBefore)
	}
	if files >= filesBefore {
		e.T.Errorf("%d delete files after, %d before", files, filesBefore)
	}
	if v3 && files != fig.DeleteGroupsCommitted {
		e.T.Errorf("%d Puffin and delete files after for %d partitions, want one each (%d before)", files, fig.DeleteGroupsCommitted, filesBefore)
	}
	if fig.PositionsOut != deleted {
		e.T.Errorf("%d positions written; the data files lose %d rows to position deletes", fig.PositionsOut, deleted)
	}
	// Each delete rewrite claims the position-delete rows it read and
	// wrote, read back: the same ones, as many as it wrote.
	var claimed int64
	for s := after.CurrentSnapshot(); s != nil && s.SnapshotID != snapBefore; s = after.SnapshotByID(*s.ParentSnapshotID) {
		p := s.Summary.Properties
		if p[rebase.DeletesReadProperty] == "" {
			continue
		}
		d, err := rowdigest.Parse(p[rebase.DeletesReadProperty])
		if err != nil || p[rebase.DeletesWrittenProperty] != p[rebase.DeletesReadProperty] {
			e.T.Fatalf("snapshot %d claims %v (%v)", s.SnapshotID, p, err)
		}
		claimed += d.Count
	}
	if claimed != fig.PositionsOut {
		e.T.Errorf("the delete rewrites claim %d position-delete rows, they wrote %d", claimed, fig.PositionsOut)
	}
	// The new deletes are scoped to one file each, so the planner knows
	// how many rows of each file they delete.
	sc, err := scan(e.Ctx, after, false)
	if err != nil {
		e.T.Fatal(err)
	}
	var known int64
	for _, f := range sc.files {
		known += f.DeletedRows
	}
	if known != deleted {
		e.T.Errorf("the planner knows of %d deleted rows, the data files lose %d", known, deleted)
	}
	if got, want := after.CurrentSnapshot().Summary.Operation, table.OpReplace; got != want {
		e.T.Errorf("snapshot operation %s, want %s", got, want)
	}
	live := 0
	for _, err := range rebase.LiveEntries(e.Ctx, after, iceberg.ManifestContentDeletes) {
		if err != nil {
			e.T.Fatal(err)
		}
		live++
	}
	if s := after.CurrentSnapshot().Summary.Properties["total-delete-files"]; s != strconv.Itoa(live) {
		e.T.Errorf("summary total-delete-files %s, the manifests hold %d", s, live)
	}
	_, again := e.compact(job)
	if len(again.DeletePlan) != 0 || again.DeleteCommits != 0 {
		e.T.Errorf("a second run rewrote deletes again:\n%s", again.Text())
	}
	return fig
}

func TestDeleteFileCompaction(t *testing.T) {
	testkit.SkipUnderRace(t)
	for _, tc := range []struct {
		name   string
		format string
		spec   iceberg.PartitionSpec
		d      deleteTable
	}{
		{"v2 unpartitioned", "2", *iceberg.UnpartitionedSpec, deleteTable{bigRows: 60000, parts: 1, deletes: 6, perCommit: 5}},
		{"v2 in two buckets", "2", iceberg.NewPartitionSpec(tableenv.PF(1, 1000, "id_bucket", iceberg.BucketTransform{NumBuckets: 2})), deleteTable{bigRows: 120000, parts: 2, deletes: 6, perCommit: 5}},
		// Two big files whose vectors are in two Puffin files.
		{"v3 deletion vectors", "3", *iceberg.UnpartitionedSpec, deleteTable{bigRows: 60000, parts: 1, deletes: 6, perCommit: 5, oneFileEach: true}},
		// Two groups whose vectors share one Puffin file: each group's
		// claim is its own.
		{"v3 deletion vectors in two buckets", "3", iceberg.NewPartitionSpec(tableenv.PF(1, 1000, "id_bucket", iceberg.BucketTransform{NumBuckets: 2})), deleteTable{bigRows: 120000, parts: 2, deletes: 6, perCommit: 5, oneFileEach: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, tbl := newEnv(t, tableenv.BaseSchema, tc.spec, tc.format)
			if tc.format == "3" {
				e.Defaults.Knobs.MinDeleteFilesToRewrite = 2
			}
			tc.d.fill(e, tbl)
			fig := e.checkDeleteCompaction(&Job{}, tc.format == "3")
			if fig.GroupsCommitted == 0 {
				t.Errorf("the small file's data rewrite did not commit:\n%s", fig.Text())
			}
			t.Log(fig.Text())
		})
	}
}

// A writer deletes a row of a big file while delete-file compaction
// commits. On v2 its delete file stays beside the rewritten ones and the
// commit lands on the new head; on v3 it replaced the file's deletion
// vector, so the group is dropped and the next run does it. Either way
// the rows are the writer's.
func TestDeleteFileCompactionBesideWriter(t *testing.T) {
	testkit.SkipUnderRace(t)
	for _, tc := range []struct {
		format  string
		dropped int
	}{{"2", 0}, {"3", 1}} {
		t.Run("v"+tc.format, func(t *testing.T) {
			e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, tc.format)
			e.Defaults.Knobs.MinDeleteFilesToRewrite = 2
			d := deleteTable{bigRows: 60000, parts: 1, deletes: 4, perCommit: 5, oneFileEach: tc.format == "3", noSmall: true}
			first := e.Next
			d.fill(e, tbl)
			var during *table.Table
			job := &Job{beforeCommit: func(attempt int) {
				if attempt == 1 {
					during = e.PosDelete(e.Append(e.Load(), 100), first+59999)
				}
			}}
			_, fig := e.compact(job)
			if fig.DeleteConflicts == 0 || fig.DeleteGroupsDropped != tc.dropped || fig.DeleteGroupsCommitted != 1-tc.dropped {
				t.Fatalf("want %d groups dropped after a conflict:\n%s", tc.dropped, fig.Text())
			}
			want := e.Rows(during, 0)
			if got := e.Rows(e.Load(), 0); !got.Equal(want) {
				t.Fatalf("rows %v, want the writer's %v", got, want)
			}
			if tc.dropped > 0 {
				if _, fig := e.compact(&Job{}); fig.DeleteGroupsCommitted != 1 {
					t.Fatalf("the next run did not rewrite the deletes:\n%s", fig.Text())
				}
				if got := e.Rows(e.Load(), 0); !got.Equal(want) {
					t.Fatalf("rows %v after the next run, want %v", got, want)
				}
			}
			missing, err := tablecheck.MissingFiles(e.Ctx, e.Load())
			if err != nil || len(missing) > 0 {
				t.Fatalf("missing reachable files %v: %v", missing, err)
			}
		})
	}
}

// The same on the REST catalog with SigV4 and S3, with v3's vectors.
func TestDeleteFileCompactionREST(t *testing.T) {
	for _, format := range []string{"2", "3"} {
		t.Run("v"+format, func(t *testing.T) {
			e, tbl := newRESTEnv(t, tableenv.BaseSchema, iceberg.NewPartitionSpec(tableenv.PF(1, 1000, "id_bucket", iceberg.BucketTransform{NumBuckets: 2})), format)
			e.Defaults.Knobs.MinDeleteFilesToRewrite = 2
			deleteTable{bigRows: 120000, parts: 2, deletes: 6, perCommit: 5, oneFileEach: format == "3"}.fill(e, tbl)
			e.checkDeleteCompaction(&Job{}, format == "3")
		})
	}
}

// The dry run's plan leaves out the data files a data rewrite takes, and
// a delete file that also applies to one of those is not among the files
// the rewrite of the others replaces.
func TestPlanDeletesLeavesSharedDeleteFiles(t *testing.T) {
	testkit.SkipUnderRace(t)
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	tbl = deleteTable{bigRows: 60000, parts: 1, deletes: 6, perCommit: 5}.fill(e, tbl)
	sc, err := scan(e.Ctx, tbl, false)
	if err != nil {
		t.Fatal(err)
	}
	small := map[string]bool{}
	for _, task := range sc.tasks {
		if task.File.Count() < 1000 {
			small[task.File.FilePath()] = true
		}
	}
	for _, tc := range []struct {
		name       string
		taken      map[string]bool
		data, kept int
	}{
		{"nothing taken", nil, 3, 0},
		{"the small file taken", small, 2, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			groups, _ := planner.Deletes(tbl.Metadata(), sc.tasks, sc.deletes.Covers, tc.taken, 5)
			if len(groups) != 1 {
				t.Fatalf("%d groups, want 1", len(groups))
			}
			g := groups[0]
			if g.DataFiles != tc.data || g.DeleteFiles != 6 || len(g.Remove) != 6-tc.kept {
				t.Fatalf("%d data files, %d delete files, %d replaced; want %d, 6, %d", g.DataFiles, g.DeleteFiles, len(g.Remove), tc.data, 6-tc.kept)
			}
		})
	}
	if groups, _ := planner.Deletes(tbl.Metadata(), sc.tasks, sc.deletes.Covers, nil, 7); len(groups) != 0 {
		t.Errorf("6 delete files planned against a minimum of 7")
	}
	if groups, _ := planner.Deletes(tbl.Metadata(), sc.tasks, sc.deletes.Covers, nil, 0); len(groups) != 0 {
		t.Errorf("planned with the minimum 0, which turns it off")
	}
}

// A column added between delete commits, and a branch on the snapshot
// before: the branch keeps its delete files and rows, main's rows are
// exact.
func TestDeleteFileCompactionSchemaChangeAndBranch(t *testing.T) {
	testkit.SkipUnderRace(t)
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	tbl = deleteTable{bigRows: 60000, parts: 1, deletes: 3, perCommit: 5}.fill(e, tbl)
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"extra"}, iceberg.PrimitiveTypes.Float64, "", false, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	for k := range 3 {
		tbl = e.PosDelete(tbl, int64(30000+k), int64(90000+k))
	}
	cat, err := e.B.Catalog(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap := tbl.CurrentSnapshot().SnapshotID
	if _, _, err := cat.CommitTable(e.Ctx, tbl.Identifier(), nil,
		[]table.Update{table.NewSetSnapshotRefUpdate("audit", snap, table.BranchRef, 0, 0, 0)}); err != nil {
		t.Fatal(err)
	}
	fig := e.checkDeleteCompaction(&Job{}, false)
	after := e.Load()
	if ref := after.Metadata().SnapshotByName("audit"); ref == nil || ref.SnapshotID != snap {
		t.Fatalf("branch audit moved: %+v", ref)
	}
	if after.CurrentSnapshot().SnapshotID == snap || fig.DeleteGroupsCommitted != 1 {
		t.Fatalf("main did not move:\n%s", fig.Text())
	}
}

// A delete file that cannot be read fails the run with its name; nothing
// is committed, and what the other partition's rewrite wrote is removed.
func TestDeleteFileCompactionUnreadable(t *testing.T) {
	testkit.SkipUnderRace(t)
	e, tbl := newEnv(t, tableenv.BaseSchema, iceberg.NewPartitionSpec(tableenv.PF(1, 1000, "id_bucket", iceberg.BucketTransform{NumBuckets: 2})), "2")
	tbl = deleteTable{bigRows: 120000, parts: 2, deletes: 6, perCommit: 5, noSmall: true}.fill(e, tbl)
	tasks, err := tbl.Scan().PlanFiles(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	// In the partition rewritten last, so that the first one has written
	// its files by then.
	last := tasks[0]
	for _, task := range tasks {
		if planner.PartitionKey(task.File) > planner.PartitionKey(last.File) {
			last = task
		}
	}
	bad := last.DeleteFiles[0].FilePath()
	if err := os.WriteFile(strings.TrimPrefix(bad, "file://"), []byte("not parquet"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := tableenv.CountData(t, tbl.Location())
	head := tbl.CurrentSnapshot().SnapshotID
	r := e.Runner((&Job{Parallelism: 1}).Definition())
	out, err := r.Run(e.Ctx, e.Target(), maintenance.Compaction, "test", e.opts)
	if err != nil || out.Status != state.Failed || !strings.Contains(out.FailureMessage, bad) {
		t.Fatalf("%s %q, %v; want a failure naming %s", out.Status, out.FailureMessage, err, bad)
	}
	if got := e.Load().CurrentSnapshot().SnapshotID; got != head {
		t.Errorf("snapshot %d committed, want none", got)
	}
	if n := tableenv.CountData(t, tbl.Location()); n != files {
		t.Errorf("%d files in data/ after, %d before: outputs left behind", n, files)
	}
}

// A v2 table with position delete files, upgraded to v3, and a deletion
// vector since on one of its two files: the other file's legacy delete
// files become one vector, both vectors are in one Puffin file, and the
// legacy files go.
func TestDeleteFileCompactionUpgradedToV3(t *testing.T) {
	testkit.SkipUnderRace(t)
	e, _ := upgradedToV3(t)
	fig := e.checkDeleteCompaction(&Job{}, true)
	// The first file's 15 legacy positions, and the second's vector's 1:
	// iceberg-go v0.7.0 wrote that vector without the file's 15 legacy
	// positions, which the spec says must be merged into it, and readers
	// may ignore position delete files once a file has a vector (as
	// iceberg-go's does), so those rows were back before the rewrite.
	if fig.PositionsOut != 16 {
		t.Errorf("%d positions written, want 16:\n%s", fig.PositionsOut, fig.Text())
	}
}

// The same, with a writer's first deletion vector on the file whose
// legacy deletes the rewrite turns into one, committed meanwhile: the
// rewrite leaves the partition for the next run, as a data file has at
// most one vector.
func TestDeleteFileCompactionUpgradedToV3BesideWriter(t *testing.T) {
	testkit.SkipUnderRace(t)
	e, first := upgradedToV3(t)
	var during *table.Table
	job := &Job{beforeCommit: func(attempt int) {
		if attempt == 1 {
			during = e.PosDelete(e.Load(), first+59998)
		}
	}}
	_, fig := e.compact(job)
	if fig.DeleteGroupsDropped != 1 || fig.DeleteGroupsCommitted != 0 {
		t.Fatalf("want the partition dropped:\n%s", fig.Text())
	}
	if got, want := e.Rows(e.Load(), 0), e.Rows(during, 0); !got.Equal(want) {
		t.Fatalf("rows %v, want the writer's %v", got, want)
	}
}

// upgradedToV3 is a v2 table of two big files with three commits of
// position deletes, 5 rows in each file each, upgraded to v3, then a
// deletion vector on the second file. It returns the first row's id.
func upgradedToV3(t *testing.T) (*env, int64) {
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	e.Defaults.Knobs.MinDeleteFilesToRewrite = 2
	first := e.Next
	tbl = deleteTable{bigRows: 60000, parts: 1, deletes: 3, perCommit: 5, noSmall: true}.fill(e, tbl)
	tx := tbl.NewTransaction()
	if err := tx.UpgradeFormatVersion(3); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.PosDelete(tbl, first+70000)
	return e, first
}
