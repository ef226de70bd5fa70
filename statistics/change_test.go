package statistics

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/orphan"
	"github.com/icekeeper/icekeeper/planner"
)

// blobProperty is a property of the current statistics file's first
// blob.
func blobProperty(t *testing.T, tbl *table.Table, key string) string {
	t.Helper()
	for f := range tbl.Metadata().Statistics() {
		if f.SnapshotID == tbl.CurrentSnapshot().SnapshotID {
			return f.BlobMetadata[0].Properties[key]
		}
	}
	t.Fatal("no statistics file for the current snapshot")
	return ""
}

// Row-level deletes read nothing and make each ndv an upper bound whose
// drift is recorded beside it, until the rows removed since the last full
// computation pass maxDriftPercent (10%), when the run computes afresh.
func TestDeletesDriftThenRecompute(t *testing.T) {
	e, tbl := newEnv(t)
	for range 4 {
		tbl = e.gen.append(t, e.Ctx, tbl, 1_000)
	}
	e.stats()

	ids := func(from, n int64) []int64 {
		var out []int64
		for i := range n {
			out = append(out, from+i)
		}
		return out
	}
	e.PosDelete(e.Load(), ids(1, 200)...) // 5% of the rows
	fig := e.stats()
	if fig.Full || fig.DataFilesRead != 0 {
		t.Fatalf("after a 5%% delete: full %v (%s), %d files read", fig.Full, fig.Reason, fig.DataFilesRead)
	}
	tbl = e.Load()
	drift, err := strconv.ParseFloat(blobProperty(t, tbl, planner.DriftProperty), 64)
	if err != nil || drift < 0.05 || drift > 0.06 {
		t.Errorf("drift %q after removing 200 of 4000 rows", blobProperty(t, tbl, planner.DriftProperty))
	}
	if got := blobProperty(t, tbl, planner.RemovedSinceProperty); got != "200" {
		t.Errorf("rows removed since the recompute: %s, want 200", got)
	}

	e.PosDelete(e.Load(), ids(1_001, 300)...) // 500 of 3,500 left: past 10%
	fig = e.stats()
	if !fig.Full || fig.DataFilesRead == 0 || !strings.Contains(fig.Reason, "more than 10%") {
		t.Fatalf("past the drift: full %v (%s), %d files read", fig.Full, fig.Reason, fig.DataFilesRead)
	}
	if got := blobProperty(t, e.Load(), planner.RemovedSinceProperty); got != "0" {
		t.Errorf("rows removed since the recompute: %s after it, want 0", got)
	}
}

