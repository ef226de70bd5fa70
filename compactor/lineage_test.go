package compactor

import (
	"encoding/binary"
	"io"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/parquet-go/parquet-go"

	"github.com/icekeeper/icekeeper/compactor/merge"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
)

// lineage is a row's _row_id and _last_updated_sequence_number.
type lineage struct{ rowID, seq int64 }

// lineageOf reads every visible row's lineage, by id, as iceberg-go reads
// it: a file's own values, else what the row inherits from its file's
// manifest entry. A row without both fails the test.
func (e *env) lineageOf(tbl *table.Table) map[int64]lineage {
	e.T.Helper()
	_, it, err := tbl.Scan(table.WithRowLineage()).ToArrowRecords(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	out := map[int64]lineage{}
	for rec, err := range it {
		if err != nil {
			e.T.Fatal(err)
		}
		sc := rec.Schema()
		id := rec.Column(sc.FieldIndices("id")[0]).(*array.Int64)
		rowID := rec.Column(sc.FieldIndices(iceberg.RowIDColumnName)[0]).(*array.Int64)
		seq := rec.Column(sc.FieldIndices(iceberg.LastUpdatedSequenceNumberColumnName)[0]).(*array.Int64)
		for i := 0; i < id.Len(); i++ {
			if rowID.IsNull(i) || seq.IsNull(i) {
				e.T.Fatalf("row %d has no lineage", id.Value(i))
			}
			out[id.Value(i)] = lineage{rowID.Value(i), seq.Value(i)}
		}
		rec.Release()
	}
	return out
}

// checkLineage compacts on the merge path and asserts that every row keeps
// its lineage and that the outputs hold it, with exact manifest metrics.
func (e *env) checkLineage(job *Job) *Figures {
	e.T.Helper()
	want := e.lineageOf(e.Load())
	before := statsOf(tableenv.BaseSchema, e.dataFiles())
	fig := e.checkCompaction(job)
	if fig.GroupsMerged == 0 || fig.GroupsMerged != fig.GroupsCommitted {
		e.T.Fatalf("%d of %d groups merged; every group is append-only", fig.GroupsMerged, fig.GroupsCommitted)
	}
	got := e.lineageOf(e.Load())
	if len(got) != len(want) {
		e.T.Fatalf("%d rows after, %d before", len(got), len(want))
	}
	for id, w := range want {
		if g := got[id]; g != w {
			e.T.Fatalf("row %d: lineage %+v after, %+v before", id, g, w)
		}
	}
	// The table's columns keep their counts and bounds.
	after := statsOf(tableenv.BaseSchema, e.dataFiles())
	for _, f := range tableenv.BaseSchema.Fields() {
		cmp := func(a, b []byte) int { c, _ := merge.CompareBound(f.Type, a, b); return c }
		if after.values[f.ID] != before.values[f.ID] || after.nulls[f.ID] != before.nulls[f.ID] {
			e.T.Errorf("column %s: %d values, %d nulls; before %d, %d", f.Name, after.values[f.ID], after.nulls[f.ID], before.values[f.ID], before.nulls[f.ID])
		}
		if after.lower[f.ID] == nil || cmp(after.lower[f.ID], before.lower[f.ID]) != 0 || cmp(after.upper[f.ID], before.upper[f.ID]) != 0 {
			e.T.Errorf("column %s: bounds [%x, %x], inputs' [%x, %x]", f.Name, after.lower[f.ID], after.upper[f.ID], before.lower[f.ID], before.upper[f.ID])
		}
	}
	// Each output holds both columns for every row, and its metrics are
	// the columns' own.
	names := map[int]string{iceberg.RowIDFieldID: iceberg.RowIDColumnName, iceberg.LastUpdatedSequenceNumberFieldID: iceberg.LastUpdatedSequenceNumberColumnName}
	for _, df := range e.dataFiles() {
		pf := e.openParquet(df)
		for fid, name := range names {
			col, ok := pf.Schema().Lookup(name)
			if !ok || col.Node.ID() != fid {
				e.T.Fatalf("%s: no column with field ID %d", df.FilePath(), fid)
			}
			if df.ValueCounts()[fid] != df.Count() || df.NullValueCounts()[fid] != 0 {
				e.T.Errorf("%s: field %d has %d values, %d nulls, for %d rows", df.FilePath(), fid, df.ValueCounts()[fid], df.NullValueCounts()[fid], df.Count())
			}
			lo, hi := int64(1<<63-1), int64(-1<<63)
			var n int64
			for _, c := range pf.RowGroups() {
				pages := c.ColumnChunks()[col.ColumnIndex].Pages()
				for {
					p, err := pages.ReadPage()
					if err == io.EOF {
						break
					}
					if err != nil {
						e.T.Fatalf("%s: %v", df.FilePath(), err)
					}
					vals := make([]parquet.Value, p.NumValues())
					k, _ := p.Values().ReadValues(vals)
					for _, v := range vals[:k] {
						if v.IsNull() {
							e.T.Fatalf("%s: a null in field %d", df.FilePath(), fid)
						}
						lo, hi, n = min(lo, v.Int64()), max(hi, v.Int64()), n+1
					}
				}
				pages.Close()
			}
			if n != df.Count() {
				e.T.Errorf("%s: %d values of field %d for %d rows", df.FilePath(), n, fid, df.Count())
			}
			gotLo, gotHi := df.LowerBoundValues()[fid], df.UpperBoundValues()[fid]
			if len(gotLo) != 8 || len(gotHi) != 8 || int64(binary.LittleEndian.Uint64(gotLo)) != lo || int64(binary.LittleEndian.Uint64(gotHi)) != hi {
				e.T.Errorf("%s: field %d bounds %x..%x, values %d..%d", df.FilePath(), fid, gotLo, gotHi, lo, hi)
			}
		}
	}
	return fig
}

// On a v3 table the merge path keeps row lineage: rows inherit their IDs
// from the files of several appends, each file of several row groups, and
// keep them and their sequence numbers through compaction; compacting the
// outputs again (now with materialised lineage) beside new appends keeps
// them too.
func TestMergeKeepsLineage(t *testing.T) {
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "3")
	// Row groups of 100 rows: positions run across them.
	tbl = e.setProps(tbl, iceberg.Properties{"write.parquet.row-group-limit": "100"})
	for i := 0; i < 8; i++ {
		tbl = e.Append(tbl, 250)
	}
	if n := len(openParquet(t, e.dataFiles()[0]).RowGroups()); n < 2 {
		t.Fatalf("an input has %d row groups, want several", n)
	}
	first := e.lineageOf(tbl)
	e.checkLineage(&Job{MinInputFiles: 2})

	tbl = e.Load()
	for i := 0; i < 3; i++ {
		tbl = e.Append(tbl, 250)
	}
	e.checkLineage(&Job{MinInputFiles: 2})
	got := e.lineageOf(e.Load())
	for id, w := range first {
		if got[id] != w {
			t.Fatalf("row %d: lineage %+v after two compactions, %+v before", id, got[id], w)
		}
	}
}

