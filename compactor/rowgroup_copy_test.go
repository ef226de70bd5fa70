package compactor

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strconv"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/icekeeper/icekeeper/compactor/merge"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
)

// rowGroupHash is the hash of a row group's column chunk bytes: equal for
// a row group copied byte for byte, whatever its offsets in the file.
func rowGroupHash(t *testing.T, pf *parquet.File, rg *format.RowGroup) [32]byte {
	t.Helper()
	h := sha256.New()
	for _, c := range rg.Columns {
		start := c.MetaData.DataPageOffset
		if d := c.MetaData.DictionaryPageOffset; d > 0 && d < start {
			start = d
		}
		b := make([]byte, c.MetaData.TotalCompressedSize)
		if _, err := pf.ReadAt(b, start); err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	return [32]byte(h.Sum(nil))
}

// A group whose files mix healthy and tiny row groups copies the healthy
// ones byte for byte and re-encodes the tiny ones, in one output; the
// stitched file is read the same by iceberg-go (arrow-go) and parquet-go,
// row by row and through its page indexes, and its manifest metrics add up
// to the inputs'. The healthy row groups come straight from iceberg-go's
// writer, which writes no page indexes but here bloom filters on id, or
// from an earlier merge, which writes page indexes.
func TestMergeCopiesHealthyRowGroups(t *testing.T) {
	for _, indexed := range []bool{false, true} {
		t.Run(fmt.Sprintf("page indexes %v", indexed), func(t *testing.T) {
			e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
			const bloomKey = "write.parquet.bloom-filter-enabled.column.id"
			props := iceberg.Properties{"write.parquet.row-group-limit": "1000"}
			if !indexed {
				props[bloomKey], props["write.parquet.bloom-filter-max-bytes"] = "true", "4096"
			}
			tbl = e.setProps(tbl, props)
			for i := 0; i < 4; i++ {
				tbl = e.Append(tbl, 3000) // 3 row groups of 1,000 rows each
			}
			// Full by rows, those row groups would be copied whatever
			// their bytes (TestMergeCopiesRowGroupsFullByRows); a limit a
			// row above makes this test the byte rule's.
			tbl = e.setProps(tbl, iceberg.Properties{"write.parquet.row-group-limit": "1001"})
			if !indexed {
				// The merge path leaves tables that ask for bloom filters
				// to iceberg-go's writer; the filters already written stay
				// with the row groups copied.
				tx := tbl.NewTransaction()
				if err := tx.RemoveProperties([]string{bloomKey}); err != nil {
					t.Fatal(err)
				}
				var err error
				if tbl, err = tx.Commit(e.Ctx); err != nil {
					t.Fatal(err)
				}
			}
			if indexed {
				// Merged under the default 128 MB target, every row group
				// is re-encoded, 1,000 rows each, with page indexes; small
				// pages make seeks go through them.
				tbl = e.setProps(tbl, iceberg.Properties{"write.parquet.page-size-bytes": "2048"})
				if fig := e.checkCompaction(&Job{MinInputFiles: 2}); fig.RowGroupsCopied != 0 || fig.RowGroupsReencoded != 12 {
					t.Fatalf("setup: %d row groups copied, %d re-encoded", fig.RowGroupsCopied, fig.RowGroupsReencoded)
				}
				tbl = e.Load()
			}
			for i := 0; i < 6; i++ {
				tbl = e.Append(tbl, 40) // one tiny row group each
			}
			checkRowGroupCopies(t, e, indexed)
		})
	}
}

// A row group that reached the table's row limit is full: it is copied
// however far below half the byte target it is, and one a row short of
// the limit is re-encoded.
func TestMergeCopiesRowGroupsFullByRows(t *testing.T) {
	for _, tc := range []struct {
		limit                              string
		copied, reencoded, outputRowGroups int
	}{
		{"1000", 12, 6, 13}, // 12 copied, the 240 tiny rows in one
		{"1001", 0, 18, 13}, // re-encoded: 12,240 rows cut by 1,001
	} {
		t.Run("limit "+tc.limit, func(t *testing.T) {
			e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
			tbl = e.setProps(tbl, iceberg.Properties{"write.parquet.row-group-limit": "1000"})
			for i := 0; i < 4; i++ {
				tbl = e.Append(tbl, 3000) // 3 row groups of 1,000 rows each
			}
			for i := 0; i < 6; i++ {
				tbl = e.Append(tbl, 40)
			}
			e.setProps(tbl, iceberg.Properties{"write.parquet.row-group-limit": tc.limit})
			fig := e.checkCompaction(&Job{MinInputFiles: 2})
			if fig.RowGroupsCopied != tc.copied || fig.RowGroupsReencoded != tc.reencoded {
				t.Fatalf("%d row groups copied, %d re-encoded; want %d, %d", fig.RowGroupsCopied, fig.RowGroupsReencoded, tc.copied, tc.reencoded)
			}
			files := e.dataFiles()
			if len(files) != 1 {
				t.Fatalf("%d output files, want 1", len(files))
			}
			if n := len(openParquet(t, files[0]).RowGroups()); n != tc.outputRowGroups {
				t.Errorf("%d row groups in the output, want %d", n, tc.outputRowGroups)
			}
		})
	}
}

func checkRowGroupCopies(t *testing.T, e *env, indexed bool) {
	// The healthy row groups, by the hash of their bytes, and the
	// smallest of them, which sets the table's row-group target.
	healthy := map[[32]byte]bool{}
	minHealthy, maxTiny := int64(1<<62), int64(0)
	for _, df := range e.dataFiles() {
		pf := openParquet(t, df)
		for i := range pf.Metadata().RowGroups {
			rg := &pf.Metadata().RowGroups[i]
			var size int64
			for _, c := range rg.Columns {
				size += c.MetaData.TotalCompressedSize
			}
			if df.Count() == 40 {
				maxTiny = max(maxTiny, size)
				continue
			}
			healthy[rowGroupHash(t, pf, rg)] = true
			minHealthy = min(minHealthy, size)
		}
	}
	if len(healthy) != 12 || maxTiny*4 > minHealthy {
		t.Fatalf("setup: %d distinct healthy row groups of at least %d bytes, tiny ones of up to %d", len(healthy), minHealthy, maxTiny)
	}
	// Half the target is the copy threshold: the healthy row groups reach
	// it, the tiny ones are far below.
	e.setProps(e.Load(), iceberg.Properties{"write.parquet.row-group-size-bytes": strconv.FormatInt(2*minHealthy, 10)})
	before := statsOf(tableenv.BaseSchema, e.dataFiles())
	wantIDs := e.IDs(e.Load())

	fig := e.checkCompaction(&Job{MinInputFiles: 2})
	if fig.GroupsMerged != 1 || fig.RowGroupsCopied != 12 || fig.RowGroupsReencoded != 6 {
		t.Fatalf("%s\n%d groups merged, %d row groups copied, %d re-encoded; want 1, 12, 6", fig.Text(), fig.GroupsMerged, fig.RowGroupsCopied, fig.RowGroupsReencoded)
	}

	files := e.dataFiles()
	if len(files) != 1 {
		t.Fatalf("%d output files, want 1", len(files))
	}
	df := files[0]
	pf := openParquet(t, df)
	copied, other := 0, 0
	for i, rg := range pf.RowGroups() {
		if !healthy[rowGroupHash(t, pf, &pf.Metadata().RowGroups[i])] {
			other++
			continue
		}
		copied++
		if indexed {
			continue
		}
		// The copied bloom filter still finds the row group's ids.
		bf := rg.ColumnChunks()[0].BloomFilter()
		if bf == nil {
			t.Errorf("row group %d: copied without its bloom filter", i)
			continue
		}
		first := make([]parquet.Row, 1)
		rows := rg.Rows()
		if _, err := rows.ReadRows(first); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		rows.Close()
		if ok, err := bf.Check(first[0][0]); !ok || err != nil {
			t.Errorf("row group %d: the bloom filter does not find id %v: %v", i, first[0][0], err)
		}
	}
	if copied != 12 || other == 0 {
		t.Errorf("output: %d row groups byte-identical to a healthy input, %d others; want 12 and the re-encoded tiny ones", copied, other)
	}

	// parquet-go reads the same ids as iceberg-go did before.
	gotIDs := map[int64]int{}
	rows := parquet.NewReader(pf)
	defer rows.Close()
	buf := make([]parquet.Row, 256)
	for {
		n, err := rows.ReadRows(buf)
		for _, r := range buf[:n] {
			gotIDs[r[0].Int64()]++
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(gotIDs) != fmt.Sprint(wantIDs) {
		t.Errorf("parquet-go reads %d distinct ids, iceberg-go read %d before", len(gotIDs), len(wantIDs))
	}
	checkPageIndexes(t, pf, indexed)

	after := statsOf(tableenv.BaseSchema, files)
	for _, f := range tableenv.BaseSchema.Fields() {
		cmp := func(a, b []byte) int { c, _ := merge.CompareBound(f.Type, a, b); return c }
		if after.values[f.ID] != before.values[f.ID] || after.nulls[f.ID] != before.nulls[f.ID] {
			t.Errorf("column %s: %d values, %d nulls; before %d, %d", f.Name, after.values[f.ID], after.nulls[f.ID], before.values[f.ID], before.nulls[f.ID])
		}
		if after.lower[f.ID] == nil || cmp(after.lower[f.ID], before.lower[f.ID]) != 0 || cmp(after.upper[f.ID], before.upper[f.ID]) != 0 {
			t.Errorf("column %s: bounds [%x, %x], inputs' [%x, %x]", f.Name, after.lower[f.ID], after.upper[f.ID], before.lower[f.ID], before.upper[f.ID])
		}
		if df.ColumnSizes()[f.ID] == 0 {
			t.Errorf("column %s has no size", f.Name)
		}
	}
	if len(df.SplitOffsets()) != len(pf.Metadata().RowGroups) {
		t.Errorf("%d split offsets for %d row groups", len(df.SplitOffsets()), len(pf.Metadata().RowGroups))
	}
}

// checkPageIndexes seeks to rows of every row group through its offset
// index and compares them with the rows read from the start: an offset
// left pointing into the input file would land on other bytes. indexed
// says whether every chunk must have page indexes, or none.
func checkPageIndexes(t *testing.T, pf *parquet.File, indexed bool) {
	t.Helper()
	chunks, withIndexes := 0, 0
	for i, rg := range pf.RowGroups() {
		for _, c := range pf.Metadata().RowGroups[i].Columns {
			chunks++
			if c.OffsetIndexOffset > 0 && c.ColumnIndexOffset > 0 {
				withIndexes++
			}
		}
		all := make([]parquet.Row, rg.NumRows())
		rows := rg.Rows()
		if n, err := rows.ReadRows(all); int64(n) != rg.NumRows() && !errors.Is(err, io.EOF) {
			t.Fatalf("row group %d: read %d of %d rows: %v", i, n, rg.NumRows(), err)
		}
		rows.Close()
		for _, at := range []int64{0, rg.NumRows() / 2, rg.NumRows() - 1} {
			rows := rg.Rows()
			if err := rows.SeekToRow(at); err != nil {
				t.Fatalf("row group %d: seek to row %d: %v", i, at, err)
			}
			one := make([]parquet.Row, 1)
			if n, err := rows.ReadRows(one); n != 1 {
				t.Fatalf("row group %d: read row %d: %v", i, at, err)
			}
			rows.Close()
			if !one[0].Equal(all[at]) {
				t.Errorf("row group %d: row %d through the page index differs from the row read in order", i, at)
			}
		}
	}
	if want := map[bool]int{true: chunks, false: 0}[indexed]; withIndexes != want {
		t.Errorf("%d of %d column chunks have page indexes, want %d", withIndexes, chunks, want)
	}
}
