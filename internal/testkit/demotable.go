// Package testkit is what tests share, and only tests use: the tables
// job tests run on (the demo table, generated rows, a streaming writer).
// Its subpackages are the real servers (servers), fingerprints of a
// table's rows and files (tablecheck), and the child processes of
// side-by-side benchmarks (child). Being test-only, it may import any
// layer; no product package imports it.
package testkit

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// DemoTable is the demo table in a fresh embedded home with its state
// store: the common fixture of job tests.
type DemoTable struct {
	T      testing.TB
	Ctx    context.Context
	Home   string
	Bucket *bucket.Bucket
	ID     bucket.TableID
	Store  state.Store
	// Defaults are the bucket's settings as a configuration file would
	// give them; tests change them before Run.
	Defaults maintenance.BucketDefaults
}

// NewDemoTable creates the demo table with opts in a temporary home.
func NewDemoTable(t testing.TB, opts demo.Options) *DemoTable {
	t.Helper()
	ctx := context.Background()
	home := t.TempDir()
	reg := configs.Embedded(home).Registry()
	t.Cleanup(reg.Close)
	b, _ := reg.Bucket("local")
	if _, err := demo.Create(ctx, b, opts); err != nil {
		t.Fatal(err)
	}
	store, err := state.Open(ctx, "sqlite://"+filepath.Join(home, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return &DemoTable{T: t, Ctx: ctx, Home: home, Bucket: b, ID: bucket.TableID{Namespace: []string{demo.Namespace}, Name: demo.Table}, Store: store,
		Defaults: maintenance.BucketDefaults{Configs: map[maintenance.JobType]maintenance.Config{}}}
}

// Resolver resolves settings with the store's overrides over Defaults.
func (d *DemoTable) Resolver() *jobs.Resolver {
	return &jobs.Resolver{Store: d.Store, Defaults: map[string]maintenance.BucketDefaults{d.Bucket.ARN(): d.Defaults}}
}

// Settings resolves the table's settings.
func (d *DemoTable) Settings() maintenance.Settings {
	d.T.Helper()
	s, err := d.Resolver().Table(d.Ctx, d.Target())
	if err != nil {
		d.T.Fatal(err)
	}
	return s
}

// Target is the table as a job target.
func (d *DemoTable) Target() jobs.Target { return jobs.Target{Bucket: d.Bucket, Table: d.ID} }

// Load loads the table afresh.
func (d *DemoTable) Load() *table.Table {
	d.T.Helper()
	tbl, err := d.Bucket.LoadTable(d.Ctx, d.ID)
	if err != nil {
		d.T.Fatal(err)
	}
	return tbl
}

// Run runs job with the runner's full path (settings, recording) and
// returns its outcome.
func (d *DemoTable) Run(job jobs.Job, opts jobs.Options) jobs.Outcome {
	d.T.Helper()
	r := &jobs.Runner{Store: d.Store, Resolver: d.Resolver(), Jobs: map[maintenance.JobType]jobs.Job{job.Type(): job}}
	out, err := r.Run(d.Ctx, d.Target(), job.Type(), "test", opts)
	if err != nil {
		d.T.Fatal(err)
	}
	return out
}

// AppendRows commits n rows (event_id and ts only; other columns null),
// retrying on commit conflicts like a streaming writer does.
func AppendRows(ctx context.Context, b *bucket.Bucket, id bucket.TableID, n int) error {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "event_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	}, nil)
	for attempt := 0; attempt < 50; attempt++ {
		tbl, err := b.LoadTable(ctx, id)
		if err != nil {
			return err
		}
		bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		for i := 0; i < n; i++ {
			bld.Field(0).(*array.Int64Builder).Append(int64(1_000_000 + i))
			bld.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(time.Now().UnixMicro()))
		}
		rec := bld.NewRecordBatch()
		bld.Release()
		rdr, _ := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
		_, err = tbl.Append(ctx, rdr, nil)
		rdr.Release()
		rec.Release()
		if err == nil {
			return nil
		}
		if !errors.Is(err, table.ErrCommitFailed) && !strings.Contains(err.Error(), "requirement failed") {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
	return errors.New("writer gave up after 50 conflicting commits")
}

// NewTable creates namespace.name in b's catalog (the namespace too,
// unless it exists) with sc and opts, and fails the test on any error.
func NewTable(t testing.TB, b *bucket.Bucket, namespace, name string, sc *iceberg.Schema, opts ...catalog.CreateTableOpt) *table.Table {
	t.Helper()
	ctx := context.Background()
	cat, err := b.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{namespace}, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, table.Identifier{namespace, name}, sc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}
