package statistics

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icekeeper/icekeeper/internal/verified"
)

// The columns of a partition statistics file, by the field IDs the
// Iceberg spec gives them ("Partition Statistics file").
const (
	psPartition = 1 + iota
	psSpecID
	psDataRecords
	psDataFiles
	psDataBytes
	psPosDeleteRecords
	psPosDeleteFiles
	psEqDeleteRecords
	psEqDeleteFiles
	psTotalRecords
	psLastUpdatedAt
	psLastUpdatedSnapshot
	psDVCount
)

// partitionFile is a partition statistics file's rows and the schema they
// are written with.
type partitionFile struct {
	schema *iceberg.Schema
	// fields are the unified partition type's fields, in its order.
	fields []iceberg.NestedField
	rows   []partitionRow
}

// partitionRow is one partition's figures, from the live entries of the
// snapshot's manifests. Row-level deletes are not applied, so the
// optional total_record_count is left null.
type partitionRow struct {
	specID                 int32
	values                 map[int]any // by partition field ID
	dataRecords, dataBytes int64
	dataFiles              int32
	posRecords, eqRecords  int64
	posFiles, eqFiles, dvs int32
	lastSnapshot           int64
	lastAt                 int64 // ms; 0 when the adding snapshot is expired
}

// PartitionStatisticsSchema is the spec's schema of a partition statistics
// file for a table whose unified partition type is part: the deletes'
// columns are required from format version 3.
func PartitionStatisticsSchema(part *iceberg.StructType, formatVersion int) *iceberg.Schema {
	v3 := formatVersion >= 3
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: psPartition, Name: "partition", Type: part, Required: true},
		iceberg.NestedField{ID: psSpecID, Name: "spec_id", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		iceberg.NestedField{ID: psDataRecords, Name: "data_record_count", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: psDataFiles, Name: "data_file_count", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		iceberg.NestedField{ID: psDataBytes, Name: "total_data_file_size_in_bytes", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: psPosDeleteRecords, Name: "position_delete_record_count", Type: iceberg.PrimitiveTypes.Int64, Required: v3},
		iceberg.NestedField{ID: psPosDeleteFiles, Name: "position_delete_file_count", Type: iceberg.PrimitiveTypes.Int32, Required: v3},
		iceberg.NestedField{ID: psEqDeleteRecords, Name: "equality_delete_record_count", Type: iceberg.PrimitiveTypes.Int64, Required: v3},
		iceberg.NestedField{ID: psEqDeleteFiles, Name: "equality_delete_file_count", Type: iceberg.PrimitiveTypes.Int32, Required: v3},
		iceberg.NestedField{ID: psTotalRecords, Name: "total_record_count", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: psLastUpdatedAt, Name: "last_updated_at", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: psLastUpdatedSnapshot, Name: "last_updated_snapshot_id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: psDVCount, Name: "dv_count", Type: iceberg.PrimitiveTypes.Int32, Required: v3},
	)
}

// unifiedPartitionType is the struct of every partition field of every
// spec of meta, by field ID, each optional (a spec without the field
// leaves it null): the partition type the spec's partition column has.
func unifiedPartitionType(meta table.Metadata) (*iceberg.StructType, error) {
	byID := map[int]iceberg.NestedField{}
	for _, spec := range meta.PartitionSpecs() {
		for _, f := range spec.PartitionType(meta.CurrentSchema()).FieldList {
			f.Required = false
			if prev, ok := byID[f.ID]; ok && !prev.Type.Equals(f.Type) {
				return nil, fmt.Errorf("partition field %d is %s in one spec and %s in another", f.ID, prev.Type, f.Type)
			}
			byID[f.ID] = f
		}
	}
	st := &iceberg.StructType{}
	for _, f := range byID {
		st.FieldList = append(st.FieldList, f)
	}
	slices.SortFunc(st.FieldList, func(a, b iceberg.NestedField) int { return cmp.Compare(a.ID, b.ID) })
	return st, nil
}

// partitionStatistics counts the live files of snapshot id by partition,
// reading its manifests through package verified. Nil for an
// unpartitioned table: it has one partition, whose figures its snapshot
// summary already holds.
func partitionStatistics(ctx context.Context, fs icebergio.IO, meta table.Metadata, id int64) (*partitionFile, error) {
	part, err := unifiedPartitionType(meta)
	if err != nil || len(part.FieldList) == 0 {
		return nil, err
	}
	snap := meta.SnapshotByID(id)
	list, err := verified.Manifests(fs, snap)
	if err != nil {
		return nil, err
	}
	rows := map[string]*partitionRow{}
	for m, err := range verified.ReadAhead(ctx, fs, list, true) {
		if err != nil {
			return nil, err
		}
		for _, e := range m.Entries {
			r := rowOf(rows, e.DataFile(), part.FieldList)
			r.add(e.DataFile(), 1)
			// The partition was last updated by the newest snapshot that
			// added one of its live files; one already expired has no
			// time, and a kept one is newer than any expired one.
			if s := meta.SnapshotByID(e.SnapshotID()); s != nil && s.TimestampMs > r.lastAt {
				r.lastSnapshot, r.lastAt = s.SnapshotID, s.TimestampMs
			} else if s == nil && r.lastAt == 0 {
				r.lastSnapshot = max(r.lastSnapshot, e.SnapshotID())
			}
		}
	}
	return fileOf(meta, part, rows), nil
}

// fileOf is the file of rows, sorted by partition, without the partitions
// that hold no file any more.
func fileOf(meta table.Metadata, part *iceberg.StructType, rows map[string]*partitionRow) *partitionFile {
	out := &partitionFile{schema: PartitionStatisticsSchema(part, meta.Version()), fields: part.FieldList}
	for _, r := range rows {
		if r.dataFiles > 0 || r.posFiles > 0 || r.eqFiles > 0 || r.dvs > 0 {
			out.rows = append(out.rows, *r)
		}
	}
	slices.SortFunc(out.rows, func(a, b partitionRow) int {
		for _, f := range part.FieldList {
			if c := compareValues(a.values[f.ID], b.values[f.ID]); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.specID, b.specID)
	})
	return out
}

// rowOf is the row of df's partition in rows, added when new.
func rowOf(rows map[string]*partitionRow, df iceberg.DataFile, fields []iceberg.NestedField) *partitionRow {
	key := partitionKey(df.SpecID(), df.Partition(), fields)
	r := rows[key]
	if r == nil {
		r = &partitionRow{specID: df.SpecID(), values: df.Partition()}
		rows[key] = r
	}
	return r
}

// add counts file df into r, or out of it with sign -1.
func (r *partitionRow) add(df iceberg.DataFile, sign int) {
	n, s32 := int64(sign), int32(sign)
	switch df.ContentType() {
	case iceberg.EntryContentData:
		r.dataFiles += s32
		r.dataRecords += n * df.Count()
		r.dataBytes += n * df.FileSizeBytes()
	case iceberg.EntryContentPosDeletes:
		r.posRecords += n * df.Count()
		if df.FileFormat() == iceberg.PuffinFile {
			r.dvs += s32 // a deletion vector: counted apart from files
		} else {
			r.posFiles += s32
		}
	case iceberg.EntryContentEqDeletes:
		r.eqFiles += s32
		r.eqRecords += n * df.Count()
	}
}

// partitionKey identifies a partition: its spec and its values, each in a
// canonical form, so that a value read back from a partition statistics
// file (a date as iceberg.Date) and the same value from a manifest (a
// date as int32) are one key.
func partitionKey(spec int32, values map[int]any, fields []iceberg.NestedField) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(int(spec)))
	for _, f := range fields {
		b.WriteByte(0)
		b.WriteString(canonical(values[f.ID]))
	}
	return b.String()
}

