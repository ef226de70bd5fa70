// Package demo creates the embedded default's sample table, demo.events,
// shaped like what a streaming writer (Flink, Kafka Connect) leaves behind:
// a day-partitioned table with hundreds of small data files from many small
// appends, position and equality deletes, a history of snapshots spread
// over the last three weeks, and a few stray files of a "crashed writer".
package demo

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icekeeper/icekeeper/internal/bucket"
)

// Namespace and Table name the demo table inside the local bucket.
const (
	Namespace = "demo"
	Table     = "events"
)

// Options shape the generated table; the zero value is the documented demo.
type Options struct {
	Appends       int       // appends (one snapshot each); default 60
	DaysPerAppend int       // partitions each append touches; default 4
	RowsPerFile   int       // rows per data file; default 150
	Strays        int       // stray files of a crashed writer; default 3
	Now           time.Time // the present, for backdating; default time.Now()
	Seed          uint64    // random seed; default 1
	Reset         bool      // drop and recreate an existing demo table
	Progress      func(done, total int)
}

func (o *Options) defaults() {
	if o.Appends == 0 {
		o.Appends = 60
	}
	if o.DaysPerAppend == 0 {
		o.DaysPerAppend = 4
	}
	if o.RowsPerFile == 0 {
		o.RowsPerFile = 150
	}
	if o.Strays == 0 {
		o.Strays = 3
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Progress == nil {
		o.Progress = func(int, int) {}
	}
}

// ErrExists is returned when the demo table exists and Reset is false.
var ErrExists = errors.New("demo table already exists")

// Result describes what Create made.
type Result struct {
	Location   string   `json:"location"`
	Snapshots  int      `json:"snapshots"`
	DataFiles  int      `json:"dataFiles"`
	Rows       int64    `json:"rows"`
	StrayFiles []string `json:"strayFiles"`
}

// Schema is the demo table's schema.
func Schema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "event_id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "user_id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 3, Name: "event_type", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 5, Name: "payload", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 6, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
	)
}

