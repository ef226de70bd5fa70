// Package tableenv is a table in a fresh embedded catalog and what runs
// jobs on it, for the tests of the jobs that rewrite tables: appends,
// position and equality deletes, a runner, and the rows as fingerprints.
package tableenv

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
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

// Env is a table in a fresh catalog plus what runs jobs on it.
type Env struct {
	T     testing.TB
	Ctx   context.Context
	B     *bucket.Bucket
	ID    bucket.TableID
	Store state.Store
	// Defaults are the bucket's settings as the configuration file gives
	// them; Runner resolves with them.
	Defaults maintenance.BucketDefaults
	Rng      *rand.Rand
	Next     int64 // next row id
}

// BaseSchema is the schema of the tests' tables: an id, a string, a
// timestamp and three more columns.
var BaseSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "cat", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
	iceberg.NestedField{ID: 4, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
	iceberg.NestedField{ID: 5, Name: "flag", Type: iceberg.PrimitiveTypes.Bool},
	iceberg.NestedField{ID: 6, Name: "name", Type: iceberg.PrimitiveTypes.String},
)

// PF is a partition field of source, with field ID field.
func PF(source, field int, name string, tr iceberg.Transform) iceberg.PartitionField {
	return iceberg.PartitionField{SourceIDs: []int{source}, FieldID: field, Name: name, Transform: tr}
}

// New is an Env on a local embedded catalog; format is the format version.
func New(t *testing.T, sc *iceberg.Schema, spec iceberg.PartitionSpec, format string) (*Env, *table.Table) {
	t.Helper()
	home := t.TempDir()
	return NewWith(t, configs.Embedded(home), home, sc, spec, format)
}

// NewREST is New on the Iceberg REST catalog with SigV4 and S3; it skips
// where no REST catalog is configured.
func NewREST(t testing.TB, sc *iceberg.Schema, spec iceberg.PartitionSpec, format string) (*Env, *table.Table) {
	t.Helper()
	srv := servers.REST(t)
	home := t.TempDir()
	cfg := configs.Embedded(home)
	cfg.Buckets[0].Catalog = srv.Props()
	return NewWith(t, cfg, home, sc, spec, format)
}

// SQLOnS3 is the embedded default with its bucket's catalog a SQLite file
// under home, the warehouse on the S3 server srv (its endpoint as given:
// a proxy's, to count requests or add latency).
func SQLOnS3(home string, srv servers.S3Server) *configs.Config {
	cfg := configs.Embedded(home)
	props := srv.Props()
	props["type"] = "sql"
	props["uri"] = "file:" + filepath.Join(home, "catalog.db") + "?mode=rwc&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate"
	props["warehouse"] = "s3://" + srv.Bucket + "/warehouse"
	cfg.Buckets[0].Catalog = props
	return cfg
}

