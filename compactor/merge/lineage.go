package merge

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
)

// Row lineage (format version 3). A row's _row_id and
// _last_updated_sequence_number are its file's values where the file
// holds them and they are not null; otherwise a reader derives them from
// the file's manifest entry: first_row_id plus the row's position in the
// file, and the entry's data sequence number. A merged row lands in a new
// file at another position, with a new entry, so the merge writes both
// columns out for every row, as iceberg-go's compaction does; the new
// file's own first_row_id and sequence number then never apply to them.

// lineageIDs are the field IDs of the row-lineage columns, in the order
// outputs hold them.
func lineageIDs() [2]int {
	return [2]int{iceberg.RowIDFieldID, iceberg.LastUpdatedSequenceNumberFieldID}
}

// lineageSource is where an input's rows take their lineage from.
type lineageSource struct {
	rowIDCol, seqCol int // the file's lineage columns, -1 when it has none
	firstRowID, seq  int64
}

// lineageColumns are the row-lineage columns of an output: optional longs,
// as iceberg-go writes them. Row IDs run in long stretches of consecutive
// values, which DELTA_BINARY_PACKED (Parquet 2.0, read by parquet-java,
// Arrow and every engine on them) writes in a few bytes per 128 rows,
// where plain pages took about a byte a row after zstd: 7% of a copied
// table's bytes, uploaded by icekeeper beside the row groups the storage
// copied. The sequence numbers of a group are few and take a dictionary
// when the table allows them.
func lineageColumns(set mergeSettings) []parquet.Field {
	col := func(id int, name string, enc encoding.Encoding) parquet.Field {
		n := parquet.FieldID(parquet.Optional(parquet.Int(64)), id)
		return outputColumn{Node: parquet.Compressed(parquet.Encoded(n, enc), set.codec), name: name}
	}
	var seqEnc encoding.Encoding = &parquet.Plain
	if set.dictionary {
		seqEnc = &parquet.RLEDictionary
	}
	return []parquet.Field{
		col(iceberg.RowIDFieldID, iceberg.RowIDColumnName, &parquet.DeltaBinaryPacked),
		col(iceberg.LastUpdatedSequenceNumberFieldID, iceberg.LastUpdatedSequenceNumberColumnName, seqEnc),
	}
}

// longBounds are the least and greatest of the values written to a long
// column.
type longBounds struct {
	min, max int64
	ok       bool
}

func (b *longBounds) add(lo, hi int64) {
	if !b.ok || lo < b.min {
		b.min = lo
	}
	if !b.ok || hi > b.max {
		b.max = hi
	}
	b.ok = true
}

// copiesLineage reports whether row group r of a file with lineage lin
// already holds every row's lineage, so that copying it keeps them, and
// adds their bounds: both columns in the output's places and Parquet
// types, with statistics that count no null.
func (o *mergeOutput) copiesLineage(pf *parquet.File, r int, lin lineageSource) bool {
	if lin.rowIDCol != o.ncols || lin.seqCol != o.ncols+1 {
		return false
	}
	in, out := pf.Schema().Fields(), o.schema.Fields()
	var b [2][2]int64
	for l := range 2 {
		c := o.ncols + l
		if !parquet.EqualNodes(in[c], out[c]) {
			return false
		}
		st := pf.Metadata().RowGroups[r].Columns[c].MetaData.Statistics
		if len(st.MinValue) != 8 || len(st.MaxValue) != 8 || st.NullCount != 0 {
			return false
		}
		b[l] = [2]int64{int64(binary.LittleEndian.Uint64(st.MinValue)), int64(binary.LittleEndian.Uint64(st.MaxValue))}
	}
	for l := range 2 {
		o.lineageBounds[l].add(b[l][0], b[l][1])
	}
	return true
}

