package statistics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/verified"
)

// errNotFromChange is a previous partition statistics file the change
// cannot be laid on (another schema, or totals that do not add up): the
// run counts from the manifests instead.
var errNotFromChange = errors.New("partition statistics cannot be brought up to date from the change")

// partitionsFromChange brings the partition statistics file at path, which
// describes an ancestor of snapshot id, up to id: the file's rows, plus
// the files each of steps added and minus those it deleted, read from the
// manifests each step wrote (not the whole table's). The result is held
// to the current snapshot's summary totals; a file that does not add up
// is errNotFromChange, and so is one of another schema.
func partitionsFromChange(ctx context.Context, fs icebergio.IO, meta table.Metadata, path string, steps []int64, id int64) (*partitionFile, error) {
	part, err := unifiedPartitionType(meta)
	if err != nil || len(part.FieldList) == 0 {
		return nil, err
	}
	rows, err := readPartitionStatistics(ctx, fs, path, part, meta.Version())
	if err != nil {
		return nil, err
	}
	snaps := make([]*table.Snapshot, len(steps))
	for i, step := range steps {
		snaps[i] = meta.SnapshotByID(step)
	}
	entries, err := stepEntries(ctx, fs, snaps, func(iceberg.ManifestFile) bool { return true }, false)
	if err != nil {
		return nil, err
	}
	for i, step := range steps {
		for _, e := range entries[i] {
			if e.SnapshotID() != step {
				continue // carried over (EXISTING), or another snapshot's
			}
			sign := 0
			switch e.Status() {
			case iceberg.EntryStatusADDED:
				sign = 1
			case iceberg.EntryStatusDELETED:
				sign = -1
			}
			if sign == 0 {
				continue
			}
			r := rowOf(rows, e.DataFile(), part.FieldList)
			r.add(e.DataFile(), sign)
			r.lastSnapshot, r.lastAt = step, snaps[i].TimestampMs
		}
	}
	out := fileOf(meta, part, rows)
	if err := checkTotals(meta.SnapshotByID(id), out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkTotals holds the rows to snap's summary totals, where it has them.
func checkTotals(snap *table.Snapshot, p *partitionFile) error {
	var dataFiles, records, deleteFiles, pos, eq int64
	for _, r := range p.rows {
		dataFiles += int64(r.dataFiles)
		records += r.dataRecords
		deleteFiles += int64(r.posFiles + r.eqFiles + r.dvs)
		pos += r.posRecords
		eq += r.eqRecords
	}
	for key, got := range map[string]int64{"total-data-files": dataFiles, "total-records": records,
		"total-delete-files": deleteFiles, "total-position-deletes": pos, "total-equality-deletes": eq} {
		if want, ok := verified.SummaryTotal(snap, key); ok && want != got {
			return fmt.Errorf("%w: the rows add up to %s %d, snapshot %d's summary says %d", errNotFromChange, key, got, snap.SnapshotID, want)
		}
	}
	return nil
}

// readPartitionStatistics reads the rows of the partition statistics file
// at path, which must have the schema a file of part written now has.
func readPartitionStatistics(ctx context.Context, fs icebergio.IO, path string, part *iceberg.StructType, version int) (map[string]*partitionRow, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open partition statistics file %s: %w", path, err)
	}
	raw, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("read partition statistics file %s: %w", path, err)
	}
	pr, err := file.NewParquetReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("read partition statistics file %s: %w", path, err)
	}
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("read partition statistics file %s: %w", path, err)
	}
	tbl, err := fr.ReadTable(ctx)
	if err != nil {
		return nil, fmt.Errorf("read partition statistics file %s: %w", path, err)
	}
	defer tbl.Release()
	sc, err := table.ArrowSchemaToIceberg(tbl.Schema(), false, nil)
	if err != nil || !sc.Equals(PartitionStatisticsSchema(part, version)) {
		return nil, fmt.Errorf("%w: %s has another schema", errNotFromChange, path)
	}
	rows := map[string]*partitionRow{}
	tr := array.NewTableReader(tbl, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		ps := rec.Column(0).(*array.Struct)
		for i := range int(rec.NumRows()) {
			r := &partitionRow{values: map[int]any{}}
			for j, f := range part.FieldList {
				if v := valueAt(ps.Field(j), i); v != nil {
					r.values[f.ID] = v
				}
			}
			r.specID = int32At(rec.Column(1), i)
			r.dataRecords, r.dataFiles, r.dataBytes = int64At(rec.Column(2), i), int32At(rec.Column(3), i), int64At(rec.Column(4), i)
			r.posRecords, r.posFiles = int64At(rec.Column(5), i), int32At(rec.Column(6), i)
			r.eqRecords, r.eqFiles = int64At(rec.Column(7), i), int32At(rec.Column(8), i)
			r.lastAt, r.lastSnapshot = int64At(rec.Column(10), i), int64At(rec.Column(11), i)
			r.dvs = int32At(rec.Column(12), i)
			rows[partitionKey(r.specID, r.values, part.FieldList)] = r
		}
	}
	return rows, tr.Err()
}

// valueAt is row i of a partition field's column as iceberg-go holds
// partition values (nil: null).
func valueAt(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.Boolean:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Float32:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.Date32:
		return iceberg.Date(a.Value(i))
	case *array.Time64:
		return iceberg.Time(a.Value(i))
	case *array.Timestamp:
		return iceberg.Timestamp(a.Value(i))
	case *array.String:
		return a.Value(i)
	case *array.Binary:
		return bytes.Clone(a.Value(i))
	case *array.FixedSizeBinary:
		return bytes.Clone(a.Value(i))
	case *array.Decimal128:
		dt := a.DataType().(*arrow.Decimal128Type)
		return iceberg.Decimal{Val: a.Value(i), Scale: int(dt.Scale)}
	}
	return a.ValueStr(i)
}

func int64At(a arrow.Array, i int) int64 {
	if c, ok := a.(*array.Int64); ok && c.IsValid(i) {
		return c.Value(i)
	}
	return 0
}

func int32At(a arrow.Array, i int) int32 {
	if c, ok := a.(*array.Int32); ok && c.IsValid(i) {
		return c.Value(i)
	}
	return 0
}
