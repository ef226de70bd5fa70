package statistics

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/puffin"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/compactor"
	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/internal/theta"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// schema has a column of each type the issue names, with nulls in the
// optional ones.
var schema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
	iceberg.NestedField{ID: 4, Name: "amount", Type: iceberg.DecimalTypeOf(12, 2)},
	iceberg.NestedField{ID: 5, Name: "day", Type: iceberg.PrimitiveTypes.Date},
	iceberg.NestedField{ID: 6, Name: "raw", Type: iceberg.PrimitiveTypes.Binary},
	iceberg.NestedField{ID: 7, Name: "cat", Type: iceberg.PrimitiveTypes.String},
)

// gen writes rows and keeps every distinct value written per column,
// serialized, so that a test knows the exact distinct counts.
type gen struct {
	rng      *rand.Rand
	next     int64
	distinct map[string]map[string]bool
}

func newGen() *gen {
	return &gen{rng: rand.New(rand.NewPCG(7, 11)), next: 1, distinct: map[string]map[string]bool{}}
}

func (g *gen) seen(col string, b []byte) {
	if g.distinct[col] == nil {
		g.distinct[col] = map[string]bool{}
	}
	g.distinct[col][string(b)] = true
}

// record is n rows: id unique; name from a pool of 12,000 with one null in
// ten; ts from 9,000 instants; amount from 7,000 cents values, negative
// too; day from 400 days; raw from 5,000 byte strings; cat from 5 values.
func (g *gen) record(sc *arrow.Schema, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for range n {
		id := g.next
		g.next++
		b.Field(0).(*array.Int64Builder).Append(id)
		g.seen("id", theta.Long(nil, id))
		if g.rng.IntN(10) == 0 {
			b.Field(1).AppendNull()
		} else {
			s := fmt.Sprintf("name-%d", g.rng.IntN(12_000))
			b.Field(1).(*array.StringBuilder).Append(s)
			g.seen("name", []byte(s))
		}
		ts := int64(1_700_000_000_000_000 + g.rng.IntN(9_000)*1_000_003)
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(ts))
		g.seen("ts", theta.Long(nil, ts))
		cents := int64(g.rng.IntN(7_000) - 3_500)
		b.Field(3).(*array.Decimal128Builder).Append(decimal128.FromI64(cents))
		g.seen("amount", theta.Decimal(nil, big.NewInt(cents)))
		day := int32(19_000 + g.rng.IntN(400))
		b.Field(4).(*array.Date32Builder).Append(arrow.Date32(day))
		g.seen("day", theta.Int(nil, day))
		if g.rng.IntN(20) == 0 {
			b.Field(5).AppendNull()
		} else {
			raw := []byte(strconv.Itoa(g.rng.IntN(5_000)))
			raw = append(raw, 0xff, byte(len(raw)))
			b.Field(5).(*array.BinaryBuilder).Append(raw)
			g.seen("raw", raw)
		}
		c := string(rune('a' + g.rng.IntN(5)))
		b.Field(6).(*array.StringBuilder).Append(c)
		g.seen("cat", []byte(c))
	}
	return b.NewRecordBatch()
}

