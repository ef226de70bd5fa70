package compactor

import (
	"context"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// env is a table and what runs compaction on it.
type env struct {
	*tableenv.Env
	// opts are the options of compact's runs (a Fanout).
	opts  jobs.Options
	rngMu sync.Mutex // the streaming-writer test draws from Rng on another goroutine
}

func newEnv(t *testing.T, sc *iceberg.Schema, spec iceberg.PartitionSpec, format string) (*env, *table.Table) {
	t.Helper()
	e, tbl := tableenv.New(t, sc, spec, format)
	return &env{Env: e}, tbl
}

// newS3Env is newEnv on real S3 (versitygw) with the SQL catalog on
// PostgreSQL.
func newS3Env(t *testing.T, sc *iceberg.Schema, spec iceberg.PartitionSpec, format string) (*env, *table.Table) {
	t.Helper()
	srv := servers.S3(t)
	home := t.TempDir()
	cfg := configs.Embedded(home)
	props := srv.Props()
	props["type"], props["uri"], props["warehouse"] = "sql", servers.Postgres(t), "s3://"+srv.Bucket+"/warehouse"
	cfg.Buckets[0].Catalog = props
	return newEnvWith(t, cfg, home, sc, spec, format)
}

// storeEnv is a way to make a test's table: on local disk (newEnv) or on S3
// (newS3Env).
type storeEnv struct {
	name string
	env  func(*testing.T, *iceberg.Schema, iceberg.PartitionSpec, string) (*env, *table.Table)
}

// bothStores are local disk and S3, for tests that must hold on both.
func bothStores() []storeEnv { return []storeEnv{{"local", newEnv}, {"s3", newS3Env}} }

func newEnvWith(t testing.TB, cfg *configs.Config, home string, sc *iceberg.Schema, spec iceberg.PartitionSpec, format string) (*env, *table.Table) {
	t.Helper()
	e, tbl := tableenv.NewWith(t, cfg, home, sc, spec, format)
	return &env{Env: e}, tbl
}

func (e *env) compact(job *Job) (jobs.Outcome, *Figures) {
	e.T.Helper()
	r := e.Runner(job.Definition())
	out, err := r.Run(e.Ctx, e.Target(), maintenance.Compaction, "test", e.opts)
	if err != nil {
		e.T.Fatal(err)
	}
	fig, _ := out.Figures.(*Figures)
	return out, fig
}

// checkCompaction runs compaction and asserts the differential invariants:
// it did compact, the visible rows are the same multiset, every reachable
// file exists, and time travel to before still returns the old rows.
func (e *env) checkCompaction(job *Job) *Figures {
	e.T.Helper()
	before := e.Load()
	fpBefore := e.Rows(before, 0)
	snapBefore := before.CurrentSnapshot().SnapshotID
	out, fig := e.compact(job)
	if out.Status != state.Successful {
		e.T.Fatalf("compaction: %s: %s", out.Status, out.FailureMessage)
	}
	if fig.GroupsCommitted == 0 || fig.OutputFiles >= fig.InputFiles {
		e.T.Fatalf("nothing was compacted: %d groups committed, %d files in, %d out\n%s", fig.GroupsCommitted, fig.InputFiles, fig.OutputFiles, fig.Text())
	}
	e.checkSameRows(fpBefore, snapBefore)
	return fig
}

// checkSameRows asserts that the table shows the rows want, now and at
// snapshot before, and that every file reachable from it exists. It
// returns the table.
func (e *env) checkSameRows(want tablecheck.Fingerprint, before int64) *table.Table {
	e.T.Helper()
	after := e.Load()
	if fp := e.Rows(after, 0); !fp.Equal(want) {
		e.T.Fatalf("visible rows changed: %v after, %v before", fp, want)
	}
	if fp := e.Rows(after, before); !fp.Equal(want) {
		e.T.Fatalf("time travel to %d: %v, want %v", before, fp, want)
	}
	missing, err := tablecheck.MissingFiles(e.Ctx, after)
	if err != nil || len(missing) > 0 {
		e.T.Fatalf("missing reachable files %v: %v", missing, err)
	}
	return after
}

func TestDifferential(t *testing.T) {
	testkit.SkipUnderRace(t)
	for _, tc := range []struct {
		name   string
		format string
		spec   iceberg.PartitionSpec
	}{
		{"unpartitioned", "2", *iceberg.UnpartitionedSpec},
		{"identity+day", "2", iceberg.NewPartitionSpec(tableenv.PF(2, 1000, "cat", iceberg.IdentityTransform{}), tableenv.PF(3, 1001, "ts_day", iceberg.DayTransform{}))},
		{"bucket+truncate", "2", iceberg.NewPartitionSpec(tableenv.PF(1, 1000, "id_bucket", iceberg.BucketTransform{NumBuckets: 4}), tableenv.PF(2, 1001, "cat_trunc", iceberg.TruncateTransform{Width: 1}))},
		{"truncate of a high-cardinality string", "2", iceberg.NewPartitionSpec(tableenv.PF(6, 1000, "name_trunc", iceberg.TruncateTransform{Width: 2}))},
		{"v3 deletion vectors", "3", *iceberg.UnpartitionedSpec},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, tbl := newEnv(t, tableenv.BaseSchema, tc.spec, tc.format)
			e.Fill(tbl, 12, 200)
			e.checkCompaction(&Job{MinInputFiles: 2})
		})
	}
}

