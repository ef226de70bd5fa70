package compactor

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// env is a table in a fresh embedded catalog plus what runs jobs on it.
type env struct {
	t     testing.TB
	ctx   context.Context
	b     *bucket.Bucket
	id    bucket.TableID
	store state.Store
	// defaults are the bucket's settings as the configuration file gives
	// them; runner resolves with them.
	defaults maintenance.BucketDefaults
	// opts are the options of compact's runs (a Fanout).
	opts  jobs.Options
	rng   *rand.Rand
	rngMu sync.Mutex // the streaming-writer test draws from rng on another goroutine
	next  int64      // next row id
}

func newEnv(t *testing.T, sc *iceberg.Schema, spec iceberg.PartitionSpec, format string) (*env, *table.Table) {
	t.Helper()
	home := t.TempDir()
	return newEnvWith(t, configs.Embedded(home), home, sc, spec, format)
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

func newEnvWith(t testing.TB, cfg *configs.Config, home string, sc *iceberg.Schema, spec iceberg.PartitionSpec, format string) (*env, *table.Table) {
	t.Helper()
	ctx := context.Background()
	cfg.Buckets[0].Maintenance.Compaction = &configs.CompactionConfig{CompactionSettings: maintenance.CompactionSettings{
		TargetFileSizeMB: maintenance.Int(1), Strategy: maintenance.StrategyBinpack}}
	reg := cfg.Registry()
	t.Cleanup(reg.Close)
	b, _ := reg.Bucket("local")
	tbl := testkit.NewTable(t, b, "t", "x", sc, catalog.WithPartitionSpec(&spec),
		catalog.WithProperties(iceberg.Properties{"format-version": format, "write.delete.mode": "merge-on-read", "commit.manifest-merge.enabled": "false"}))
	store, err := state.Open(ctx, "sqlite://"+filepath.Join(home, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return &env{t: t, ctx: ctx, b: b, id: bucket.TableID{Namespace: []string{"t"}, Name: "x"}, store: store,
		defaults: cfg.Buckets[0].Defaults(), rng: rand.New(rand.NewPCG(1, 2)), next: 1}, tbl
}

// runner runs job with the env's settings.
func (e *env) runner(job jobs.Job) *jobs.Runner {
	return &jobs.Runner{Store: e.store, Jobs: map[maintenance.JobType]jobs.Job{job.Type(): job},
		Resolver: &jobs.Resolver{Store: e.store, Defaults: map[string]maintenance.BucketDefaults{e.b.ARN(): e.defaults}}}
}

func (e *env) append(tbl *table.Table, n int) *table.Table {
	e.t.Helper()
	tbl, err := testkit.AppendRandom(e.ctx, tbl, n, e.next, e.rng)
	if err != nil {
		e.t.Fatal(err)
	}
	e.next += int64(n)
	return tbl
}

// appendCommits makes commits appends of n rows in one catalog commit.
func (e *env) appendCommits(tbl *table.Table, commits, n int) *table.Table {
	e.t.Helper()
	tbl, err := testkit.AppendCommits(e.ctx, tbl, commits, n, e.next, e.rng)
	if err != nil {
		e.t.Fatal(err)
	}
	e.next += int64(commits * n)
	return tbl
}

// posDelete deletes rows by id with merge-on-read: position deletes on v2,
// deletion vectors on v3.
func (e *env) posDelete(tbl *table.Table, ids ...int64) *table.Table {
	e.t.Helper()
	vals := make([]int64, len(ids))
	copy(vals, ids)
	tbl, err := tbl.Delete(e.ctx, iceberg.IsIn(iceberg.Reference("id"), vals...), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return tbl
}

// eqDelete deletes rows by id with an equality delete file; it reads the
// rows first because a partitioned table's deletes must carry the
// partition source columns.
func (e *env) eqDelete(tbl *table.Table, ids ...int64) *table.Table {
	e.t.Helper()
	cols := []string{"id"}
	spec := tbl.Spec()
	for _, f := range spec.Fields() {
		if name, ok := tbl.Schema().FindColumnName(f.SourceID()); ok && name != "id" {
			cols = append(cols, name)
		}
	}
	idField, _ := tbl.Schema().FindFieldByName("id")
	_, it, err := tbl.Scan(table.WithRowFilter(iceberg.IsIn(iceberg.Reference("id"), ids...)), table.WithSelectedFields(cols...)).ToArrowRecords(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	var recs []arrow.RecordBatch
	for rec, err := range it {
		if err != nil {
			e.t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	tx := tbl.NewTransaction()
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		for _, r := range recs {
			if !yield(r, nil) {
				return
			}
		}
	}
	if err := tx.CommitEqualityDeletes(e.ctx, []int{idField.ID}, seq, nil); err != nil {
		e.t.Fatal(err)
	}
	if tbl, err = tx.Commit(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	for _, r := range recs {
		r.Release()
	}
	return tbl
}

func (e *env) load() *table.Table {
	e.t.Helper()
	tbl, err := e.b.LoadTable(e.ctx, e.id)
	if err != nil {
		e.t.Fatal(err)
	}
	return tbl
}

func (e *env) compact(job *Job) (jobs.Outcome, *Figures) {
	e.t.Helper()
	r := e.runner(job)
	out, err := r.Run(e.ctx, jobs.Target{Bucket: e.b, Table: e.id}, maintenance.Compaction, "test", e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	fig, _ := out.Figures.(*Figures)
	return out, fig
}

func (e *env) rows(tbl *table.Table, snap int64) tablecheck.Fingerprint {
	e.t.Helper()
	fp, err := tablecheck.Rows(e.ctx, tbl, snap)
	if err != nil {
		e.t.Fatal(err)
	}
	return fp
}

// checkCompaction runs compaction and asserts the differential invariants:
// it did compact, the visible rows are the same multiset, every reachable
// file exists, and time travel to before still returns the old rows.
func (e *env) checkCompaction(job *Job) *Figures {
	e.t.Helper()
	before := e.load()
	fpBefore := e.rows(before, 0)
	snapBefore := before.CurrentSnapshot().SnapshotID
	out, fig := e.compact(job)
	if out.Status != state.Successful {
		e.t.Fatalf("compaction: %s: %s", out.Status, out.FailureMessage)
	}
	if fig.GroupsCommitted == 0 || fig.OutputFiles >= fig.InputFiles {
		e.t.Fatalf("nothing was compacted: %d groups committed, %d files in, %d out", fig.GroupsCommitted, fig.InputFiles, fig.OutputFiles)
	}
	e.checkSameRows(fpBefore, snapBefore)
	return fig
}

// checkSameRows asserts that the table shows the rows want, now and at
// snapshot before, and that every file reachable from it exists. It
// returns the table.
func (e *env) checkSameRows(want tablecheck.Fingerprint, before int64) *table.Table {
	e.t.Helper()
	after := e.load()
	if fp := e.rows(after, 0); !fp.Equal(want) {
		e.t.Fatalf("visible rows changed: %v after, %v before", fp, want)
	}
	if fp := e.rows(after, before); !fp.Equal(want) {
		e.t.Fatalf("time travel to %d: %v, want %v", before, fp, want)
	}
	missing, err := tablecheck.MissingFiles(e.ctx, after)
	if err != nil || len(missing) > 0 {
		e.t.Fatalf("missing reachable files %v: %v", missing, err)
	}
	return after
}

var baseSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "cat", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
	iceberg.NestedField{ID: 4, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
	iceberg.NestedField{ID: 5, Name: "flag", Type: iceberg.PrimitiveTypes.Bool},
	iceberg.NestedField{ID: 6, Name: "name", Type: iceberg.PrimitiveTypes.String},
)

func pf(source, field int, name string, tr iceberg.Transform) iceberg.PartitionField {
	return iceberg.PartitionField{SourceIDs: []int{source}, FieldID: field, Name: name, Transform: tr}
}

// fill appends in many small commits and deletes with both kinds of delete.
func (e *env) fill(tbl *table.Table, appends, rows int) *table.Table {
	for i := 0; i < appends; i++ {
		tbl = e.append(tbl, rows)
	}
	tbl = e.posDelete(tbl, 3, 17, 250, 251, int64(rows*appends-1))
	return e.eqDelete(tbl, 5, 99, 400, int64(rows*appends/2))
}

func TestDifferential(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format string
		spec   iceberg.PartitionSpec
	}{
		{"unpartitioned", "2", *iceberg.UnpartitionedSpec},
		{"identity+day", "2", iceberg.NewPartitionSpec(pf(2, 1000, "cat", iceberg.IdentityTransform{}), pf(3, 1001, "ts_day", iceberg.DayTransform{}))},
		{"bucket+truncate", "2", iceberg.NewPartitionSpec(pf(1, 1000, "id_bucket", iceberg.BucketTransform{NumBuckets: 4}), pf(2, 1001, "cat_trunc", iceberg.TruncateTransform{Width: 1}))},
		{"truncate of a high-cardinality string", "2", iceberg.NewPartitionSpec(pf(6, 1000, "name_trunc", iceberg.TruncateTransform{Width: 2}))},
		{"v3 deletion vectors", "3", *iceberg.UnpartitionedSpec},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, tbl := newEnv(t, baseSchema, tc.spec, tc.format)
			e.fill(tbl, 12, 200)
			e.checkCompaction(&Job{MinInputFiles: 2})
		})
	}
}

// The same differential check on S3 with a PostgreSQL catalog.
func TestDifferentialOnS3(t *testing.T) {
	e, tbl := newS3Env(t, baseSchema, iceberg.NewPartitionSpec(pf(2, 1000, "cat", iceberg.IdentityTransform{})), "2")
	e.fill(tbl, 8, 150)
	e.checkCompaction(&Job{MinInputFiles: 2})
}

// Compacted files are good files: the manifests carry column metrics and
// bounds for every column, so readers can still prune.
func TestOutputHasMetrics(t *testing.T) {
	e, tbl := newEnv(t, baseSchema, *iceberg.UnpartitionedSpec, "2")
	e.fill(tbl, 6, 200)
	e.checkCompaction(&Job{MinInputFiles: 2})
	tasks, err := e.load().Scan().PlanFiles(e.ctx)
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
	e, tbl := newEnv(t, baseSchema, *iceberg.UnpartitionedSpec, "2")
	for i := 0; i < 6; i++ {
		tbl = e.append(tbl, 150)
	}
	tx := tbl.NewTransaction()
	if err := tx.UpdateSpec(true).AddIdentity("cat").Commit(); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.fill(tbl, 6, 150)
	e.checkCompaction(&Job{MinInputFiles: 2})
	// The old spec's small files were re-partitioned into the current spec.
	tasks, err := e.load().Scan().PlanFiles(e.ctx)
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
		if tbl, err = tx.Commit(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	tbl = e.append(tbl, 100)
	tbl = e.append(tbl, 100)
	evolve(func(u *table.UpdateSchema) *table.UpdateSchema {
		return u.AddColumn([]string{"extra"}, iceberg.PrimitiveTypes.Float64, "", false, nil)
	})
	tbl = e.append(tbl, 100)
	evolve(func(u *table.UpdateSchema) *table.UpdateSchema { return u.RenameColumn([]string{"name"}, "label") })
	tbl = e.append(tbl, 100)
	evolve(func(u *table.UpdateSchema) *table.UpdateSchema {
		return u.UpdateColumn([]string{"cnt"}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Val: iceberg.PrimitiveTypes.Int64, Valid: true}})
	})
	tbl = e.append(tbl, 100)
	evolve(func(u *table.UpdateSchema) *table.UpdateSchema { return u.DeleteColumn([]string{"extra"}) })
	tbl = e.append(tbl, 100)
	tbl = e.posDelete(tbl, 7, 150, 333)
	e.eqDelete(tbl, 42, 420)
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
		tbl = e.append(tbl, 150)
	}
	tbl = e.posDelete(tbl, 1, 2, 3, 600)
	e.eqDelete(tbl, 10, 700)
	e.checkCompaction(&Job{MinInputFiles: 2})
}

// One position delete file covers data files that end up in different
// commits (one group per commit). Removing it with the first commit would
// resurrect rows in the files of the later one.
func TestMultiFilePositionDeleteAcrossBatches(t *testing.T) {
	e, tbl := newEnv(t, baseSchema, *iceberg.UnpartitionedSpec, "2")
	// One delete touching rows of many data files: one position delete file.
	tbl, ids := e.manyFiles(tbl)
	tbl = e.posDelete(tbl, ids...)
	tasks, err := tbl.Scan().PlanFiles(e.ctx)
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
		tbl = e.append(tbl, 2000)
	}
	var ids []int64
	for id := int64(1); id < e.next; id += 997 {
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