// NewWith is an Env on cfg's first bucket, its state under home.
// Compaction's target there is 1 MB.
func NewWith(t testing.TB, cfg *configs.Config, home string, sc *iceberg.Schema, spec iceberg.PartitionSpec, format string) (*Env, *table.Table) {
	t.Helper()
	ctx := context.Background()
	cfg.Buckets[0].Maintenance[maintenance.Compaction] = maintenance.Config{Settings: &maintenance.CompactionSettings{
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
	return &Env{T: t, Ctx: ctx, B: b, ID: bucket.TableID{Namespace: []string{"t"}, Name: "x"}, Store: store,
		Defaults: cfg.Buckets[0].Defaults(), Rng: rand.New(rand.NewPCG(1, 2)), Next: 1}, tbl
}

// Target is the table as jobs address it.
func (e *Env) Target() jobs.Target { return jobs.Target{Bucket: e.B, Table: e.ID} }

// Runner runs job with the env's settings.
func (e *Env) Runner(job jobs.Job) *jobs.Runner {
	return &jobs.Runner{Store: e.Store, Jobs: map[maintenance.JobType]jobs.Job{job.Type(): job},
		Resolver: &jobs.Resolver{Store: e.Store, Defaults: map[string]maintenance.BucketDefaults{e.B.ARN(): e.Defaults}}}
}

// Append appends n random rows in one commit.
func (e *Env) Append(tbl *table.Table, n int) *table.Table {
	e.T.Helper()
	tbl, err := testkit.AppendRandom(e.Ctx, tbl, n, e.Next, e.Rng)
	if err != nil {
		e.T.Fatal(err)
	}
	e.Next += int64(n)
	return tbl
}

// AppendCommits makes commits appends of n rows in one catalog commit.
func (e *Env) AppendCommits(tbl *table.Table, commits, n int) *table.Table {
	e.T.Helper()
	tbl, err := testkit.AppendCommits(e.Ctx, tbl, commits, n, e.Next, e.Rng)
	if err != nil {
		e.T.Fatal(err)
	}
	e.Next += int64(commits * n)
	return tbl
}

// PosDelete deletes rows by id with merge-on-read: position deletes on
// v2, deletion vectors on v3.
func (e *Env) PosDelete(tbl *table.Table, ids ...int64) *table.Table {
	e.T.Helper()
	vals := make([]int64, len(ids))
	copy(vals, ids)
	tbl, err := tbl.Delete(e.Ctx, iceberg.IsIn(iceberg.Reference("id"), vals...), nil)
	if err != nil {
		e.T.Fatal(err)
	}
	return tbl
}

// EqDelete deletes rows by id with an equality delete file on id; it
// reads the rows first because a partitioned table's deletes must carry
// the partition source columns.
func (e *Env) EqDelete(tbl *table.Table, ids ...int64) *table.Table {
	e.T.Helper()
	cols := []string{"id"}
	spec := tbl.Spec()
	for _, f := range spec.Fields() {
		if name, ok := tbl.Schema().FindColumnName(f.SourceID()); ok && name != "id" {
			cols = append(cols, name)
		}
	}
	return e.EqDeleteOn(tbl, []string{"id"}, cols, ids...)
}

// EqDeleteOn deletes the rows with the given ids by an equality delete
// whose equality field set is the columns keys; the delete file holds the
// rows' values of cols (keys first, then what a partition needs), read
// from the rows.
func (e *Env) EqDeleteOn(tbl *table.Table, keys, cols []string, ids ...int64) *table.Table {
	e.T.Helper()
	var fieldIDs []int
	for _, c := range keys {
		f, ok := tbl.Schema().FindFieldByName(c)
		if !ok {
			e.T.Fatalf("no column %s", c)
		}
		fieldIDs = append(fieldIDs, f.ID)
	}
	_, it, err := tbl.Scan(table.WithRowFilter(iceberg.IsIn(iceberg.Reference("id"), ids...)), table.WithSelectedFields(cols...)).ToArrowRecords(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	var recs []arrow.RecordBatch
	for rec, err := range it {
		if err != nil {
			e.T.Fatal(err)
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
	if err := tx.CommitEqualityDeletes(e.Ctx, fieldIDs, seq, nil); err != nil {
		e.T.Fatal(err)
	}
	if tbl, err = tx.Commit(e.Ctx); err != nil {
		e.T.Fatal(err)
	}
	for _, r := range recs {
		r.Release()
	}
	return tbl
}

// Fill appends in many small commits and deletes with both kinds of
// delete.
func (e *Env) Fill(tbl *table.Table, appends, rows int) *table.Table {
	for i := 0; i < appends; i++ {
		tbl = e.Append(tbl, rows)
	}
	tbl = e.PosDelete(tbl, 3, 17, 250, 251, int64(rows*appends-1))
	return e.EqDelete(tbl, 5, 99, 400, int64(rows*appends/2))
}

// Recreate drops the table and creates an empty one of schema sc under
// its name, as a full refresh does: a table of its own, another UUID.
func (e *Env) Recreate(sc *iceberg.Schema, opts ...catalog.CreateTableOpt) *table.Table {
	e.T.Helper()
	cat, err := e.B.Catalog(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	if err := cat.DropTable(e.Ctx, e.ID.Identifier()); err != nil {
		e.T.Fatal(err)
	}
	return testkit.NewTable(e.T, e.B, e.ID.Namespace[0], e.ID.Name, sc, opts...)
}

// Load loads the table.
func (e *Env) Load() *table.Table {
	e.T.Helper()
	tbl, err := e.B.LoadTable(e.Ctx, e.ID)
	if err != nil {
		e.T.Fatal(err)
	}
	return tbl
}

// Rows fingerprints the visible rows of tbl at snap (0: the current
// snapshot).
func (e *Env) Rows(tbl *table.Table, snap int64) tablecheck.Fingerprint {
	e.T.Helper()
	fp, err := tablecheck.Rows(e.Ctx, tbl, snap)
	if err != nil {
		e.T.Fatal(err)
	}
	return fp
}

// IDs counts the visible rows of tbl by id.
func (e *Env) IDs(tbl *table.Table) map[int64]int {
	e.T.Helper()
	_, it, err := tbl.Scan(table.WithSelectedFields("id")).ToArrowRecords(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	out := map[int64]int{}
	for rec, err := range it {
		if err != nil {
			e.T.Fatal(err)
		}
		col := rec.Column(0).(*array.Int64)
		for i := 0; i < col.Len(); i++ {
			out[col.Value(i)]++
		}
		rec.Release()
	}
	return out
}

// CountData counts the data files under a local table location.
func CountData(t testing.TB, loc string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(filepath.Join(strings.TrimPrefix(loc, "file://"), "data"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