// The same differential check on S3 with a PostgreSQL catalog.
func TestDifferentialOnS3(t *testing.T) {
	e, tbl := newS3Env(t, tableenv.BaseSchema, iceberg.NewPartitionSpec(tableenv.PF(2, 1000, "cat", iceberg.IdentityTransform{})), "2")
	e.Fill(tbl, 8, 150)
	e.checkCompaction(&Job{MinInputFiles: 2})
}

// Compacted files are good files: the manifests carry column metrics and
// bounds for every column, so readers can still prune.
func TestOutputHasMetrics(t *testing.T) {
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	e.Fill(tbl, 6, 200)
	e.checkCompaction(&Job{MinInputFiles: 2})
	tasks, err := e.Load().Scan().PlanFiles(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, task := range tasks {
		df := task.File
		if df.Count() < 1000 {
			continue // not a compaction output
		}
		checked++
		for _, id := range []int{1, 2, 3, 4, 6} {
			if df.ValueCounts()[id] == 0 || df.LowerBoundValues()[id] == nil || df.UpperBoundValues()[id] == nil {
				t.Fatalf("output %s lacks metrics for column %d: counts %v", df.FilePath(), id, df.ValueCounts())
			}
		}
		if df.NullValueCounts() == nil || df.ColumnSizes()[1] == 0 {
			t.Fatalf("output %s lacks null counts or column sizes", df.FilePath())
		}
	}
	if checked == 0 {
		t.Fatal("no compaction output found")
	}
}

func TestSpecEvolution(t *testing.T) {
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	for i := 0; i < 6; i++ {
		tbl = e.Append(tbl, 150)
	}
	tx := tbl.NewTransaction()
	if err := tx.UpdateSpec(true).AddIdentity("cat").Commit(); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.Fill(tbl, 6, 150)
	e.checkCompaction(&Job{MinInputFiles: 2})
	// The old spec's small files were re-partitioned into the current spec.
	tasks, err := e.Load().Scan().PlanFiles(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if task.File.SpecID() == 0 && task.File.FileSizeBytes() < 1<<20 {
			t.Fatalf("small file of the old spec left: %s", task.File.FilePath())
		}
	}
}

func TestSchemaEvolution(t *testing.T) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "cnt", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 3, Name: "name", Type: iceberg.PrimitiveTypes.String},
	)
	e, tbl := newEnv(t, sc, *iceberg.UnpartitionedSpec, "2")
	evolve := func(f func(u *table.UpdateSchema) *table.UpdateSchema) {
		t.Helper()
		tx := tbl.NewTransaction()
		if err := f(tx.UpdateSchema(true, false)).Commit(); err != nil {
			t.Fatal(err)
		}
		var err error
		if tbl, err = tx.Commit(e.Ctx); err != nil {
			t.Fatal(err)
		}
	}
	tbl = e.Append(tbl, 100)
	tbl = e.Append(tbl, 100)
	evolve(func(u *table.UpdateSchema) *table.UpdateSchema {
		return u.AddColumn([]string{"extra"}, iceberg.PrimitiveTypes.Float64, "", false, nil)
	})
	tbl = e.Append(tbl, 100)
	evolve(func(u *table.UpdateSchema) *table.UpdateSchema { return u.RenameColumn([]string{"name"}, "label") })
	tbl = e.Append(tbl, 100)
	evolve(func(u *table.UpdateSchema) *table.UpdateSchema {
		return u.UpdateColumn([]string{"cnt"}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Val: iceberg.PrimitiveTypes.Int64, Valid: true}})
	})
	tbl = e.Append(tbl, 100)
	evolve(func(u *table.UpdateSchema) *table.UpdateSchema { return u.DeleteColumn([]string{"extra"}) })
	tbl = e.Append(tbl, 100)
	tbl = e.PosDelete(tbl, 7, 150, 333)
	e.EqDelete(tbl, 42, 420)
	e.checkCompaction(&Job{MinInputFiles: 2})
}