var arrowSchema = arrow.NewSchema([]arrow.Field{
	{Name: "event_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "user_id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "event_type", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "payload", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// Create builds the demo table in b's catalog. b must be the embedded
// default's bucket: the history is backdated by pointing its SQLite catalog
// at a rewritten metadata file, which only the embedded catalog allows.
func Create(ctx context.Context, b *bucket.Bucket, opts Options) (*Result, error) {
	opts.defaults()
	cat, err := b.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	ident := table.Identifier{Namespace, Table}
	exists, err := cat.CheckTableExists(ctx, ident)
	if err != nil {
		return nil, fmt.Errorf("check for demo table: %w", err)
	}
	if exists && !opts.Reset {
		return nil, fmt.Errorf("%w: %s/%s.%s (use --reset to recreate it)", ErrExists, b.Name(), Namespace, Table)
	}
	if exists {
		if err := dropWithFiles(ctx, cat, ident); err != nil {
			return nil, err
		}
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{Namespace}, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return nil, fmt.Errorf("create namespace %s: %w", Namespace, err)
	}
	sc := Schema()
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{4}, FieldID: 1000, Name: "ts_day", Transform: iceberg.DayTransform{}})
	tbl, err := cat.CreateTable(ctx, ident, sc,
		catalog.WithPartitionSpec(&spec),
		catalog.WithProperties(iceberg.Properties{
			"format-version":                       "2",
			"write.delete.mode":                    "merge-on-read",
			"write.parquet.compression-codec":      "snappy",
			"commit.manifest-merge.enabled":        "false",
			"history.expire.min-snapshots-to-keep": "1",
			// Metadata files past the last 20 are deleted on commit, as a
			// streaming writer's table should be set up; icekeeper's own
			// commits honour it too.
			"write.metadata.delete-after-commit.enabled": "true",
			"write.metadata.previous-versions-max":       "20",
			// Record expiration, once enabled, goes by the event time.
			"icekeeper.record-expiration.column": "ts",
		}))
	if err != nil {
		return nil, fmt.Errorf("create demo table: %w", err)
	}

	rng := rand.New(rand.NewPCG(opts.Seed, 42))
	total := opts.Appends + 2
	start := opts.Now.Add(-21 * 24 * time.Hour).Truncate(24 * time.Hour)
	var nextID int64
	var someRows []row
	for i := 0; i < opts.Appends; i++ {
		// Append i writes rows of DaysPerAppend consecutive days, sliding
		// over the three weeks, like late and on-time events of a stream.
		firstDay := start.Add(time.Duration(i*20/opts.Appends) * 24 * time.Hour)
		var rows []row
		for d := 0; d < opts.DaysPerAppend; d++ {
			day := firstDay.Add(time.Duration(d) * 24 * time.Hour)
			for r := 0; r < opts.RowsPerFile; r++ {
				nextID++
				rows = append(rows, randomRow(rng, nextID, day))
			}
		}
		if i%7 == 3 {
			someRows = append(someRows, rows[:5]...)
		}
		rec := toRecord(rows)
		rdr, err := array.NewRecordReader(arrowSchema, []arrow.RecordBatch{rec})
		if err != nil {
			rec.Release()
			return nil, err
		}
		tbl, err = tbl.Append(ctx, rdr, iceberg.Properties{"icekeeper.demo": "append"})
		rdr.Release()
		rec.Release()
		if err != nil {
			return nil, fmt.Errorf("demo append %d: %w", i, err)
		}
		opts.Progress(i+1, total)
	}

	// Position deletes: merge-on-read delete of one event type on a few days.
	delDay := start.Add(5 * 24 * time.Hour)
	filter := iceberg.NewAnd(
		iceberg.EqualTo(iceberg.Reference("event_type"), "bot"),
		iceberg.NewAnd(
			iceberg.GreaterThanEqual(iceberg.Reference("ts"), delDay.UnixMicro()),
			iceberg.LessThan(iceberg.Reference("ts"), delDay.Add(3*24*time.Hour).UnixMicro())))
	if tbl, err = tbl.Delete(ctx, filter, iceberg.Properties{"icekeeper.demo": "position-deletes"}); err != nil {
		return nil, fmt.Errorf("demo position deletes: %w", err)
	}
	opts.Progress(opts.Appends+1, total)

	// Equality deletes: a GDPR-style erase of individual events by id.
	tx := tbl.NewTransaction()
	if err := tx.CommitEqualityDeletes(ctx, []int{1}, equalityDeleteRecords(someRows), iceberg.Properties{"icekeeper.demo": "equality-deletes"}); err != nil {
		return nil, fmt.Errorf("demo equality deletes: %w", err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("commit demo equality deletes: %w", err)
	}
	opts.Progress(total, total)

	if err := backdate(ctx, b, tbl, start, opts.Now); err != nil {
		return nil, err
	}
	if tbl, err = cat.LoadTable(ctx, ident); err != nil {
		return nil, fmt.Errorf("reload demo table: %w", err)
	}
	strays, err := writeStrays(ctx, tbl, opts)
	if err != nil {
		return nil, err
	}
	res := &Result{Location: tbl.Location(), Snapshots: len(tbl.Metadata().Snapshots()), StrayFiles: strays}
	if s := tbl.CurrentSnapshot(); s != nil && s.Summary != nil {
		fmt.Sscan(s.Summary.Properties["total-data-files"], &res.DataFiles)
		fmt.Sscan(s.Summary.Properties["total-records"], &res.Rows)
	}
	return res, nil
}

type row struct {
	id, user   int64
	typ        string
	ts         time.Time
	payload    string
	amount     float64
	nullAmount bool
}

var eventTypes = []string{"view", "view", "view", "click", "click", "purchase", "bot"}

func randomRow(rng *rand.Rand, id int64, day time.Time) row {
	n := 20 + rng.IntN(60)
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	return row{
		id:         id,
		user:       rng.Int64N(5000),
		typ:        eventTypes[rng.IntN(len(eventTypes))],
		ts:         day.Add(time.Duration(rng.Int64N(int64(24 * time.Hour)))).Truncate(time.Microsecond),
		payload:    string(b),
		amount:     float64(rng.IntN(100000)) / 100,
		nullAmount: rng.IntN(4) == 0,
	}
}

func toRecord(rows []row) arrow.RecordBatch {
	bld := array.NewRecordBuilder(memory.DefaultAllocator, arrowSchema)
	defer bld.Release()
	for _, r := range rows {
		bld.Field(0).(*array.Int64Builder).Append(r.id)
		bld.Field(1).(*array.Int64Builder).Append(r.user)
		bld.Field(2).(*array.StringBuilder).Append(r.typ)
		bld.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts.UnixMicro()))
		bld.Field(4).(*array.StringBuilder).Append(r.payload)
		if r.nullAmount {
			bld.Field(5).AppendNull()
		} else {
			bld.Field(5).(*array.Float64Builder).Append(r.amount)
		}
	}
	return bld.NewRecordBatch()
}