// rowGroupHashes hashes the row groups of the table's files, of their
// first cols columns (0: all), from minBytes compressed bytes on.
func rowGroupHashes(t *testing.T, e *env, cols int, minBytes int64) map[[32]byte]bool {
	t.Helper()
	out := map[[32]byte]bool{}
	for _, df := range e.dataFiles() {
		pf := openParquet(t, df)
		for _, rg := range pf.Metadata().RowGroups {
			if rg.TotalCompressedSize < minBytes {
				continue
			}
			if cols > 0 {
				rg.Columns = rg.Columns[:cols]
			}
			out[rowGroupHash(t, pf, &rg)] = true
		}
	}
	return out
}

// On v3 the copy keeps lineage too. A healthy row group whose rows
// inherit their lineage is copied with the two lineage columns encoded
// and added to it (its other columns byte for byte); tiny ones beside it
// are re-encoded. Compacted again beside new appends, a row group that
// now holds its lineage is copied whole: its table columns as one range,
// its lineage chunks, which the first output put after its last row
// group, from there to the new output's.
func TestMergeCopiesLineage(t *testing.T) {
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "3")
	tbl = e.setProps(tbl, iceberg.Properties{"write.parquet.row-group-limit": "1000"})
	for i := 0; i < 4; i++ {
		tbl = e.Append(tbl, 3000) // 3 row groups of 1,000 rows each
	}
	minHealthy := int64(1 << 62)
	for _, df := range e.dataFiles() {
		for _, rg := range openParquet(t, df).Metadata().RowGroups {
			minHealthy = min(minHealthy, rg.TotalCompressedSize)
		}
	}
	for i := 0; i < 6; i++ {
		tbl = e.Append(tbl, 40) // one tiny row group each
	}
	// Copied from 3/4 of the smallest on: the later appends' may be a
	// little smaller, the tiny ones are far below.
	threshold := minHealthy * 3 / 4
	e.setProps(tbl, iceberg.Properties{table.ParquetRowGroupSizeBytesKey: strconv.FormatInt(2*threshold, 10)})
	cols := len(tableenv.BaseSchema.Fields())
	healthy := rowGroupHashes(t, e, cols, threshold)
	if len(healthy) != 12 {
		t.Fatalf("setup: %d distinct healthy row groups, want 12", len(healthy))
	}
	fig := e.checkLineage(&Job{MinInputFiles: 2})
	if fig.RowGroupsCopied != 12 || fig.RowGroupsReencoded != 6 {
		t.Fatalf("%d row groups copied, %d re-encoded; want 12, 6", fig.RowGroupsCopied, fig.RowGroupsReencoded)
	}
	if got := rowGroupHashes(t, e, cols, 0); !subset(healthy, got) {
		t.Fatal("a healthy row group's columns were not copied byte for byte")
	}

	// The copies, lineage columns and all, are copied whole next time.
	whole := rowGroupHashes(t, e, 0, threshold)
	tbl = e.Load()
	for i := 0; i < 3; i++ {
		tbl = e.Append(tbl, 3000)
	}
	fig = e.checkLineage(&Job{MinInputFiles: 2})
	if fig.RowGroupsCopied != 21 || fig.RowGroupsReencoded != 1 {
		t.Fatalf("%d row groups copied, %d re-encoded; want 21, 1", fig.RowGroupsCopied, fig.RowGroupsReencoded)
	}
	if got := rowGroupHashes(t, e, 0, 0); len(whole) != 12 || !subset(whole, got) {
		t.Fatalf("%d row groups holding their lineage were not all copied whole", len(whole))
	}
}

func subset[K comparable](a, b map[K]bool) bool {
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// Files of a table upgraded to v3 have no first_row_id until a v3 commit
// gives them one: their rows have no IDs to keep, and their groups take
// iceberg-go's path.
func TestMergeLeavesFilesWithoutRowIDs(t *testing.T) {
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	for i := 0; i < 4; i++ {
		tbl = e.Append(tbl, 200)
	}
	tx := tbl.NewTransaction()
	if err := tx.UpgradeFormatVersion(3); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(e.Ctx); err != nil {
		t.Fatal(err)
	}
	if fig := e.checkCompaction(&Job{MinInputFiles: 2}); fig.GroupsMerged != 0 {
		t.Fatalf("%d groups of files without first_row_id merged", fig.GroupsMerged)
	}
}