// A manifest that reads cleanly but short fails the run and commits
// nothing: a sketch missing the lost files' values would be written as
// the table's.
func TestDamagedManifestFailsTheRun(t *testing.T) {
	e, tbl := newEnv(t)
	tbl = e.gen.append(t, e.Ctx, tbl, 50)
	tbl, err := testkit.AddCopies(e.Ctx, tbl, 300)
	if err != nil {
		t.Fatal(err)
	}
	path, _, err := testkit.LargestManifest(e.Ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	testkit.DamageFor(t, e.Ctx, tbl, path, func(b []byte) ([]byte, error) { return testkit.CutAfterBlocks(b, 1) })
	out, err := e.runner.Run(e.Ctx, e.Target(), maintenance.Statistics, "test", jobsNow())
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != "Failed" || !strings.Contains(out.FailureMessage, "damaged") {
		t.Fatalf("run on a damaged manifest: %s (%s)", out.Status, out.FailureMessage)
	}
	for range e.Load().Metadata().Statistics() {
		t.Fatal("a failed run committed statistics")
	}
}

// iceberg-go loads the table after the commit and scans every row.
func TestTableLoadsAfterCommit(t *testing.T) {
	e, tbl := newEnv(t)
	tbl = e.gen.append(t, e.Ctx, tbl, 300)
	e.stats()
	tbl = e.Load()
	n := 0
	_, itr, err := tbl.Scan(table.WithSelectedFields("id")).ToArrowRecords(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	for rec, err := range itr {
		if err != nil {
			t.Fatal(err)
		}
		n += int(rec.NumRows())
		rec.Release()
	}
	if n != 300 {
		t.Errorf("scan after the commit: %d rows, want 300", n)
	}
}

// A writer that commits while a run computes does not make the run fail
// or describe rows it did not read: the statistics are committed for the
// snapshot the run read, now an ancestor of the current one, and the next
// run reads only the writer's file.
func TestWriterCommitsDuringTheRun(t *testing.T) {
	e, tbl := newEnv(t)
	tbl = e.gen.append(t, e.Ctx, tbl, 500)
	read := tbl.CurrentSnapshot().SnapshotID
	e.job.beforeCommit = func(attempt int) {
		if attempt == 1 {
			e.gen.append(t, e.Ctx, e.Load(), 50)
		}
	}
	fig := e.stats()
	e.job.beforeCommit = nil
	if fig.SnapshotID != read {
		t.Fatalf("the run described snapshot %d, not the %d it read", fig.SnapshotID, read)
	}
	tbl = e.Load()
	if tbl.CurrentSnapshot().SnapshotID == read {
		t.Fatal("the writer's commit did not land")
	}
	n := 0
	for f := range tbl.Metadata().Statistics() {
		n++
		if f.SnapshotID != read {
			t.Errorf("statistics listed for snapshot %d, want %d", f.SnapshotID, read)
		}
	}
	if n != 1 {
		t.Fatalf("%d statistics files listed", n)
	}
	fig = e.stats()
	if fig.Full || fig.DataFilesRead != 1 || fig.RowsRead != 50 {
		t.Errorf("the next run: full %v (%s), %d files, %d rows read", fig.Full, fig.Reason, fig.DataFilesRead, fig.RowsRead)
	}
	e.checkTable(t)
}

// Unreferenced file removal keeps the statistics files the metadata
// lists and takes, two-phase, those a later run took out of it.
func TestRemovalKeepsListedStatistics(t *testing.T) {
	e, tbl := newEnv(t)
	removal := &orphan.Job{Store: e.Store}
	e.runner.Jobs = jobs.Map(e.job.Definition(), removal.Definition())
	tbl = e.gen.append(t, e.Ctx, tbl, 100)
	old := e.stats().StatisticsPath
	e.gen.append(t, e.Ctx, e.Load(), 10)
	cur := e.stats().StatisticsPath
	for _, days := range []int{4, 15} {
		out, err := e.runner.Run(e.Ctx, e.Target(), maintenance.UnreferencedFileRemoval, "test", jobs.Options{Now: time.Now().Add(time.Duration(days) * 24 * time.Hour)})
		if err != nil || out.Status != "Successful" {
			t.Fatalf("removal %d days on: %v %s (%s)", days, err, out.Status, out.FailureMessage)
		}
	}
	exists := func(uri string) bool {
		_, err := os.Stat(strings.TrimPrefix(uri, "file://"))
		return err == nil
	}
	if !exists(cur) {
		t.Errorf("the listed statistics file %s was removed", cur)
	}
	if exists(old) {
		t.Errorf("the statistics file %s no metadata lists outlived removal's two phases", old)
	}
	e.checkTable(t)
}

// A table dropped and created again under its name while a run computes
// gets none of the old table's statistics: the run fails, naming what
// happened, and the new table's metadata lists no statistics file.
func TestTableCreatedAgainDuringTheRun(t *testing.T) {
	onLocalAndS3(t, createdAgainDuringTheRun)
}

func createdAgainDuringTheRun(t *testing.T, e *env, tbl *table.Table) {
	tbl = e.gen.append(t, e.Ctx, tbl, 500)
	old := tbl.Metadata().TableUUID()
	e.job.beforeCommit = func(attempt int) {
		if attempt != 1 {
			return
		}
		e.gen.append(t, e.Ctx, e.Recreate(schema, catalog.WithProperties(tbl.Properties())), 20)
	}
	out, err := e.runner.Run(e.Ctx, e.Target(), maintenance.Statistics, "test", jobsNow())
	e.job.beforeCommit = nil
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != "Failed" || !strings.Contains(out.FailureMessage, "dropped and created again") {
		t.Fatalf("run across a drop and create: %s (%s)", out.Status, out.FailureMessage)
	}
	now := e.Load()
	if now.Metadata().TableUUID() == old {
		t.Fatal("the table was not created again")
	}
	for f := range now.Metadata().Statistics() {
		t.Fatalf("the new table lists statistics file %s", f.StatisticsPath)
	}
	// The new table's own run describes its own rows only.
	fig := e.stats()
	if fig.RowsRead != 20 {
		t.Errorf("the new table's first run read %d rows, want its 20", fig.RowsRead)
	}
	if ndv, err := strconv.Atoi(blobProperty(t, e.Load(), "ndv")); err != nil || ndv > 20 {
		t.Errorf("the new table's ndv of id: %v %v, want at most its 20 rows", ndv, err)
	}
}
