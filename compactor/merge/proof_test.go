package merge

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/cespare/xxhash/v2"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/icekeeper/icekeeper/internal/rowdigest"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
)

// The merge proves its rows as it goes: the claim counts every row, its
// read and written digests agree, and they are the digest iceberg-go's
// reader (Arrow) gives the same rows, a second implementation of the
// definition. An output replaced in storage between its writing and its
// proof is refused.
func TestMergeProvesRows(t *testing.T) {
	e, tbl := tableenv.New(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	for range 6 {
		tbl = e.Append(tbl, 50)
	}
	ctx := context.Background()
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	scan := tbl.Scan()
	sc, _ := scan.Projection()
	want, err := rowdigest.Tasks(ctx, scan, sc, tasks, nil)
	if err != nil {
		t.Fatal(err)
	}

	// Read whole, and in ranges (WholeFileBytes 1).
	for _, whole := range []int64{0, 1} {
		res, rep, err := (&Merger{CheckRows: true, WholeFileBytes: whole}).Group(ctx, tbl, tasks, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		if c := rep.Rows; c == nil || c.Read != want || c.Written != want || c.CopiedRows != 0 || len(res.NewDataFiles) != 1 {
			t.Fatalf("whole-file bytes %d: claim %+v, Arrow's digest of the inputs %v", whole, c, want)
		}
	}

	fs, _ := tbl.FS(ctx)
	m := &Merger{CheckRows: true, beforeProve: func(path string) error {
		return overwrite(fs, path, tasks[0].File.FilePath())
	}}
	if _, _, err := m.Group(ctx, tbl, tasks, 1<<30); !errors.Is(err, rowdigest.ErrRowsDiffer) {
		t.Fatalf("an output replaced before its proof: %v", err)
	}
	if _, rep, err := (&Merger{}).Group(ctx, tbl, tasks, 1<<30); err != nil || rep.Rows != nil {
		t.Fatalf("without CheckRows: %+v, %v", rep, err)
	}
}

// overwrite replaces the file at dst with the bytes of src.
func overwrite(fs icebergio.IO, dst, src string) error {
	f, err := fs.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	return fs.(icebergio.WriteFileIO).WriteFile(dst, b)
}

// laneHash.page, which hashes a page's typed data (and a dictionary's
// entries once), gives every row the sum laneHash.add gives it from the
// page's values, for each kind the merge path takes, required and
// optional, dictionary-encoded and plain, across page boundaries; and it
// refuses a page whose dictionary indexes point past the dictionary.
func TestPageHashesAsValues(t *testing.T) {
	type row struct {
		B  *bool    `parquet:"b,optional"`
		I  int32    `parquet:"i"`
		OI *int32   `parquet:"oi,optional"`
		L  int64    `parquet:"l"`
		F  *float32 `parquet:"f,optional"`
		D  float64  `parquet:"d"`
		S  *string  `parquet:"s,optional"`
		DS *string  `parquet:"ds,optional,dict"`
		DL int64    `parquet:"dl,dict"`
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 5000
	rows := make([]row, n)
	for i := range rows {
		r := &rows[i]
		r.I, r.L, r.D = rng.Int32(), rng.Int64(), rng.NormFloat64()
		r.DL = int64(rng.IntN(7))
		if rng.IntN(5) > 0 {
			b, oi, f := rng.IntN(2) == 0, rng.Int32N(100), float32(rng.NormFloat64())
			s := strings.Repeat("x", rng.IntN(40)) + strconv.Itoa(i)
			ds := []string{"a", "bb", "ccc"}[rng.IntN(3)]
			r.B, r.OI, r.F, r.S, r.DS = &b, &oi, &f, &s, &ds
		}
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[row](&buf, parquet.PageBufferSize(4<<10))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	values := make([]parquet.Value, 100)
	dictionaries := 0
	for c, cc := range pf.RowGroups()[0].ColumnChunks() {
		var byPage, byValue laneHash
		byPage.acc, byValue.acc = make([]uint64, n), make([]uint64, n)
		byPage.newChunk()
		row, pages := 0, 0
		if err := eachPage(cc, func(p parquet.Page) error {
			if p.Dictionary() != nil {
				dictionaries++
			}
			pages++
			err := byPage.page(c+1, row, p, values)
			row += int(p.NumRows())
			return err
		}); err != nil {
			t.Fatalf("column %d: %v", c, err)
		}
		row = 0
		if err := eachBatch(cc, values, func(batch []parquet.Value) error {
			byValue.add(c+1, row, batch)
			row += len(batch)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if pages < 2 {
			t.Fatalf("column %d: %d page, want several", c, pages)
		}
		for i := range byPage.acc {
			if byPage.acc[i] != byValue.acc[i] {
				t.Fatalf("column %d, row %d: %x by page, %x by value", c, i, byPage.acc[i], byValue.acc[i])
			}
		}
	}
	if dictionaries == 0 {
		t.Fatal("no dictionary-encoded page was hashed")
	}

	// A dictionary of fewer entries than the page's indexes reach.
	ds := pf.RowGroups()[0].ColumnChunks()[7]
	var l laneHash
	l.acc = make([]uint64, n)
	l.newChunk()
	err = eachPage(ds, func(p parquet.Page) error {
		if l.dict.of == nil {
			l.dict.of, l.dict.hashes = p.Dictionary(), []uint64{1}
		}
		return l.page(8, 0, p, values)
	})
	if err == nil || !strings.Contains(err.Error(), "dictionary index") {
		t.Fatalf("indexes past the dictionary: %v", err)
	}
}

// proveKept hashes the pages it is not told were kept as laneHash.page
// does and adds nothing for a kept page whose offset, rows and bytes are
// those written; a kept page at another row, of other rows or bytes, or
// past the chunk's pages, and an offset index that does not walk the
// chunk's pages from its start to its end, are refused as rows that
// differ.
func TestProveKeptPages(t *testing.T) {
	type record struct {
		S *string `parquet:"s,optional,plain"`
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 3000
	rows := make([]record, n)
	for i := range rows {
		if rng.IntN(6) > 0 {
			s := strings.Repeat("y", rng.IntN(30)) + strconv.Itoa(i)
			rows[i].S = &s
		}
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[record](&buf, parquet.PageBufferSize(4<<10), parquet.Compression(&parquet.Zstd), parquet.DataPageVersion(2))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	file := buf.Bytes()
	open := func() (parquet.ColumnChunk, format.ColumnMetaData) {
		// As the proof opens its output: without the page index, which
		// proveKept loads.
		pf, err := parquet.OpenFile(bytes.NewReader(file), int64(len(file)), parquet.SkipPageIndex(true))
		if err != nil {
			t.Fatal(err)
		}
		return pf.RowGroups()[0].ColumnChunks()[0], pf.Metadata().RowGroups[0].Columns[0].MetaData
	}
	cc, cm := open()
	values := make([]parquet.Value, 100)
	var whole laneHash
	whole.acc = make([]uint64, n)
	whole.newChunk()
	row := 0
	if err := eachPage(cc, func(p parquet.Page) error {
		err := whole.page(1, row, p, values)
		row += int(p.NumRows())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	oi, err := cc.OffsetIndex()
	if err != nil || oi.NumPages() < 4 {
		t.Fatalf("%v, want several pages", err)
	}
	keptPage := func(i int) provenPage {
		off, size := oi.Offset(i), oi.CompressedPageSize(i)
		h := xxhash.Sum64(file[off : off+size])
		return provenPage{page: i, first: oi.FirstRowIndex(i), rows: oi.FirstRowIndex(i+1) - oi.FirstRowIndex(i), hash: h}
	}
	prove := func(kept []provenPage, cm format.ColumnMetaData) (*laneHash, error) {
		cc, _ := open()
		l := &laneHash{acc: make([]uint64, n)}
		l.newChunk()
		return l, l.proveKept(xxhash.New(), bytes.NewReader(file), 1, cc, &cm, kept, values, make([]byte, 1<<20))
	}

	kept := []provenPage{keptPage(1), keptPage(3)}
	l, err := prove(kept, cm)
	if err != nil {
		t.Fatal(err)
	}
	for i := range l.acc {
		want := whole.acc[i]
		for _, k := range kept {
			if int64(i) >= k.first && int64(i) < k.first+k.rows {
				want = 0
			}
		}
		if l.acc[i] != want {
			t.Fatalf("row %d: %x, want %x", i, l.acc[i], want)
		}
	}

	for _, c := range []struct {
		name string
		edit func(k *provenPage, cm *format.ColumnMetaData)
	}{
		{"other bytes", func(k *provenPage, _ *format.ColumnMetaData) { k.hash++ }},
		{"another first row", func(k *provenPage, _ *format.ColumnMetaData) { k.first++ }},
		{"other rows", func(k *provenPage, _ *format.ColumnMetaData) { k.rows-- }},
		{"past the chunk's pages", func(k *provenPage, _ *format.ColumnMetaData) { k.page = 1000 }},
		{"an index that starts elsewhere", func(_ *provenPage, cm *format.ColumnMetaData) { cm.DataPageOffset++ }},
		{"an index that ends early", func(_ *provenPage, cm *format.ColumnMetaData) { cm.TotalCompressedSize++ }},
	} {
		k, cm := keptPage(2), cm
		c.edit(&k, &cm)
		if _, err := prove([]provenPage{k}, cm); !errors.Is(err, rowdigest.ErrRowsDiffer) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