// equalityDeleteRecords carries the key (event_id) and, because the table is
// partitioned, the partition source column (ts) that routes each delete to
// its partition.
func equalityDeleteRecords(rows []row) func(yield func(arrow.RecordBatch, error) bool) {
	sc := arrow.NewSchema([]arrow.Field{arrowSchema.Field(0), arrowSchema.Field(3)}, nil)
	return func(yield func(arrow.RecordBatch, error) bool) {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer bld.Release()
		for _, r := range rows {
			bld.Field(0).(*array.Int64Builder).Append(r.id)
			bld.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts.UnixMicro()))
		}
		rec := bld.NewRecordBatch()
		defer rec.Release()
		yield(rec, nil)
	}
}

// backdate spreads the snapshots' commit times evenly over [start, now) by
// writing a copy of the current metadata file with rewritten timestamps and
// pointing the SQLite catalog at it. Iceberg writers stamp commits with the
// wall clock, so a history "from the last weeks" cannot be made otherwise.
func backdate(ctx context.Context, b *bucket.Bucket, tbl *table.Table, start, now time.Time) error {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	f, err := fs.Open(tbl.MetadataLocation())
	if err != nil {
		return fmt.Errorf("read demo metadata: %w", err)
	}
	raw, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("read demo metadata: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var meta map[string]any
	if err := dec.Decode(&meta); err != nil {
		return fmt.Errorf("parse demo metadata: %w", err)
	}
	snaps, _ := meta["snapshots"].([]any)
	span := now.Add(-time.Hour).Sub(start)
	newTS := map[string]int64{}
	for i, s := range snaps {
		m := s.(map[string]any)
		ts := start.Add(span * time.Duration(i+1) / time.Duration(len(snaps))).UnixMilli()
		newTS[string(m["snapshot-id"].(json.Number))] = ts
		m["timestamp-ms"] = ts
	}
	if log, ok := meta["snapshot-log"].([]any); ok {
		for _, e := range log {
			m := e.(map[string]any)
			if ts, ok := newTS[string(m["snapshot-id"].(json.Number))]; ok {
				m["timestamp-ms"] = ts
			}
		}
	}
	// The superseded current file joins the metadata log, as any commit
	// would record it.
	log, _ := meta["metadata-log"].([]any)
	log = append(log, map[string]any{"metadata-file": tbl.MetadataLocation()})
	for i, e := range log {
		m := e.(map[string]any)
		m["timestamp-ms"] = start.Add(span * time.Duration(i) / time.Duration(len(log)+1)).UnixMilli()
	}
	meta["metadata-log"] = log
	meta["last-updated-ms"] = now.Add(-time.Hour).UnixMilli()
	out, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	// The rewritten file is a new metadata version; the old one stays in
	// the metadata log like any superseded version.
	dir := filepath.Dir(localPath(tbl.MetadataLocation()))
	next := filepath.Join(dir, fmt.Sprintf("%05d-%s.metadata.json", len(log), uuid.NewString()))
	if err := os.WriteFile(next, out, 0o644); err != nil {
		return fmt.Errorf("write backdated demo metadata: %w", err)
	}
	if _, err := table.NewFromLocation(ctx, tbl.Identifier(), "file://"+next, func(context.Context) (icebergio.IO, error) { return fs, nil }, nil); err != nil {
		return fmt.Errorf("backdated demo metadata does not load: %w", err)
	}
	return Repoint(ctx, b, table.Identifier{Namespace, Table}, tbl.MetadataLocation(), "file://"+next)
}

// Repoint swaps a table's metadata pointer in the embedded SQLite catalog,
// checking the old value like a catalog commit would. The demo and test
// fixtures use it to install metadata that writers cannot produce, such as
// backdated or synthesised histories.
func Repoint(ctx context.Context, b *bucket.Bucket, ident table.Identifier, oldLoc, newLoc string) error {
	props := b.Properties()
	if props["sql.driver"] != "sqlite" {
		return errors.New("demo: the demo table can only be made in the embedded SQLite catalog")
	}
	db, err := sql.Open("sqlite", strings.TrimPrefix(props["uri"], "sql://"))
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := db.ExecContext(ctx, `UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ?
		WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND metadata_location = ?`,
		newLoc, oldLoc, b.CatalogName(), strings.Join(ident[:len(ident)-1], "."), ident[len(ident)-1], oldLoc)
	if err != nil {
		return fmt.Errorf("point catalog at backdated metadata: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return errors.New("point catalog at backdated metadata: the table changed meanwhile")
	}
	return nil
}

// writeStrays copies a live data file under new names, as a writer that
// crashed after writing but before committing leaves them, and ages them
// past a week.
func writeStrays(ctx context.Context, tbl *table.Table, opts Options) ([]string, error) {
	var src string
	for t, err := range tblFiles(ctx, tbl) {
		if err != nil {
			return nil, err
		}
		src = t
		break
	}
	data, err := os.ReadFile(localPath(src))
	if err != nil {
		return nil, fmt.Errorf("read data file for strays: %w", err)
	}
	dir := filepath.Join(localPath(tbl.Location()), "data")
	var out []string
	for i := 0; i < opts.Strays; i++ {
		p := filepath.Join(dir, fmt.Sprintf("00000-%d-crashed-writer-%s.parquet", i, uuid.NewString()))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return nil, fmt.Errorf("write stray file: %w", err)
		}
		age := opts.Now.Add(-time.Duration(8+i) * 24 * time.Hour)
		if err := os.Chtimes(p, age, age); err != nil {
			return nil, err
		}
		out = append(out, "file://"+p)
	}
	return out, nil
}

func tblFiles(ctx context.Context, tbl *table.Table) func(yield func(string, error) bool) {
	return func(yield func(string, error) bool) {
		scan := tbl.Scan()
		tasks, err := scan.PlanFiles(ctx)
		if err != nil {
			yield("", fmt.Errorf("plan demo scan: %w", err))
			return
		}
		for _, t := range tasks {
			if !yield(t.File.FilePath(), nil) {
				return
			}
		}
	}
}

// dropWithFiles drops the table from the catalog and removes its directory.
func dropWithFiles(ctx context.Context, cat catalog.Catalog, ident table.Identifier) error {
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return fmt.Errorf("load demo table to reset it: %w", err)
	}
	loc := localPath(tbl.Location())
	if err := cat.DropTable(ctx, ident); err != nil {
		return fmt.Errorf("drop demo table: %w", err)
	}
	if loc == "" || loc == "/" {
		return fmt.Errorf("refusing to remove demo table location %q", tbl.Location())
	}
	return os.RemoveAll(loc)
}

func localPath(loc string) string {
	if u, err := url.Parse(loc); err == nil && u.Scheme == "file" {
		return u.Path
	}
	return loc
}
