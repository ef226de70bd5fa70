package compactor

import (
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
)

// liveDeletes returns the delete files of the current snapshot, by path.
func (e *env) liveDeletes() map[string]iceberg.ManifestEntryContent {
	out := map[string]iceberg.ManifestEntryContent{}
	for _, df := range e.liveDeleteFiles() {
		out[df.FilePath()] = df.ContentType()
	}
	return out
}

func (e *env) liveDeleteFiles() []iceberg.DataFile {
	e.T.Helper()
	tbl := e.Load()
	fs, err := tbl.FS(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	manifests, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		e.T.Fatal(err)
	}
	var out []iceberg.DataFile
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentDeletes {
			continue
		}
		for entry, err := range m.Entries(fs, true) {
			if err != nil {
				e.T.Fatal(err)
			}
			out = append(out, entry.DataFile())
		}
	}
	return out
}

func count(m map[string]iceberg.ManifestEntryContent, c iceberg.ManifestEntryContent) (n int) {
	for _, v := range m {
		if v == c {
			n++
		}
	}
	return n
}

// Equality deletes whose every data file is rewritten are dead — the
// outputs carry a sequence number they do not apply to — and leave the
// table with the commit.
func TestDeadEqualityDeletesRemoved(t *testing.T) {
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	for i := 0; i < 6; i++ {
		tbl = e.Append(tbl, 200)
	}
	tbl = e.EqDelete(tbl, 5, 99, 400)
	e.EqDelete(tbl, 700)
	if n := count(e.liveDeletes(), iceberg.EntryContentEqDeletes); n != 2 {
		t.Fatalf("%d equality delete files before compaction, want 2", n)
	}
	fig := e.checkCompaction(&Job{MinInputFiles: 2})
	if n := count(e.liveDeletes(), iceberg.EntryContentEqDeletes); n != 0 || fig.DeleteFilesRemoved != 2 {
		t.Fatalf("%d equality delete files left, %d delete files removed; every file they applied to was rewritten", n, fig.DeleteFilesRemoved)
	}
}

// An equality delete that still applies to files of a later commit stays
// until they are replaced: with one group per commit, every snapshot the
// run makes reads the rows of before. (Removing it with the first commit
// would bring its rows back in the files the first commit left alone.)
// Once it applies to nothing, the next run removes it.
func TestEqualityDeleteAcrossBatches(t *testing.T) {
	testkit.SkipUnderRace(t)
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	// The data rewrite's rule; conversion would remove the delete at once.
	e.Defaults.Knobs.MinEqualityDeleteFilesToConvert = 0
	tbl, ids := e.manyFiles(tbl)
	tbl = e.EqDelete(tbl, ids...)
	start := tbl.CurrentSnapshot().SnapshotID
	want := e.Rows(tbl, 0)
	fig := e.checkCompaction(&Job{MinInputFiles: 2, BatchGroups: 1})
	if fig.GroupsCommitted < 2 {
		t.Fatalf("setup: want several single-group commits, got %+v", fig)
	}
	after := e.Load()
	for s := after.CurrentSnapshot(); s.SnapshotID != start; s = after.SnapshotByID(*s.ParentSnapshotID) {
		if fp := e.Rows(after, s.SnapshotID); !fp.Equal(want) {
			t.Fatalf("snapshot %d of the run reads %v, want %v", s.SnapshotID, fp, want)
		}
	}
	if n := count(e.liveDeletes(), iceberg.EntryContentEqDeletes); n != 1 {
		t.Fatalf("%d equality delete files left, want the one no single commit made dead", n)
	}
	// Now it applies to nothing: the next run that commits removes it.
	tbl = after
	for i := 0; i < 3; i++ {
		tbl = e.Append(tbl, 100)
	}
	fig = e.checkCompaction(&Job{MinInputFiles: 2})
	if n := count(e.liveDeletes(), iceberg.EntryContentEqDeletes); n != 0 || fig.DeleteFilesRemoved != 1 {
		t.Fatalf("%d equality delete files left after the next run, %d removed; it was dangling", n, fig.DeleteFilesRemoved)
	}
}

// A file larger than read.split.target-size is planned by the scan as
// several byte ranges; compaction must treat it as one file, or one commit
// would remove it while another still had rows of it to copy.
func TestSplitFilesAreOneFile(t *testing.T) {
	testkit.SkipUnderRace(t)
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{"read.split.target-size": "65536", "write.parquet.row-group-limit": "1000"}); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 12; i++ {
		tbl = e.Append(tbl, 6000)
	}
	tbl = e.PosDelete(tbl, 10, 20_000, 70_000)
	tasks, err := tbl.Scan().PlanFiles(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) <= 12 {
		t.Fatalf("setup: %d scan tasks for 12 files; the files were not split", len(tasks))
	}
	fig := e.checkCompaction(&Job{MinInputFiles: 2, BatchGroups: 1})
	if fig.InputFiles > 12 || fig.GroupsCommitted < 2 {
		t.Fatalf("%d files replaced in %d commits; want at most the 12 there are, in several commits", fig.InputFiles, fig.GroupsCommitted)
	}
}

// A delete file the run means to remove is removed by another commit
// first (another engine's maintenance): the retry leaves it out instead of
// failing on a file that is no longer the table's.
func TestDeleteRemovedMeanwhile(t *testing.T) {
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	e.Defaults.Knobs.MinEqualityDeleteFilesToConvert = 0 // the data rewrite leaves the delete dangling
	tbl, ids := e.manyFiles(tbl)
	tbl = e.EqDelete(tbl, ids...)
	e.checkCompaction(&Job{MinInputFiles: 2, BatchGroups: 1}) // leaves the delete dangling
	tbl = e.Load()
	for i := 0; i < 3; i++ {
		tbl = e.Append(tbl, 100)
	}
	dangling := e.liveDeleteFiles()
	if len(dangling) != 1 {
		t.Fatalf("setup: %d delete files, want the one dangling", len(dangling))
	}
	job := &Job{MinInputFiles: 2, Retry: quickRetry(8)}
	job.beforeCommit = func(attempt int) {
		if attempt != 1 {
			return
		}
		tx := e.Load().NewTransaction()
		rw := tx.NewRewrite(nil)
		rw.DeleteFile(dangling[0])
		if err := rw.Commit(e.Ctx); err != nil {
			t.Error(err)
			return
		}
		if _, err := tx.Commit(e.Ctx); err != nil {
			t.Error(err)
		}
	}
	fig := e.checkCompaction(job)
	if fig.CommitAttempts != 2 || fig.DeleteFilesRemoved != 0 || len(e.liveDeleteFiles()) != 0 {
		t.Fatalf("%d attempts, %d delete files removed by the run, %d left; want 2, 0 and 0", fig.CommitAttempts, fig.DeleteFilesRemoved, len(e.liveDeleteFiles()))
	}
}
