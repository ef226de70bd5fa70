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
	"github.com/parquet-go/parquet-go"

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

	// Read whole, and in ranges read ahead (WholeFileBytes 1).
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