func (g *gen) append(t testing.TB, ctx context.Context, tbl *table.Table, n int) *table.Table {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	rec := g.record(sc, n)
	defer rec.Release()
	rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	tbl, err = tbl.Append(ctx, rdr, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

type env struct {
	*tableenv.Env
	gen    *gen
	runner *jobs.Runner
	job    *Job
}

func newEnv(t testing.TB) (*env, *table.Table) {
	home := t.TempDir()
	return newEnvWith(t, configs.Embedded(home), home)
}

// onLocalAndS3 runs fn on a table on local disk, and on one on the S3
// server (catalog in SQLite) where it is configured.
func onLocalAndS3(t *testing.T, fn func(*testing.T, *env, *table.Table)) {
	t.Run("local", func(t *testing.T) {
		e, tbl := newEnv(t)
		fn(t, e, tbl)
	})
	t.Run("s3", func(t *testing.T) {
		home := t.TempDir()
		e, tbl := newEnvWith(t, tableenv.SQLOnS3(home, servers.S3(t)), home)
		fn(t, e, tbl)
	})
}

// newEnvWith is newEnv on cfg's first bucket.
func newEnvWith(t testing.TB, cfg *configs.Config, home string) (*env, *table.Table) {
	e, tbl := tableenv.NewWith(t, cfg, home, schema, *iceberg.UnpartitionedSpec, "2")
	return wrapEnv(e), tbl
}

// wrapEnv is e with statistics enabled, a runner of statistics and
// compaction, and the generator.
func wrapEnv(e *tableenv.Env) *env {
	e.Defaults.Configs[maintenance.Statistics] = maintenance.Config{Status: maintenance.Enabled}
	j := &Job{}
	runner := e.Runner(j.Definition())
	runner.Jobs = jobs.Map(j.Definition(), (&compactor.Job{}).Definition())
	return &env{Env: e, gen: newGen(), runner: runner, job: j}
}

func (e *env) run(typ maintenance.JobType) jobs.Outcome {
	e.T.Helper()
	out, err := e.runner.Run(e.Ctx, e.Target(), typ, "test", jobs.Options{Now: time.Now()})
	if err != nil {
		e.T.Fatalf("%s: %v", typ, err)
	}
	if out.Status != "Successful" {
		e.T.Fatalf("%s: %s (%s)", typ, out.Status, out.FailureMessage)
	}
	return out
}

func (e *env) stats() *Figures {
	e.T.Helper()
	fig := e.run(maintenance.Statistics).Figures.(*Figures)
	e.T.Logf("statistics: %s", fig.Text())
	return fig
}

// checkTable loads the table through iceberg-go, finds the statistics
// file of the current snapshot, reads its Puffin file, and checks one
// theta blob per column whose ndv, and whose sketch's own estimate, is
// within 3% of the exact distinct count.
func (e *env) checkTable(t *testing.T) {
	t.Helper()
	tbl := e.Load()
	cur := tbl.CurrentSnapshot()
	var sf *table.StatisticsFile
	n := 0
	for f := range tbl.Metadata().Statistics() {
		n++
		if f.SnapshotID == cur.SnapshotID {
			sf = &f
		}
	}
	if sf == nil || n != 1 {
		t.Fatalf("the metadata lists %d statistics files, none or more than the current snapshot's %d", n, cur.SnapshotID)
	}
	fs, err := tbl.FS(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fs.Open(sf.StatisticsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := puffin.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	fields := map[int32]bool{}
	for _, m := range r.Blobs() {
		if m.Type != puffin.BlobTypeDataSketchesTheta || len(m.Fields) != 1 || fields[m.Fields[0]] {
			t.Fatalf("blob %+v: not one theta blob per column", m)
		}
		fields[m.Fields[0]] = true
		if m.SnapshotID != cur.SnapshotID || m.SequenceNumber != cur.SequenceNumber {
			t.Errorf("blob of field %d describes snapshot %d seq %d, not %d seq %d", m.Fields[0], m.SnapshotID, m.SequenceNumber, cur.SnapshotID, cur.SequenceNumber)
		}
		name, _ := tbl.Schema().FindColumnName(int(m.Fields[0]))
		exact := float64(len(e.gen.distinct[name]))
		got, err := strconv.ParseFloat(m.Properties[planner.NDVProperty], 64)
		if err != nil {
			t.Fatalf("%s: ndv %q", name, m.Properties[planner.NDVProperty])
		}
		data, err := r.ReadBlobByMetadata(m)
		if err != nil {
			t.Fatal(err)
		}
		c, err := theta.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got/exact-1) > 0.03 || math.Round(c.Estimate()) != got {
			t.Errorf("%s: ndv %.0f (sketch %.1f), exact %.0f", name, got, c.Estimate(), exact)
		}
	}
	if len(fields) != len(schema.Fields()) {
		t.Errorf("%d theta blobs, want one per column (%d)", len(fields), len(schema.Fields()))
	}
}

// TestStatistics is the acceptance path: a full computation on a
// generated table, then a 1% append that the next run reads alone, then a
// compaction after which a run reads no data file — ndv within 3% of the
// exact distinct count at every step, and the table loadable. On local
// disk, on the S3 server (catalog in SQLite), and on the Iceberg REST
// catalog with S3 (SeaweedFS), where they are configured.
func TestStatistics(t *testing.T) {
	onLocalAndS3(t, acceptance)
	t.Run("rest", func(t *testing.T) {
		te, tbl := tableenv.NewREST(t, schema, *iceberg.UnpartitionedSpec, "2")
		acceptance(t, wrapEnv(te), tbl)
	})
}

func acceptance(t *testing.T, e *env, tbl *table.Table) {
	const files, rows = 4, 5_000
	for range files {
		tbl = e.gen.append(t, e.Ctx, tbl, rows)
	}

	fig := e.stats()
	if !fig.Full || fig.DataFilesRead != files || fig.RowsRead != files*rows || fig.StatisticsPath == "" {
		t.Fatalf("first run: full %v, %d files, %d rows read, wrote %q", fig.Full, fig.DataFilesRead, fig.RowsRead, fig.StatisticsPath)
	}
	testkit.CheckCounters(t, maintenance.Statistics, fig)
	e.checkTable(t)

	// Nothing changed: nothing read, nothing written.
	if fig := e.stats(); fig.DataFilesRead != 0 || fig.StatisticsPath != "" {
		t.Errorf("a run on unchanged statistics read %d files and wrote %q", fig.DataFilesRead, fig.StatisticsPath)
	}

	// 1% more rows: the run reads the one new file only. Before it, the
	// coverage the health report and /metrics show is one commit behind.
	tbl = e.gen.append(t, e.Ctx, e.Load(), files*rows/100)
	if c := planner.StatisticsCoverageOf(tbl.Metadata()); c == nil || c.CommitsBehind != 1 || c.Columns != len(schema.Fields()) {
		t.Errorf("coverage after an append: %+v, want 1 commit behind", c)
	}
	fig = e.stats()
	if c := planner.StatisticsCoverageOf(e.Load().Metadata()); c == nil || c.CommitsBehind != 0 {
		t.Errorf("coverage after the run: %+v, want current", c)
	}
	if fig.Full || fig.DataFilesRead != 1 || fig.RowsRead != files*rows/100 || fig.CommitsBehind != 1 {
		t.Fatalf("after a 1%% append: full %v (%s), %d files and %d rows read, %d commits behind", fig.Full, fig.Reason, fig.DataFilesRead, fig.RowsRead, fig.CommitsBehind)
	}
	e.checkTable(t)

	// A compaction rewrites the files into one: same rows, nothing read.
	e.run(maintenance.Compaction)
	if op := e.Load().CurrentSnapshot().Summary.Operation; op != table.OpReplace {
		t.Fatalf("compaction committed %s, not replace", op)
	}
	fig = e.stats()
	if fig.Full || fig.DataFilesRead != 0 || fig.BytesRead != 0 || fig.StatisticsPath == "" {
		t.Fatalf("after a compaction: full %v (%s), %d files read, %d bytes, wrote %q", fig.Full, fig.Reason, fig.DataFilesRead, fig.BytesRead, fig.StatisticsPath)
	}
	e.checkTable(t)
	_ = tbl
}

func jobsNow() jobs.Options { return jobs.Options{Now: time.Now()} }