func canonical(v any) string {
	switch v := v.(type) {
	case nil:
		return "n"
	case bool:
		return "t" + strconv.FormatBool(v)
	case int32:
		return "i" + strconv.FormatInt(int64(v), 10)
	case int64:
		return "i" + strconv.FormatInt(v, 10)
	case iceberg.Date:
		return "i" + strconv.FormatInt(int64(v), 10)
	case iceberg.Time:
		return "i" + strconv.FormatInt(int64(v), 10)
	case iceberg.Timestamp:
		return "i" + strconv.FormatInt(int64(v), 10)
	case float32:
		return "f" + strconv.FormatFloat(float64(v), 'g', -1, 64)
	case float64:
		return "f" + strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		return "s" + v
	case []byte:
		return "b" + hex.EncodeToString(v)
	case uuid.UUID:
		return "b" + hex.EncodeToString(v[:])
	case iceberg.Decimal:
		return "d" + decimal128.Num(v.Val).BigInt().String()
	}
	return fmt.Sprintf("?%T:%v", v, v)
}

// compareValues orders partition values, nulls first. Integers compare
// as numbers whatever their Go type (a date read back from a file is an
// iceberg.Date, from a manifest an int32).
func compareValues(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	if x, ok := asInt(a); ok {
		if y, ok := asInt(b); ok {
			return cmp.Compare(x, y)
		}
	}
	switch a := a.(type) {
	case string:
		if b, ok := b.(string); ok {
			return cmp.Compare(a, b)
		}
	case []byte:
		if b, ok := b.([]byte); ok {
			return bytes.Compare(a, b)
		}
	case float32:
		if b, ok := b.(float32); ok {
			return cmp.Compare(a, b)
		}
	case float64:
		if b, ok := b.(float64); ok {
			return cmp.Compare(a, b)
		}
	}
	return cmp.Compare(canonical(a), canonical(b))
}

func asInt(v any) (int64, bool) {
	switch v := v.(type) {
	case int32:
		return int64(v), true
	case int64:
		return v, true
	case iceberg.Date:
		return int64(v), true
	case iceberg.Time:
		return int64(v), true
	case iceberg.Timestamp:
		return int64(v), true
	}
	return 0, false
}