// writeLineage writes the lineage of the rows of rg, which begin at
// position pos of their file, to the lineage columns w, columns col0 and
// col0+1 of their writer.
func (o *mergeOutput) writeLineage(w []*parquet.ColumnWriter, col0 int, rg parquet.RowGroup, lin lineageSource, pos int64) error {
	rows := rg.NumRows()
	for l, col := range [2]int{lin.rowIDCol, lin.seqCol} {
		// What a row without a value of its own inherits: base + step*k
		// for the k-th row of the row group.
		base, step := lin.firstRowID+pos, int64(1)
		if l == 1 {
			base, step = lin.seq, 0
		}
		lw := lineageWriter{w: w[l], col: col0 + l, out: o.lineageOut[:0], bounds: &o.lineageBounds[l]}
		if col < 0 {
			for k := range rows {
				if err := lw.write(base + step*k); err != nil {
					return err
				}
			}
		} else if err := lw.copy(rg.ColumnChunks()[col], o.lineageIn, base, step); err != nil {
			return fmt.Errorf("copy the lineage column %d: %w", col, err)
		}
		if err := lw.flush(); err != nil {
			return err
		}
		if lw.rows != rows {
			return fmt.Errorf("lineage of %d rows for a row group of %d", lw.rows, rows)
		}
		o.lineageOut = lw.out
	}
	return nil
}

// lineageWriter writes one lineage column of an output row group.
type lineageWriter struct {
	w      *parquet.ColumnWriter
	col    int // the column's index in the output
	out    []parquet.Value
	rows   int64
	bounds *longBounds
}

func (lw *lineageWriter) write(v int64) error {
	lw.out = append(lw.out, parquet.Int64Value(v).Level(0, 1, lw.col))
	lw.rows++
	lw.bounds.add(v, v)
	if len(lw.out) == cap(lw.out) {
		return lw.flush()
	}
	return nil
}

func (lw *lineageWriter) flush() error {
	if len(lw.out) == 0 {
		return nil
	}
	_, err := lw.w.WriteRowValues(lw.out)
	lw.out = lw.out[:0]
	return err
}

// copy writes an input's lineage column, giving its null values what the
// row inherits.
func (lw *lineageWriter) copy(cc parquet.ColumnChunk, values []parquet.Value, base, step int64) error {
	return eachBatch(cc, values, func(batch []parquet.Value) error {
		for _, v := range batch {
			x := base + step*lw.rows
			if !v.IsNull() {
				x = v.Int64()
			}
			if err := lw.write(x); err != nil {
				return err
			}
		}
		return nil
	})
}

// lineageBoundBytes are the manifest bounds of the lineage columns: a
// long's single-value serialization, little-endian.
func lineageBoundBytes(b longBounds) (lo, hi []byte) {
	return binary.LittleEndian.AppendUint64(nil, uint64(b.min)), binary.LittleEndian.AppendUint64(nil, uint64(b.max))
}

// appendLineage encodes the lineage of the rows of rg, a row group just
// copied from a file that holds none, which begin at position pos of that
// file, as two column chunks of their own, and adds them to the copy: the
// table's columns stay byte for byte as they were.
func (o *mergeOutput) appendLineage(rg parquet.RowGroup, lin lineageSource, pos int64) error {
	if o.lw == nil {
		schema := parquet.NewSchema("lineage", orderedGroup{fields: lineageColumns(o.set)})
		// The chunks go to the tail, so that the copied row groups
		// around them stay one range (stitcher.tail).
		o.lsink.out = &o.st.tail
		o.lw = parquet.NewWriter(&o.lsink, append([]parquet.WriterOption{schema}, o.opts[1:]...)...)
	}
	if err := o.writeLineage(o.lw.ColumnWriters(), 0, rg, lin, pos); err != nil {
		return err
	}
	// As flushReencoded: the chunks pass into the output, the rest of
	// the file is held.
	if err := o.lw.Flush(); err != nil {
		return err
	}
	o.lsink.hold = true
	if err := o.lw.Close(); err != nil {
		return err
	}
	md, err := o.st.adoptRowGroups(&o.lsink)
	if err != nil {
		return fmt.Errorf("lineage columns: %w", err)
	}
	if err := o.st.joinLast(md); err != nil {
		return fmt.Errorf("lineage columns: %w", err)
	}
	o.lsink.reset()
	o.lw.Reset(&o.lsink)
	return nil
}
