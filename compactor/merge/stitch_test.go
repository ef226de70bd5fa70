package merge

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/parquet-go/parquet-go"
)

type stitchRow struct {
	ID   int64  `parquet:"id"`
	Name string `parquet:"name,dict"`
}

// Stitching copies row groups whole (appendRowGroup, chunks contiguous)
// and chunk by chunk (the path for files whose chunks are not contiguous),
// in pieces read several at once: either way the rows, the offset indexes
// that seeks use, and the row groups' offsets are right in the new file.
func TestStitch(t *testing.T) {
	for _, piece := range []int64{copyPieceBytes, 1000, 37} {
		t.Run(fmt.Sprintf("pieces of %d bytes", piece), func(t *testing.T) { testStitch(t, piece) })
	}
}

func testStitch(t *testing.T, piece int64) {
	var src bytes.Buffer
	w := parquet.NewGenericWriter[stitchRow](&src, parquet.PageBufferSize(256))
	var want []stitchRow
	for g := 0; g < 3; g++ {
		rows := make([]stitchRow, 500)
		for i := range rows {
			rows[i] = stitchRow{ID: int64(g*1000 + i), Name: fmt.Sprintf("n%d", i%7)}
		}
		if _, err := w.Write(rows); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		want = append(want, rows...)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	md, err := readFooter(src.Bytes())
	if err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	st, err := newStitcher(&countingWriter{w: &out})
	if err != nil {
		t.Fatal(err)
	}
	st.piece = piece
	in := bytes.NewReader(src.Bytes())
	// The rows land in another order and at other offsets: row group 2
	// first, copied chunk by chunk, then 0 whole, then 1 chunk by chunk.
	for _, r := range []int{2, 0, 1} {
		if r == 0 {
			_, _, err = st.appendRowGroup(in, md, r, nil)
		} else {
			err = st.addRowGroup(in, md, r, nil, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.close("test"); err != nil {
		t.Fatal(err)
	}
	want = append(append(want[1000:], want[:500]...), want[500:1000]...)

	pf, err := parquet.OpenFile(bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil {
		t.Fatal(err)
	}
	got := make([]stitchRow, len(want)+1)
	r := parquet.NewGenericReader[stitchRow](pf)
	n, err := r.Read(got)
	if !errors.Is(err, io.EOF) && err != nil {
		t.Fatal(err)
	}
	if n != len(want) || fmt.Sprint(got[:n]) != fmt.Sprint(want) {
		t.Fatalf("read %d rows, want %d, or other rows", n, len(want))
	}
	for i, g := range pf.Metadata().RowGroups {
		if off := chunkStart(&g.Columns[0].MetaData); g.FileOffset != off {
			t.Errorf("row group %d starts at %d, its first chunk at %d", i, g.FileOffset, off)
		}
	}
	if len(pf.OffsetIndexes()) != 6 {
		t.Fatalf("%d offset indexes, want one per chunk", len(pf.OffsetIndexes()))
	}
	checkSeeks(t, pf)
}

// checkSeeks seeks through the offset index to rows of every row group and
// compares them with the rows read in order.
func checkSeeks(t *testing.T, pf *parquet.File) {
	t.Helper()
	for i, rg := range pf.RowGroups() {
		all := make([]parquet.Row, rg.NumRows())
		rows := rg.Rows()
		if n, err := rows.ReadRows(all); int64(n) != rg.NumRows() && !errors.Is(err, io.EOF) {
			t.Fatalf("row group %d: %d rows: %v", i, n, err)
		}
		rows.Close()
		for _, at := range []int64{1, rg.NumRows() / 2, rg.NumRows() - 1} {
			rows := rg.Rows()
			one := make([]parquet.Row, 1)
			if err := rows.SeekToRow(at); err != nil {
				t.Fatalf("row group %d: seek to %d: %v", i, at, err)
			}
			if n, err := rows.ReadRows(one); n != 1 {
				t.Fatalf("row group %d: read row %d: %v", i, at, err)
			}
			rows.Close()
			if !one[0].Equal(all[at]) {
				t.Errorf("row group %d: row %d by the offset index differs", i, at)
			}
		}
	}
}