// writePartitionStatistics writes p as Parquet to path, with the spec's
// field IDs (the Arrow schema iceberg-go derives from the Iceberg one
// carries them), and returns its partition statistics entry.
func writePartitionStatistics(fs icebergio.WriteFileIO, path string, snapshotID int64, p *partitionFile) (table.PartitionStatisticsFile, error) {
	sc, err := table.SchemaToArrowSchema(p.schema, nil, true, false)
	if err != nil {
		return table.PartitionStatisticsFile{}, fmt.Errorf("partition statistics schema: %w", err)
	}
	rec, err := p.record(sc)
	if err != nil {
		return table.PartitionStatisticsFile{}, err
	}
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return table.PartitionStatisticsFile{}, err
	}
	if err := w.Write(rec); err != nil {
		return table.PartitionStatisticsFile{}, fmt.Errorf("write partition statistics: %w", err)
	}
	if err := w.Close(); err != nil {
		return table.PartitionStatisticsFile{}, fmt.Errorf("write partition statistics: %w", err)
	}
	if err := fs.WriteFile(path, buf.Bytes()); err != nil {
		return table.PartitionStatisticsFile{}, fmt.Errorf("write partition statistics file %s: %w", path, err)
	}
	return table.PartitionStatisticsFile{SnapshotID: snapshotID, StatisticsPath: path, FileSizeInBytes: int64(buf.Len())}, nil
}

// record is p's rows as one Arrow record of schema sc.
func (p *partitionFile) record(sc *arrow.Schema) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range p.rows {
		pb := b.Field(0).(*array.StructBuilder)
		pb.Append(true)
		for i, f := range p.fields {
			if err := appendValue(pb.FieldBuilder(i), r.values[f.ID]); err != nil {
				return nil, fmt.Errorf("partition field %s: %w", f.Name, err)
			}
		}
		b.Field(1).(*array.Int32Builder).Append(r.specID)
		b.Field(2).(*array.Int64Builder).Append(r.dataRecords)
		b.Field(3).(*array.Int32Builder).Append(r.dataFiles)
		b.Field(4).(*array.Int64Builder).Append(r.dataBytes)
		b.Field(5).(*array.Int64Builder).Append(r.posRecords)
		b.Field(6).(*array.Int32Builder).Append(r.posFiles)
		b.Field(7).(*array.Int64Builder).Append(r.eqRecords)
		b.Field(8).(*array.Int32Builder).Append(r.eqFiles)
		b.Field(9).AppendNull()
		if r.lastAt > 0 {
			b.Field(10).(*array.Int64Builder).Append(r.lastAt)
		} else {
			b.Field(10).AppendNull()
		}
		b.Field(11).(*array.Int64Builder).Append(r.lastSnapshot)
		b.Field(12).(*array.Int32Builder).Append(r.dvs)
	}
	return b.NewRecordBatch(), nil
}

// appendValue appends a partition value, as iceberg-go holds it, to the
// builder of its Arrow type.
func appendValue(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	ok := true
	switch b := b.(type) {
	case *array.BooleanBuilder:
		x, is := v.(bool)
		ok = is
		b.Append(x)
	case *array.Int32Builder:
		switch x := v.(type) {
		case int32:
			b.Append(x)
		case iceberg.Date:
			b.Append(int32(x))
		default:
			ok = false
		}
	case *array.Int64Builder:
		x, is := v.(int64)
		ok = is
		b.Append(x)
	case *array.Float32Builder:
		x, is := v.(float32)
		ok = is
		b.Append(x)
	case *array.Float64Builder:
		x, is := v.(float64)
		ok = is
		b.Append(x)
	case *array.Date32Builder:
		switch x := v.(type) {
		case iceberg.Date:
			b.Append(arrow.Date32(x))
		case int32:
			b.Append(arrow.Date32(x))
		default:
			ok = false
		}
	case *array.Time64Builder:
		switch x := v.(type) {
		case iceberg.Time:
			b.Append(arrow.Time64(x))
		case int64:
			b.Append(arrow.Time64(x))
		default:
			ok = false
		}
	case *array.TimestampBuilder:
		switch x := v.(type) {
		case iceberg.Timestamp:
			b.Append(arrow.Timestamp(x))
		case int64:
			b.Append(arrow.Timestamp(x))
		default:
			ok = false
		}
	case *array.StringBuilder:
		x, is := v.(string)
		ok = is
		b.Append(x)
	case *array.BinaryBuilder:
		x, is := v.([]byte)
		ok = is
		b.Append(x)
	case *array.FixedSizeBinaryBuilder:
		switch x := v.(type) {
		case []byte:
			b.Append(x)
		case uuid.UUID:
			b.Append(x[:])
		default:
			ok = false
		}
	case *array.Decimal128Builder:
		x, is := v.(iceberg.Decimal)
		ok = is
		b.Append(decimal128.Num(x.Val))
	default:
		return fmt.Errorf("no Arrow builder for %T values", v)
	}
	if !ok {
		return fmt.Errorf("value %v (%T) does not fit %T", v, v, b)
	}
	return nil
}
