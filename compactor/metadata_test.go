package compactor

import (
	"database/sql"
	"errors"
	"io/fs"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/expire"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// With write.metadata.delete-after-commit.enabled, compaction's and
// snapshot management's commits delete the metadata files they trim from
// the log (write.metadata.previous-versions-max): the trimmed files are
// gone, the current file and those in its log stay, and the table reads
// the same. On the SQL catalog with local files and on the REST catalog
// with S3.
func TestMetadataPrunedAfterCommit(t *testing.T) {
	for _, c := range catalogEnvs {
		t.Run(c.name, func(t *testing.T) {
			e, tbl := c.env(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
			tbl = e.setProps(tbl, iceberg.Properties{table.MetadataDeleteAfterCommitEnabledKey: "true", table.MetadataPreviousVersionsMaxKey: "2"})
			for range 5 {
				tbl = e.Append(tbl, 20)
			}

			fig := e.checkCompaction(&Job{})
			after := e.Load()
			if fig.MetadataFilesRemoved != fig.Commits || fig.Commits == 0 {
				t.Fatalf("compaction's %d commits removed %d old metadata files, want one each", fig.Commits, fig.MetadataFilesRemoved)
			}
			checkMetadataFiles(t, e, tbl, after)

			out, err := e.Runner((&expire.Job{}).Definition()).Run(e.Ctx, e.Target(), maintenance.SnapshotManagement, "test",
				jobs.Options{Now: time.Now().Add(30 * 24 * time.Hour)})
			if err != nil || out.Status != state.Successful {
				t.Fatalf("snapshot management: %+v %v", out, err)
			}
			if efig := out.Figures.(*expire.Figures); efig.SnapshotsExpired == 0 || efig.MetadataFilesRemoved != 1 {
				t.Fatalf("snapshot management expired %d snapshots and removed %d old metadata files, want some and 1", efig.SnapshotsExpired, efig.MetadataFilesRemoved)
			}
			checkMetadataFiles(t, e, after, e.Load())
		})
	}
}

// catalogEnvs are the two paths a test runs on: the SQL catalog with local
// files, and the REST catalog with SigV4 and S3.
var catalogEnvs = []struct {
	name string
	env  func(testing.TB, *iceberg.Schema, iceberg.PartitionSpec, string) (*env, *table.Table)
}{
	{"sql", func(t testing.TB, sc *iceberg.Schema, spec iceberg.PartitionSpec, f string) (*env, *table.Table) {
		return newEnv(t.(*testing.T), sc, spec, f)
	}},
	{"rest", newRESTEnv},
}

// checkMetadataFiles asserts that the metadata files before's log held and
// after's does not are gone, and that after's current file and log exist.
func checkMetadataFiles(t *testing.T, e *env, before, after *table.Table) {
	t.Helper()
	files, err := after.FS(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	exists := func(p string) bool {
		f, err := files.Open(p)
		if err == nil {
			f.Close()
			return true
		}
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("open %s: %v", p, err)
		}
		return false
	}
	kept := map[string]bool{after.MetadataLocation(): true}
	for l := range after.Metadata().PreviousFiles() {
		kept[l.MetadataFile] = true
	}
	if len(kept) != 3 {
		t.Fatalf("current file and log: %v, want 3 (previous-versions-max 2)", kept)
	}
	for p := range kept {
		if !exists(p) {
			t.Fatalf("%s is in the log but was deleted", p)
		}
	}
	for l := range before.Metadata().PreviousFiles() {
		if !kept[l.MetadataFile] && exists(l.MetadataFile) {
			t.Fatalf("%s left the log but was not deleted", l.MetadataFile)
		}
	}
}

// A metadata file that another table holds as its current one stays when
// this table's commits trim it from the log: Iceberg's register_table
// registers a table at an existing metadata file (a fork), and the pruning
// of write.metadata.delete-after-commit must not break it. The fork is
// registered the way register_table does on the SQL catalog: a row
// naming the file.
func TestMetadataPruneKeepsOtherTablesFile(t *testing.T) {
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	tbl = e.setProps(tbl, iceberg.Properties{table.MetadataDeleteAfterCommitEnabledKey: "true", table.MetadataPreviousVersionsMaxKey: "1"})
	for range 5 {
		tbl = e.Append(tbl, 20)
	}
	forked := tbl.MetadataLocation()
	db, err := sql.Open("sqlite", e.B.Properties()["uri"])
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(e.Ctx, `INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location)
		SELECT catalog_name, table_namespace, 'fork', ? FROM iceberg_tables WHERE table_name = 'x'`, forked); err != nil {
		t.Fatal(err)
	}
	fork := bucket.TableID{Namespace: e.ID.Namespace, Name: "fork"}
	forkRows := e.Rows(e.loadTable(fork), 0)

	// Two commits of this table's own: the second trims the forked file
	// from the log.
	e.checkCompaction(&Job{})
	out, err := e.Runner((&expire.Job{}).Definition()).Run(e.Ctx, e.Target(), maintenance.SnapshotManagement, "test",
		jobs.Options{Now: time.Now().Add(30 * 24 * time.Hour)})
	if err != nil || out.Status != state.Successful || out.Figures.(*expire.Figures).SnapshotsExpired == 0 {
		t.Fatalf("snapshot management: %+v %v", out, err)
	}
	for l := range e.Load().Metadata().PreviousFiles() {
		if l.MetadataFile == forked {
			t.Fatalf("the forked file is still in the log: the test trims nothing")
		}
	}
	if got := e.Rows(e.loadTable(fork), 0); !got.Equal(forkRows) {
		t.Fatalf("the fork reads %v, want %v", got, forkRows)
	}
}

// loadTable loads id from the env's bucket.
func (e *env) loadTable(id bucket.TableID) *table.Table {
	e.T.Helper()
	tbl, err := e.B.LoadTable(e.Ctx, id)
	if err != nil {
		e.T.Fatalf("load %s: %v", id, err)
	}
	return tbl
}