func TestNestedAndNulls(t *testing.T) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "s", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 4, Name: "a", Type: iceberg.PrimitiveTypes.Int32},
			{ID: 5, Name: "b", Type: iceberg.PrimitiveTypes.String},
		}}},
		iceberg.NestedField{ID: 3, Name: "l", Type: &iceberg.ListType{ElementID: 6, Element: iceberg.PrimitiveTypes.String, ElementRequired: false}},
		iceberg.NestedField{ID: 7, Name: "d", Type: iceberg.PrimitiveTypes.Date},
	)
	e, tbl := newEnv(t, sc, *iceberg.UnpartitionedSpec, "2")
	for i := 0; i < 8; i++ {
		tbl = e.Append(tbl, 150)
	}
	tbl = e.PosDelete(tbl, 1, 2, 3, 600)
	e.EqDelete(tbl, 10, 700)
	e.checkCompaction(&Job{MinInputFiles: 2})
}

// One position delete file covers data files that end up in different
// commits (one group per commit). Removing it with the first commit would
// resurrect rows in the files of the later one.
func TestMultiFilePositionDeleteAcrossBatches(t *testing.T) {
	testkit.SkipUnderRace(t)
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	// One delete touching rows of many data files: one position delete file.
	tbl, ids := e.manyFiles(tbl)
	tbl = e.PosDelete(tbl, ids...)
	tasks, err := tbl.Scan().PlanFiles(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]int{}
	for _, task := range tasks {
		for _, d := range task.DeleteFiles {
			covered[d.FilePath()]++
		}
	}
	multi := false
	for _, n := range covered {
		multi = multi || n > 1
	}
	if !multi {
		t.Fatal("setup: no position delete file covers several data files")
	}
	fig := e.checkCompaction(&Job{MinInputFiles: 2, BatchGroups: 1})
	if fig.GroupsCommitted < 2 {
		t.Fatalf("setup: want several single-group commits, got %+v", fig)
	}
}

// Lists the table's ids, for concurrency tests that reason about ids.
// manyFiles appends 40 files of 2,000 rows, enough for several groups at
// the tests' 1 MB target, and returns ids spread over all of them.
func (e *env) manyFiles(tbl *table.Table) (*table.Table, []int64) {
	for i := 0; i < 40; i++ {
		tbl = e.Append(tbl, 2000)
	}
	var ids []int64
	for id := int64(1); id < e.Next; id += 997 {
		ids = append(ids, id)
	}
	return tbl, ids
}

func ids(t *testing.T, ctx context.Context, tbl *table.Table) map[int64]int {
	t.Helper()
	_, it, err := tbl.Scan(table.WithSelectedFields("id")).ToArrowRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]int{}
	for rec, err := range it {
		if err != nil {
			t.Fatal(err)
		}
		col := rec.Column(0).(*array.Int64)
		for i := 0; i < col.Len(); i++ {
			out[col.Value(i)]++
		}
		rec.Release()
	}
	return out
}
