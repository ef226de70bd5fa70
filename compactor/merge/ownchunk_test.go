package merge

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/icekeeper/icekeeper/internal/rowdigest"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
)

// The columns the merge writes itself keep the pages they can as they
// were: an input's PLAIN pages (v1 and v2) and the dictionary page of a
// column whose values are all distinct. Whichever input comes first (it
// chooses the columns), the output holds the inputs' rows as Arrow reads
// them, and its page indexes and statistics hold its values; an old
// writer's footer without null counts changes nothing of that. Pages
// under a sixteenth of the table's page size are not kept, but their
// values encoded, to the same rows. A table that writes v1 pages keeps
// none.
func TestOwnColumnsKeepPages(t *testing.T) {
	ctx := context.Background()
	// The inputs' pages are of 2 KiB: at least a sixteenth of the
	// table's page size.
	tbl, src := payloadTable(t, iceberg.Properties{"write.parquet.page-size-bytes": "16384"})
	// The same rows as other writers write them.
	variants := []struct {
		name string
		opts []parquet.WriterOption
		dict bool
	}{
		{"plain-v2", []parquet.WriterOption{parquet.DataPageVersion(2)}, false},
		{"plain-v1", []parquet.WriterOption{parquet.DataPageVersion(1)}, false},
		{"dictionary-v2", []parquet.WriterOption{parquet.DataPageVersion(2)}, true},
		{"dictionary-v1", []parquet.WriterOption{parquet.DataPageVersion(1)}, true},
	}
	var added []string
	for _, v := range variants {
		path := strings.TrimSuffix(src, ".parquet") + "-" + v.name + ".parquet"
		rewriteParquet(t, src, path, v.dict, &parquet.Zstd, v.opts...)
		added = append(added, "file://"+path)
	}
	// An old writer's footer: no null counts, though the columns hold
	// nulls (which the dictionaries' entries do not count).
	noNulls := strings.TrimSuffix(src, ".parquet") + "-no-null-counts.parquet"
	rewriteParquet(t, src, noNulls, true, &parquet.Zstd)
	rewriteFooter(t, noNulls, func(md *format.FileMetaData) {
		for r := range md.RowGroups {
			for c := range md.RowGroups[r].Columns {
				md.RowGroups[r].Columns[c].MetaData.Statistics.NullCount = 0
			}
		}
	})
	added = append(added, "file://"+noNulls)
	tbl, tasks := addFiles(t, tbl, added...)
	scan := tbl.Scan()
	proj, _ := scan.Projection()
	want, err := rowdigest.Tasks(ctx, scan, proj, tasks, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The output holds the inputs' rows as Arrow reads them, and page
	// indexes and statistics that hold its values.
	checkOutput := func(what string, out iceberg.DataFile) {
		t.Helper()
		got, err := rowdigest.Tasks(ctx, scan, proj, []table.FileScanTask{{File: out, Length: out.FileSizeBytes()}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%s: Arrow reads %v from the output, %v from the inputs", what, got, want)
		}
		checkPageIndexes(t, strings.TrimPrefix(out.FilePath(), "file://"))
	}
	for first := range tasks {
		order := append([]table.FileScanTask{tasks[first]}, append(tasks[:first:first], tasks[first+1:]...)...)
		res, rep, err := (&Merger{CheckRows: true}).Group(ctx, tbl, order, 1<<30)
		if err != nil {
			t.Fatalf("%s first: %v", order[0].File.FilePath(), err)
		}
		if rep.RowGroups.KeptPages == 0 {
			t.Errorf("%s first: no page kept", order[0].File.FilePath())
		}
		checkOutput(order[0].File.FilePath()+" first", res.NewDataFiles[0])
	}

	for _, c := range []struct {
		name  string
		props iceberg.Properties
		own   bool
	}{
		// At a page size of 64 MiB, no input page is large enough to
		// keep, not even a dictionary of all a file's values: every
		// variant's values are encoded by ownChunk.
		{"64 MiB pages", iceberg.Properties{"write.parquet.page-size-bytes": "67108864"}, true},
		// ownChunk writes v2 pages, so nothing is kept.
		{"page version 1", iceberg.Properties{"write.parquet.page-version": "1"}, false},
	} {
		tbl := setProps(t, tbl, c.props)
		res, rep, err := (&Merger{CheckRows: true}).Group(ctx, tbl, tasks, 1<<30)
		if err != nil || rep.RowGroups.KeptPages != 0 || (rep.RowGroups.OwnPages > 0) != c.own {
			t.Fatalf("%s: %d pages kept, %d encoded by the merge, %v", c.name, rep.RowGroups.KeptPages, rep.RowGroups.OwnPages, err)
		}
		checkOutput(c.name, res.NewDataFiles[0])
	}
}

// A page to be kept whose bytes do not match its writer's CRC fails the
// group, naming its column, though its values would decode (uncompressed,
// one character of a value changed): a kept page's CRC must not vouch for
// damaged bytes.
func TestOwnColumnsRefuseDamagedPage(t *testing.T) {
	ctx := context.Background()
	tbl, tasks, path := rewrittenFirst(t, iceberg.Properties{"write.parquet.compression-codec": "uncompressed", "write.parquet.page-size-bytes": "16384"},
		"uncompressed", false, &parquet.Uncompressed, parquet.DataPageVersion(2))

	// One character in the middle of a value of the payload column's
	// third page (its header holds statistics, which are not kept).
	b, pf := readParquet(t, path)
	cm := pf.Metadata().RowGroups[0].Columns[6].MetaData
	r := bytes.NewReader(b[cm.DataPageOffset : cm.DataPageOffset+cm.TotalCompressedSize])
	dec := thrift.NewDecoder(new(thrift.CompactProtocol).NewReader(r))
	var at int
	for range 3 {
		var h format.PageHeader
		if err := dec.Decode(&h); err != nil {
			t.Fatal(err)
		}
		at = int(cm.DataPageOffset+cm.TotalCompressedSize) - r.Len() + int(h.CompressedPageSize)/2
		r.Seek(int64(h.CompressedPageSize), io.SeekCurrent)
	}
	for b[at] < 'a' || b[at] > 'y' || b[at-1] < ' ' || b[at+1] < ' ' {
		at++
	}
	b[at]++
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	res, _, err := (&Merger{CheckRows: true}).Group(ctx, tbl, tasks, 1<<30)
	if !errors.Is(err, parquet.ErrCorrupted) || !strings.Contains(err.Error(), "payload") || len(res.NewDataFiles) != 0 {
		t.Fatalf("a damaged page: %v, %d outputs", err, len(res.NewDataFiles))
	}

	// The bytes kept are read apart from those parquet-go decoded (and
	// checked): they are checked against the CRC again.
	c := &ownChunk{meta: format.ColumnMetaData{PathInSchema: []string{"payload"}}}
	page := &rawPage{h: format.PageHeader{CRC: int32(crc32.ChecksumIEEE([]byte("abc")))}, body: []byte("abc")}
	if sum, err := c.checkCRC(page); err != nil || int32(sum) != page.h.CRC {
		t.Fatal(sum, err)
	}
	page.body = []byte("abd")
	if _, err := c.checkCRC(page); err == nil || !strings.Contains(err.Error(), "payload") {
		t.Fatalf("bytes other than the CRC's: %v", err)
	}
}

// A page kept as it was is proved by its bytes, not decoded again: a byte
// of one changed in the output between its writing and its proof is
// refused as rows that differ, naming the kept page, and nothing is
// output; whether the output is read back whole or in ranges (its inputs
// still read whole), and untouched it proves its rows either way. The
// pages are an input's PLAIN v1 pages (the output's only v1 pages), and a
// dictionary of distinct values kept as a data page (the output's
// largest page).
func TestKeptPageProvedByItsBytes(t *testing.T) {
	ctx := context.Background()
	for _, v := range []struct {
		name  string
		dict  bool
		opts  []parquet.WriterOption
		which func(h *format.PageHeader, size, largest int64) bool
	}{
		{"plain-v1", false, []parquet.WriterOption{parquet.DataPageVersion(1)}, func(h *format.PageHeader, _, _ int64) bool { return h.Type == format.DataPage }},
		{"dictionary-v2", true, []parquet.WriterOption{parquet.DataPageVersion(2)}, func(_ *format.PageHeader, size, largest int64) bool { return size == largest }},
	} {
		tbl, tasks, _ := rewrittenFirst(t, iceberg.Properties{"write.parquet.page-size-bytes": "16384"}, v.name, v.dict, &parquet.Zstd, v.opts...)
		var largest int64
		for _, task := range tasks {
			largest = max(largest, task.File.FileSizeBytes())
		}
		for _, whole := range []int64{0, largest} {
			if _, rep, err := (&Merger{CheckRows: true, WholeFileBytes: whole}).Group(ctx, tbl, tasks, 1<<30); err != nil || rep.RowGroups.KeptPages == 0 {
				t.Fatalf("%s, whole-file bytes %d: %d pages kept, %v", v.name, whole, rep.RowGroups.KeptPages, err)
			}
			tampered := false
			m := &Merger{CheckRows: true, WholeFileBytes: whole, beforeProve: func(out string) error {
				out = strings.TrimPrefix(out, "file://")
				b, pf := readParquet(t, out)
				if int64(len(b)) <= whole {
					t.Fatalf("an output of %d bytes is read back whole", len(b))
				}
				cc := pf.RowGroups()[0].ColumnChunks()[6] // payload
				oi, err := cc.OffsetIndex()
				if err != nil {
					return err
				}
				var biggest int64
				for i := range oi.NumPages() {
					biggest = max(biggest, oi.CompressedPageSize(i))
				}
				for i := range oi.NumPages() {
					off, size := oi.Offset(i), oi.CompressedPageSize(i)
					r := bytes.NewReader(b[off : off+size])
					var h format.PageHeader
					if err := thrift.NewDecoder(new(thrift.CompactProtocol).NewReader(r)).Decode(&h); err != nil {
						return err
					}
					if v.which(&h, size, biggest) {
						b[off+size-int64(r.Len()/2)]++
						tampered = true
						return os.WriteFile(out, b, 0o644)
					}
				}
				return nil
			}}
			res, _, err := m.Group(ctx, tbl, tasks, 1<<30)
			if !tampered {
				t.Fatalf("%s: the output holds no such page", v.name)
			}
			if !errors.Is(err, rowdigest.ErrRowsDiffer) || !strings.Contains(err.Error(), "kept as it was read") || len(res.NewDataFiles) != 0 {
				t.Fatalf("%s, whole-file bytes %d: a kept page changed before its proof: %v, %d outputs", v.name, whole, err, len(res.NewDataFiles))
			}
		}
	}
}

// Pages proved by their bytes (PLAIN pages, v1 and v2, and dictionaries
// kept as data pages) are found in the row group they were written to:
// an output of several re-encoded row groups, or of row groups copied byte
// for byte ahead of those re-encoded, proves its rows, which are the
// inputs' as Arrow reads them.
func TestKeptPagesAcrossRowGroups(t *testing.T) {
	ctx := context.Background()
	tbl, src := payloadTable(t, iceberg.Properties{"write.parquet.page-size-bytes": "16384"})
	var added []string
	for i := range 6 {
		path := strings.TrimSuffix(src, ".parquet") + "-copy" + strconv.Itoa(i) + ".parquet"
		rewriteParquet(t, src, path, i >= 4, &parquet.Zstd, parquet.DataPageVersion(1+i%2))
		added = append(added, "file://"+path)
	}
	tbl, tasks := addFiles(t, tbl, added...)
	// The rewritten files first, in order: they choose the columns kept.
	slices.SortFunc(tasks, func(a, b table.FileScanTask) int {
		return cmp.Or(cmp.Compare(len(b.File.FilePath()), len(a.File.FilePath())), strings.Compare(a.File.FilePath(), b.File.FilePath()))
	})
	scan := tbl.Scan()
	proj, _ := scan.Projection()
	want, err := rowdigest.Tasks(ctx, scan, proj, tasks, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rowGroupBytes                string
		outGroups, copied, reencoded int
	}{
		// Each PLAIN file (95 KB) is a full row group, copied; the two
		// dictionary-encoded files and iceberg-go's are re-encoded after
		// them, into two row groups.
		{"180000", 6, 4, 3},
		// None is full: the seven are re-encoded into four.
		{"190000", 4, 0, 7},
	} {
		tx := tbl.NewTransaction()
		if err := tx.SetProperties(iceberg.Properties{"write.parquet.row-group-size-bytes": c.rowGroupBytes}); err != nil {
			t.Fatal(err)
		}
		tbl, err := tx.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		res, rep, err := (&Merger{CheckRows: true}).Group(ctx, tbl, tasks, 1<<30)
		if err != nil {
			t.Fatalf("row groups of %s bytes: %v", c.rowGroupBytes, err)
		}
		out := res.NewDataFiles[0]
		_, pf := readParquet(t, strings.TrimPrefix(out.FilePath(), "file://"))
		if got := rep.RowGroups; len(pf.RowGroups()) != c.outGroups || got.Copied != c.copied || got.Reencoded != c.reencoded || got.KeptPages == 0 {
			t.Fatalf("row groups of %s bytes: %d row groups out, %+v", c.rowGroupBytes, len(pf.RowGroups()), got)
		}
		got, err := rowdigest.Tasks(ctx, scan, proj, []table.FileScanTask{{File: out, Length: out.FileSizeBytes()}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("row groups of %s bytes: Arrow reads %v from the output, %v from the inputs", c.rowGroupBytes, got, want)
		}
	}
}

// rewrittenFirst is payloadTable's table with props, and its file's rows
// rewritten (rewriteParquet: dict, codec, opts) beside it as the file
// named name, which it returns and plans first: that file chooses the
// columns kept. A merge of the two keeps pages and proves its rows.
func rewrittenFirst(t *testing.T, props iceberg.Properties, name string, dict bool, codec compress.Codec, opts ...parquet.WriterOption) (*table.Table, []table.FileScanTask, string) {
	t.Helper()
	tbl, src := payloadTable(t, props)
	path := strings.TrimSuffix(src, ".parquet") + "-" + name + ".parquet"
	rewriteParquet(t, src, path, dict, codec, opts...)
	tbl, tasks := addFiles(t, tbl, "file://"+path)
	slices.SortFunc(tasks, func(a, b table.FileScanTask) int {
		return cmp.Compare(len(b.File.FilePath()), len(a.File.FilePath()))
	})
	_, rep, err := (&Merger{CheckRows: true}).Group(context.Background(), tbl, tasks, 1<<30)
	if err != nil || rep.RowGroups.KeptPages == 0 {
		t.Fatalf("%s first: %d pages kept, %v", name, rep.RowGroups.KeptPages, err)
	}
	return tbl, tasks, path
}

// payloadTable is a table of tableenv's schema and a payload of 50–200
// characters (whose bounds a column index truncates), with props, holding
// one file of 600 rows from iceberg-go's writer, whose path it returns.
func payloadTable(t *testing.T, props iceberg.Properties) (*table.Table, string) {
	t.Helper()
	sc := iceberg.NewSchema(0, append(tableenv.BaseSchema.Fields(),
		iceberg.NestedField{ID: 7, Name: "payload", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 8, Name: "qty", Type: iceberg.PrimitiveTypes.Int32})...)
	e, tbl := tableenv.New(t, sc, *iceberg.UnpartitionedSpec, "2")
	tbl = e.Append(tbl, 600)
	if props != nil {
		tx := tbl.NewTransaction()
		if err := tx.SetProperties(props); err != nil {
			t.Fatal(err)
		}
		var err error
		if tbl, err = tx.Commit(e.Ctx); err != nil {
			t.Fatal(err)
		}
	}
	tasks, err := tbl.Scan().PlanFiles(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	return tbl, strings.TrimPrefix(tasks[0].File.FilePath(), "file://")
}

// addFiles adds Parquet files to tbl and plans its files.
func addFiles(t *testing.T, tbl *table.Table, paths ...string) (*table.Table, []table.FileScanTask) {
	t.Helper()
	ctx := context.Background()
	tx := tbl.NewTransaction()
	if err := tx.AddFiles(ctx, paths, nil, false); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return tbl, tasks
}

// rewriteParquet writes the rows of the Parquet file src to dst with
// parquet-go, codec and opts, every column dictionary-encoded when dict
// is set (but booleans), else PLAIN.
func rewriteParquet(t *testing.T, src, dst string, dict bool, codec compress.Codec, opts ...parquet.WriterOption) {
	t.Helper()
	_, pf := readParquet(t, src)
	var fields []parquet.Field
	for _, f := range pf.Schema().Fields() {
		var enc encoding.Encoding = &parquet.Plain
		if dict && f.Type().Kind() != parquet.Boolean {
			enc = &parquet.RLEDictionary
		}
		fields = append(fields, outputColumn{Node: parquet.Compressed(parquet.Encoded(f, enc), codec), name: f.Name()})
	}
	schema := parquet.NewSchema(pf.Schema().Name(), orderedGroup{fields: fields})
	var out bytes.Buffer
	w := parquet.NewWriter(&out, append([]parquet.WriterOption{schema, parquet.PageBufferSize(2 << 10)}, opts...)...)
	for _, rg := range pf.RowGroups() {
		rows := rg.Rows()
		if _, err := parquet.CopyRows(w, rows); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readParquet reads the Parquet file at path.
func readParquet(t *testing.T, path string) ([]byte, *parquet.File) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return b, pf
}

// rewriteFooter changes the footer of the Parquet file at path with edit.
func rewriteFooter(t *testing.T, path string, edit func(*format.FileMetaData)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	md, err := readFooter(b)
	if err != nil {
		t.Fatal(err)
	}
	edit(md)
	footer, err := thrift.Marshal(new(thrift.CompactProtocol), md)
	if err != nil {
		t.Fatal(err)
	}
	size := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	b = append(b[:len(b)-8-size], footer...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(footer)))
	b = append(b, parquetMagic...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkPageIndexes reads the Parquet file at path and checks, for every
// column chunk, that its column index bounds each page's values (a
// truncated byte array bound too), that its offset index points
// at the pages in order, and that its statistics are its values' least
// and greatest and its nulls.
func checkPageIndexes(t *testing.T, path string) {
	t.Helper()
	file, pf := readParquet(t, path)
	md := pf.Metadata()
	for r, rg := range pf.RowGroups() {
		for c, cc := range rg.ColumnChunks() {
			cm := md.RowGroups[r].Columns[c].MetaData
			ci, err := cc.ColumnIndex()
			if err != nil {
				t.Fatalf("column %v: column index: %v", cm.PathInSchema, err)
			}
			oi, err := cc.OffsetIndex()
			if err != nil {
				t.Fatalf("column %v: offset index: %v", cm.PathInSchema, err)
			}
			typ := cc.Type()
			var lo, hi parquet.Value
			var nulls, rows int64
			page := 0
			if err := eachPage(cc, func(p parquet.Page) error {
				if page >= ci.NumPages() || page >= oi.NumPages() {
					t.Fatalf("column %v: page %d past the indexes' %d", cm.PathInSchema, page, ci.NumPages())
				}
				if oi.FirstRowIndex(page) != rows {
					t.Fatalf("column %v, page %d: first row %d in the offset index, %d read", cm.PathInSchema, page, oi.FirstRowIndex(page), rows)
				}
				// Where the offset index says the page is, its header.
				off, size := oi.Offset(page), oi.CompressedPageSize(page)
				var h format.PageHeader
				r := bytes.NewReader(file[min(off, int64(len(file))):])
				if err := thrift.NewDecoder(new(thrift.CompactProtocol).NewReader(r)).Decode(&h); err != nil || h.Type != format.DataPage && h.Type != format.DataPageV2 ||
					int64(len(file))-off-int64(r.Len())+int64(h.CompressedPageSize) != size {
					t.Fatalf("column %v, page %d: at %d (%d bytes) in the offset index, a %v page of %d bytes (%v)", cm.PathInSchema, page, off, size, h.Type, h.CompressedPageSize, err)
				}
				if v2, ok := h.DataPageHeaderV2.Get(); ok && int64(v2.NumRows) != p.NumRows() {
					t.Fatalf("column %v, page %d: the page at the offset index's offset has %d rows, %d read", cm.PathInSchema, page, v2.NumRows, p.NumRows())
				}
				if ci.NullCount(page) != p.NumNulls() {
					t.Fatalf("column %v, page %d: %d nulls in the column index, %d read", cm.PathInSchema, page, ci.NullCount(page), p.NumNulls())
				}
				min, max := ci.MinValue(page), ci.MaxValue(page)
				values := make([]parquet.Value, p.NumValues())
				n, _ := p.Values().ReadValues(values)
				for _, v := range values[:n] {
					if v.IsNull() {
						continue
					}
					if typ.Compare(v, min) < 0 || typ.Compare(v, max) > 0 {
						t.Fatalf("column %v, page %d: value %v outside the column index's [%v, %v]", cm.PathInSchema, page, v, min, max)
					}
					if lo.IsNull() || typ.Compare(v, lo) < 0 {
						lo = v.Clone()
					}
					if hi.IsNull() || typ.Compare(v, hi) > 0 {
						hi = v.Clone()
					}
				}
				nulls += p.NumNulls()
				rows += p.NumRows()
				page++
				return nil
			}); err != nil {
				t.Fatalf("column %v: %v", cm.PathInSchema, err)
			}
			if page != ci.NumPages() {
				t.Fatalf("column %v: %d pages read, %d in the column index", cm.PathInSchema, page, ci.NumPages())
			}
			st := cm.Statistics
			if st.NullCount != nulls {
				t.Fatalf("column %v: %d nulls in the statistics, %d read", cm.PathInSchema, st.NullCount, nulls)
			}
			if !lo.IsNull() && cm.Type != format.Boolean && (!bytes.Equal(st.MinValue, lo.Bytes()) || !bytes.Equal(st.MaxValue, hi.Bytes())) {
				t.Fatalf("column %v: statistics [%x, %x], values [%v, %v]", cm.PathInSchema, st.MinValue, st.MaxValue, lo, hi)
			}
		}
	}
}

// A dictionary-encoded page whose index points past its dictionary
// fails, naming the column, and adds nothing to the page being encoded;
// a page of another kind than the column's is left to addValues.
func TestAppendPlainRefusesBadIndex(t *testing.T) {
	c := &ownChunk{kind: parquet.Int64, meta: format.ColumnMetaData{PathInSchema: []string{"l"}}, compare: func(a, b []byte) int { return bytes.Compare(a, b) }}
	dict := encoding.Int64Values([]int64{7, 8, 9})
	if n, ok, err := c.appendPlain(dict, []int32{2, 0, 1}); err != nil || !ok || n != 3 || len(c.values) != 24 {
		t.Fatalf("good indexes: %d values, %v, %v, %d bytes", n, ok, err, len(c.values))
	}
	if binary.LittleEndian.Uint64(c.values) != 9 || !bytes.Equal(c.pageBounds.lo, binary.LittleEndian.AppendUint64(nil, 7)) {
		t.Fatalf("values %x, bounds [%x, %x]", c.values, c.pageBounds.lo, c.pageBounds.hi)
	}
	for _, ix := range []int32{3, -1} {
		_, _, err := c.appendPlain(dict, []int32{0, ix})
		if err == nil || !strings.Contains(err.Error(), "column [l]") || len(c.values) != 24 {
			t.Errorf("index %d: %v, %d bytes", ix, err, len(c.values))
		}
	}
	if _, ok, err := c.appendPlain(encoding.Int32Values([]int32{1}), nil); ok || err != nil {
		t.Errorf("an int32 page in an int64 column: %v, %v", ok, err)
	}
}

// A truncated lower bound is a prefix, no greater than the value; a
// truncated upper bound no less than it, its last byte that can grow
// grown, or the value whole when none can.
func TestTruncatedBounds(t *testing.T) {
	long := bytes.Repeat([]byte("a"), 20)
	ff := bytes.Repeat([]byte{0xff}, 20)
	for _, c := range []struct{ v, lo, hi []byte }{
		{[]byte("abc"), []byte("abc"), []byte("abc")},
		{long, long[:16], append(bytes.Repeat([]byte("a"), 15), 'b')},
		{append([]byte("a"), ff...), append([]byte("a"), ff[:15]...), []byte("b")},
		{ff, ff[:16], ff},
	} {
		lo, hi := truncateLower(slices.Clone(c.v)), truncateUpper(slices.Clone(c.v))
		if !bytes.Equal(lo, c.lo) || !bytes.Equal(hi, c.hi) || bytes.Compare(lo, c.v) > 0 || bytes.Compare(hi, c.v) < 0 {
			t.Errorf("%x: [%x, %x], want [%x, %x]", c.v, lo, hi, c.lo, c.hi)
		}
	}
}

// A blockBuffer reads back what was written, across its blocks, as a
// file from any offset; and a read outside it fails.
func TestBlockBufferPieces(t *testing.T) {
	var b blockBuffer
	want := make([]byte, 9<<20)
	for i := range want {
		want[i] = byte(i * 7)
	}
	for rest := want; len(rest) > 0; {
		n := min(len(rest), 1+len(rest)%(3<<20))
		b.Write(rest[:n])
		rest = rest[n:]
	}
	if b.Len() != len(want) || len(b.blocks) < 3 {
		t.Fatalf("%d bytes in %d blocks", b.Len(), len(b.blocks))
	}
	p := b.pieces(100)
	for _, r := range [][2]int{{0, len(want)}, {1, 5 << 20}, {4<<20 - 3, 10}, {len(want) - 1, 1}} {
		got := make([]byte, r[1])
		if _, err := p.ReadAt(got, int64(100+r[0])); err != nil || !bytes.Equal(got, want[r[0]:r[0]+r[1]]) {
			t.Fatalf("read %v: %v", r, err)
		}
	}
	if _, err := p.ReadAt(make([]byte, 2), int64(100+len(want)-1)); err == nil {
		t.Fatal("a read past the end succeeded")
	}
	if _, err := p.ReadAt(make([]byte, 2), 99); err == nil {
		t.Fatal("a read before the start succeeded")
	}
	b.Reset()
	b.Write([]byte("x"))
	if got := b.pieces(0).b[0]; string(got) != "x" || len(b.free) == 0 {
		t.Fatalf("after Reset: %q, %d blocks free", got, len(b.free))
	}
}

// segments hold a chunk's bytes in order, written and referred to; bytes
// written one after another in a block make one segment.
func TestSegments(t *testing.T) {
	var s segments
	input := []byte("input page")
	s.write([]byte("header "))
	s.write([]byte("levels "))
	s.ref(input)
	s.write(bytes.Repeat([]byte("x"), 5<<20)) // past a block
	var got []byte
	for _, b := range s.segs {
		got = append(got, b...)
	}
	want := "header levels input page" + strings.Repeat("x", 5<<20)
	if string(got) != want || s.Len() != len(want) {
		t.Fatalf("%d bytes, want %d", len(got), len(want))
	}
	if len(s.segs) < 3 || string(s.segs[0]) != "header levels " || &s.segs[1][0] != &input[0] {
		t.Fatalf("%d segments, the first %q", len(s.segs), s.segs[0])
	}
	s.Reset()
	if s.Len() != 0 || len(s.segs) != 0 {
		t.Fatal("not empty after Reset")
	}
}

// Floating point columns are written by the merge too, and their
// statistics and page indexes are those the Parquet format asks of a
// writer: NaN is never a bound of a chunk nor of a page with other
// values, a least zero is -0.0 and a greatest 0.0; a page of NaN alone
// has NaN bounds in the column index, which readers ignore. Whether the pages are kept or their values
// encoded, from PLAIN or dictionary-encoded inputs, the output holds the
// inputs' rows, NaN, both zeros and infinities as they were. (The merge
// writes a column itself when its first input's chunk is PLAIN or a
// dictionary of distinct values; these repeat theirs, so the PLAIN input
// goes first where the statistics are checked.)
func TestOwnColumnsFloats(t *testing.T) {
	ctx := context.Background()
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 3, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
		// A column the merge leaves to parquet-go's writer.
		iceberg.NestedField{ID: 4, Name: "flag", Type: iceberg.PrimitiveTypes.Bool, Required: true})
	tbl, asc := arrowTable(t, sc)
	nan, negZero := math.NaN(), math.Copysign(0, -1)
	// 2,000 rows: pages of 0.0 alone and of -0.0 alone, infinities,
	// nulls, and a run of NaN long enough to fill pages of its own (2 KiB
	// pages: 256 doubles, 512 floats).
	value := func(r int) (float64, bool) {
		switch {
		case r >= 1000 && r < 1800:
			return nan, true
		case r%97 == 0:
			return 0, false // null
		case r < 300:
			return 0, true
		case r < 600:
			return negZero, true
		case r%50 == 0:
			return []float64{math.Inf(1), math.Inf(-1), nan}[r/50%3], true
		}
		return float64(r%700-350) / 8, true
	}
	bld := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	for r := range 2000 {
		bld.Field(0).(*array.Int64Builder).Append(int64(r))
		bld.Field(3).(*array.BooleanBuilder).Append(r%3 == 0)
		if v, ok := value(r); ok {
			bld.Field(1).(*array.Float32Builder).Append(float32(v))
			bld.Field(2).(*array.Float64Builder).Append(v)
		} else {
			bld.Field(1).AppendNull()
			bld.Field(2).AppendNull()
		}
	}
	tbl = appendBuilt(t, tbl, bld)
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	src := strings.TrimPrefix(tasks[0].File.FilePath(), "file://")
	var added []string
	for _, dict := range []bool{false, true} {
		path := strings.TrimSuffix(src, ".parquet") + "-" + strconv.FormatBool(dict) + ".parquet"
		rewriteParquet(t, src, path, dict, &parquet.Zstd, parquet.DataPageVersion(2))
		added = append(added, "file://"+path)
	}
	tbl, tasks = addFiles(t, tbl, added...)
	want := rowsOf(t, tbl, tasks...)
	for _, c := range []struct {
		name string
		page string
		kept bool
	}{
		{"pages kept", "16384", true},
		{"values encoded", "67108864", false},
	} {
		tbl := setProps(t, tbl, iceberg.Properties{"write.parquet.page-size-bytes": c.page})
		for first := range tasks {
			order := append([]table.FileScanTask{tasks[first]}, append(tasks[:first:first], tasks[first+1:]...)...)
			res, rep, err := (&Merger{CheckRows: true}).Group(ctx, tbl, order, 1<<30)
			if err != nil {
				t.Fatalf("%s, %s first: %v", c.name, order[0].File.FilePath(), err)
			}
			if (rep.RowGroups.KeptPages > 0) != c.kept || !c.kept && rep.RowGroups.OwnPages == 0 {
				t.Errorf("%s, %s first: %d pages kept, %d encoded by the merge", c.name, order[0].File.FilePath(), rep.RowGroups.KeptPages, rep.RowGroups.OwnPages)
			}
			out := res.NewDataFiles[0]
			if got := rowsOf(t, tbl, table.FileScanTask{File: out, Length: out.FileSizeBytes()}); got != want {
				t.Fatalf("%s: Arrow reads %v from the output, %v from the inputs", c.name, got, want)
			}
			if strings.HasSuffix(order[0].File.FilePath(), "-false.parquet") {
				// Kept, the inputs' pages of NaN alone stay so.
				if nan := checkFloatStatistics(t, c.name, strings.TrimPrefix(out.FilePath(), "file://")); nan != c.kept {
					t.Errorf("%s: a page of NaN alone %v", c.name, nan)
				}
			}
		}
	}
}

// checkFloatStatistics checks the floating point columns of the Parquet
// file at path as TestOwnColumnsFloats describes: the chunk's statistics
// and each page's column index entry are the least and greatest of its
// values, NaN left out and zeros widened, or NaN for a page of NaN alone.
// The columns must be the merge's (PLAIN, v2 pages only). It reports
// whether a page held NaN alone.
func checkFloatStatistics(t *testing.T, what, path string) (nanPage bool) {
	t.Helper()
	_, pf := readParquet(t, path)
	md := pf.Metadata()
	for r, rg := range pf.RowGroups() {
		for c, cc := range rg.ColumnChunks() {
			cm := md.RowGroups[r].Columns[c].MetaData
			if cm.Type != format.Float && cm.Type != format.Double {
				continue
			}
			if len(cm.EncodingStats) == 0 || slices.ContainsFunc(cm.EncodingStats, func(s format.PageEncodingStats) bool {
				return s.PageType != format.DataPageV2 || s.Encoding != format.Plain
			}) {
				t.Fatalf("%s: column %v not written by the merge: %+v", what, cm.PathInSchema, cm.EncodingStats)
			}
			ci, err := cc.ColumnIndex()
			if err != nil {
				t.Fatalf("%s: column %v: column index: %v", what, cm.PathInSchema, err)
			}
			asFloat := func(v parquet.Value) float64 {
				if cm.Type == format.Float {
					return float64(v.Float())
				}
				return v.Double()
			}
			var chunk floatSpan
			page := 0
			if err := eachPage(cc, func(p parquet.Page) error {
				vs := make([]parquet.Value, p.NumValues())
				n, _ := p.Values().ReadValues(vs)
				var span floatSpan
				for _, v := range vs[:n] {
					if !v.IsNull() {
						span.add(asFloat(v))
						chunk.add(asFloat(v))
					}
				}
				lo, hi := asFloat(ci.MinValue(page)), asFloat(ci.MaxValue(page))
				if span.values > 0 && !span.check(lo, hi) {
					t.Fatalf("%s: column %v, page %d: bounds [%v, %v] in the column index, values %+v", what, cm.PathInSchema, page, lo, hi, span)
				}
				nanPage = nanPage || span.values > 0 && !span.ok
				page++
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			typ := cc.Type()
			lo, hi := typ.NewValues(cm.Statistics.MinValue, nil), typ.NewValues(cm.Statistics.MaxValue, nil)
			if lo.Size() != int64(typ.Length()/8) || hi.Size() != lo.Size() {
				t.Fatalf("%s: column %v: statistics [%x, %x]", what, cm.PathInSchema, cm.Statistics.MinValue, cm.Statistics.MaxValue)
			}
			if f, d := floats(cm.Type, lo), floats(cm.Type, hi); !chunk.ok || math.IsNaN(f) || math.IsNaN(d) || !chunk.check(f, d) {
				t.Fatalf("%s: column %v: statistics [%v, %v], values %+v", what, cm.PathInSchema, f, d, chunk)
			}
		}
	}
	return nanPage
}

// floatSpan is the least and greatest of floating point values, NaN
// left out (ok once there is another).
type floatSpan struct {
	values int
	ok     bool
	lo, hi float64
}

func (s *floatSpan) add(x float64) {
	s.values++
	switch {
	case math.IsNaN(x):
	case !s.ok:
		s.lo, s.hi, s.ok = x, x, true
	default:
		s.lo, s.hi = min(s.lo, x), max(s.hi, x)
	}
}

// check reports whether lo and hi are the span's bounds as the Parquet
// format asks writers for them: zeros widened to -0.0 and 0.0, and NaN
// for values all NaN.
func (s *floatSpan) check(lo, hi float64) bool {
	if !s.ok {
		return math.IsNaN(lo) && math.IsNaN(hi)
	}
	want := [2]float64{s.lo, s.hi}
	if want[0] == 0 {
		want[0] = math.Copysign(0, -1)
	}
	if want[1] == 0 {
		want[1] = 0
	}
	return math.Float64bits(lo) == math.Float64bits(want[0]) && math.Float64bits(hi) == math.Float64bits(want[1])
}

// floats is the value b holds, a float or double column's, as float64.
func floats(typ format.Type, b encoding.Values) float64 {
	if typ == format.Float {
		return float64(b.Float()[0])
	}
	return b.Double()[0]
}

// A table whose every column the merge writes itself (PLAIN numbers and
// strings) is compacted with no column left to parquet-go's writer: its
// row groups, one or several, are the merge's chunks alone, with the rows
// as they were and page indexes that hold.
func TestOwnColumnsNotAll(t *testing.T) {
	ctx := context.Background()
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 3, Name: "payload", Type: iceberg.PrimitiveTypes.String})
	e, tbl := tableenv.New(t, sc, *iceberg.UnpartitionedSpec, "2")
	tbl = e.Append(tbl, 500)
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	src := strings.TrimPrefix(tasks[0].File.FilePath(), "file://")
	var added []string
	for i := range 2 {
		path := strings.TrimSuffix(src, ".parquet") + "-plain" + strconv.Itoa(i) + ".parquet"
		rewriteParquet(t, src, path, false, &parquet.Zstd, parquet.DataPageVersion(2))
		added = append(added, "file://"+path)
	}
	tbl, tasks = addFiles(t, tbl, added...)
	tasks = slices.DeleteFunc(tasks, func(ft table.FileScanTask) bool { return !strings.Contains(ft.File.FilePath(), "-plain") })
	want := rowsOf(t, tbl, tasks...)
	// A row group limit under an input's 500 rows cuts the output at
	// every input (an input at the limit would be copied instead).
	for groups, limit := range map[int]string{1: "100000", 2: "250"} {
		tbl := setProps(t, tbl, iceberg.Properties{"write.parquet.row-group-limit": limit})
		res, rep, err := (&Merger{CheckRows: true}).Group(ctx, tbl, tasks, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		if rep.RowGroups.OwnPages+rep.RowGroups.KeptPages == 0 || rep.RowGroups.Reencoded == 0 {
			t.Fatalf("%d row groups: nothing written by the merge: %+v", groups, rep.RowGroups)
		}
		out := res.NewDataFiles[0]
		if got := rowsOf(t, tbl, table.FileScanTask{File: out, Length: out.FileSizeBytes()}); got != want {
			t.Fatalf("%d row groups: Arrow reads %v from the output, %v from the inputs", groups, got, want)
		}
		path := strings.TrimPrefix(out.FilePath(), "file://")
		checkPageIndexes(t, path)
		if _, pf := readParquet(t, path); len(pf.RowGroups()) != groups {
			t.Fatalf("%d row groups: the output has %d", groups, len(pf.RowGroups()))
		}
	}
}

// byteArrayRange finds what comparing every value in full finds, on
// values built to make prefixes tie: short ones, zero bytes that pad as
// a short value's prefix does, and common prefixes of 8 bytes and more;
// in index order too.
func TestByteArrayRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	alphabet := []byte{0, 1, 'a', 'b', 0xff}
	for round := range 2000 {
		n := 1 + rng.IntN(40)
		var data []byte
		offsets := []uint32{0}
		common := make([]byte, rng.IntN(12))
		for i := range common {
			common[i] = alphabet[rng.IntN(len(alphabet))]
		}
		for range n {
			v := common[:rng.IntN(len(common)+1)]
			data = append(data, v...)
			for range rng.IntN(4) {
				data = append(data, alphabet[rng.IntN(len(alphabet))])
			}
			offsets = append(offsets, uint32(len(data)))
		}
		ixs := make([]int, n)
		for i := range ixs {
			ixs[i] = rng.IntN(n)
		}
		for _, at := range []func(int) int{identity, func(i int) int { return ixs[i] }} {
			var want bounds
			for i := range n {
				want.add(data[offsets[at(i)]:offsets[at(i)+1]], bytes.Compare)
			}
			lo, hi := byteArrayRange(data, offsets, n, at)
			if !bytes.Equal(lo, want.lo) || !bytes.Equal(hi, want.hi) {
				t.Fatalf("round %d: [%x, %x], compared in full [%x, %x]", round, lo, hi, want.lo, want.hi)
			}
		}
	}
}

// A column whose values repeat is written by the merge
// dictionary-encoded: one dictionary of the distinct values of all the
// inputs, whatever their own dictionaries held (other entries, in
// another order) and from PLAIN inputs too, with the rows as they were
// and page indexes that bound each page's values. Past the table's
// dict-size-bytes, the chunk goes on in PLAIN pages, as parquet-go's
// writer falls back; with dictionaries off, there is none.
func TestOwnColumnsDictionary(t *testing.T) {
	ctx := context.Background()
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "cat", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "qty", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 4, Name: "price", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 5, Name: "flag", Type: iceberg.PrimitiveTypes.Bool, Required: true})
	tbl, asc := arrowTable(t, sc)
	// Two files whose repeated values overlap in part.
	for f, cats := range [][]string{{"view", "click", "buy"}, {"buy", "share", "view", "bot"}} {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, asc)
		for r := range 1500 {
			bld.Field(0).(*array.Int64Builder).Append(int64(f*10000 + r))
			bld.Field(4).(*array.BooleanBuilder).Append(r%2 == 0)
			if r%11 == 0 {
				bld.Field(1).AppendNull()
				bld.Field(2).AppendNull()
				bld.Field(3).AppendNull()
				continue
			}
			bld.Field(1).(*array.StringBuilder).Append(cats[(r*7)%len(cats)])
			bld.Field(2).(*array.Int32Builder).Append(int32(r%37 + 20*f))
			bld.Field(3).(*array.Float64Builder).Append([]float64{math.NaN(), math.Copysign(0, -1), 0, 2.5, -1.25, float64(f)}[(r+f)%6])
		}
		tbl = appendBuilt(t, tbl, bld)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var added []string
	for i, ft := range tasks {
		src := strings.TrimPrefix(ft.File.FilePath(), "file://")
		for _, dict := range []bool{true, false} {
			path := strings.TrimSuffix(src, ".parquet") + "-rw" + strconv.Itoa(i) + strconv.FormatBool(dict) + ".parquet"
			rewriteParquet(t, src, path, dict, &parquet.Zstd, parquet.DataPageVersion(2))
			added = append(added, "file://"+path)
		}
	}
	tbl, tasks = addFiles(t, tbl, added...)
	tasks = slices.DeleteFunc(tasks, func(ft table.FileScanTask) bool { return !strings.Contains(ft.File.FilePath(), "-rw") })
	// A dictionary-encoded input first, so that the merge writes the
	// columns whose values repeat dictionary-encoded.
	slices.SortFunc(tasks, func(a, b table.FileScanTask) int {
		return strings.Compare(b.File.FilePath()[len(b.File.FilePath())-12:], a.File.FilePath()[len(a.File.FilePath())-12:])
	})
	if !strings.HasSuffix(tasks[0].File.FilePath(), "true.parquet") {
		t.Fatalf("first input %s is not dictionary-encoded", tasks[0].File.FilePath())
	}
	want := rowsOf(t, tbl, tasks...)
	for _, c := range []struct {
		name     string
		props    iceberg.Properties
		dict     bool // the columns that repeat have a dictionary
		fallback bool // and PLAIN pages after it
	}{
		{"dictionary", iceberg.Properties{"write.parquet.page-size-bytes": "4096"}, true, false},
		{"past dict-size-bytes", iceberg.Properties{"write.parquet.page-size-bytes": "4096", "write.parquet.dict-size-bytes": "24"}, true, true},
		{"dictionaries off", iceberg.Properties{"write.parquet.page-size-bytes": "4096", "parquet.enable.dictionary": "false"}, false, false},
	} {
		tbl := setProps(t, tbl, c.props)
		res, rep, err := (&Merger{CheckRows: true}).Group(ctx, tbl, tasks, 1<<30)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if rep.RowGroups.OwnPages == 0 && c.dict {
			t.Errorf("%s: no page encoded by the merge", c.name)
		}
		out := res.NewDataFiles[0]
		if got := rowsOf(t, tbl, table.FileScanTask{File: out, Length: out.FileSizeBytes()}); got != want {
			t.Fatalf("%s: Arrow reads %v from the output, %v from the inputs", c.name, got, want)
		}
		path := strings.TrimPrefix(out.FilePath(), "file://")
		checkPageIndexes(t, path)
		_, pf := readParquet(t, path)
		md := pf.Metadata()
		for r, rg := range pf.RowGroups() {
			for col, cc := range rg.ColumnChunks() {
				cm := md.RowGroups[r].Columns[col].MetaData
				name := cm.PathInSchema[0]
				if name != "cat" && name != "qty" && name != "price" {
					continue
				}
				var dictPages, dictData, plainData int32
				for _, s := range cm.EncodingStats {
					switch {
					case s.PageType == format.DictionaryPage:
						dictPages += s.Count
					case s.Encoding == format.RLEDictionary:
						dictData += s.Count
					case s.Encoding == format.Plain:
						plainData += s.Count
					}
				}
				if (dictPages == 1 && dictData > 0) != c.dict || (plainData > 0) != (c.fallback || !c.dict) {
					t.Fatalf("%s: column %s: %+v", c.name, name, cm.EncodingStats)
				}
				if !c.dict || c.fallback {
					continue
				}
				// One entry per distinct value (by its bits), none
				// missing, none twice.
				distinct := map[string]bool{}
				entries := -1
				if err := eachPage(cc, func(p parquet.Page) error {
					if d := p.Dictionary(); d != nil {
						entries = d.Len()
					}
					vs := make([]parquet.Value, p.NumValues())
					n, _ := p.Values().ReadValues(vs)
					for _, v := range vs[:n] {
						if !v.IsNull() {
							distinct[string(v.Bytes())] = true
						}
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if entries != len(distinct) {
					t.Fatalf("%s: column %s: %d dictionary entries for %d distinct values", c.name, name, entries, len(distinct))
				}
			}
		}
	}
}

// appendBuilt appends the rows built in bld to tbl, and releases bld.
func appendBuilt(t *testing.T, tbl *table.Table, bld *array.RecordBuilder) *table.Table {
	t.Helper()
	rec := bld.NewRecordBatch()
	bld.Release()
	rdr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if tbl, err = tbl.Append(context.Background(), rdr, nil); err != nil {
		t.Fatal(err)
	}
	return tbl
}

// arrowTable is an unpartitioned v2 table of schema sc, and sc as Arrow's.
func arrowTable(t *testing.T, sc *iceberg.Schema) (*table.Table, *arrow.Schema) {
	t.Helper()
	_, tbl := tableenv.New(t, sc, *iceberg.UnpartitionedSpec, "2")
	asc, err := table.SchemaToArrowSchema(sc, nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	return tbl, asc
}

// setProps sets table properties on tbl.
func setProps(t *testing.T, tbl *table.Table, props iceberg.Properties) *table.Table {
	t.Helper()
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(props); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// rowsOf is the row digest of tasks of tbl, as Arrow reads them.
func rowsOf(t *testing.T, tbl *table.Table, tasks ...table.FileScanTask) rowdigest.Digest {
	t.Helper()
	scan := tbl.Scan()
	proj, _ := scan.Projection()
	d, err := rowdigest.Tasks(context.Background(), scan, proj, tasks, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// An input page whose zstd frame decodes to other bytes than its writer
// compressed, as its checksum says, fails the group, naming the file and
// the column, though its page's CRC matches the page (a writer computing the CRC over
// bytes already damaged leaves it so, and one giving none is not checked
// at all). Without the frame's check, the merge would decode the damaged
// value and write it anew, under a row proof that holds (the proof
// compares the output with the inputs as decoded). The same file
// undamaged, its frames checksummed as arrow-go's writer (iceberg-go's)
// writes them, is merged.
func TestDamagedZstdFrameFailsTheGroup(t *testing.T) {
	ctx := context.Background()
	for _, damage := range []bool{false, true} {
		tbl, src := payloadTable(t, iceberg.Properties{"write.parquet.page-size-bytes": "16384"})
		path := strings.TrimSuffix(src, ".parquet") + "-checksummed.parquet"
		codec := &checksummedZstd{damage: damage}
		rewriteParquet(t, src, path, false, codec, parquet.DataPageVersion(2))
		if codec.damaged != damage {
			t.Fatalf("damage %v: a page damaged: %v", damage, codec.damaged)
		}
		tbl, tasks := addFiles(t, tbl, "file://"+path)
		res, _, err := (&Merger{CheckRows: true}).Group(ctx, tbl, tasks, 1<<30)
		if !damage {
			if err != nil || len(res.NewDataFiles) != 1 {
				t.Fatalf("undamaged: %v, %d outputs", err, len(res.NewDataFiles))
			}
			continue
		}
		if !errors.Is(err, zstd.ErrCRCMismatch) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `"payload"`) || len(res.NewDataFiles) != 0 {
			t.Fatalf("a zstd frame whose content its checksum does not match: %v, %d outputs", err, len(res.NewDataFiles))
		}
	}
}

// checksummedZstd is zstd with a checksum at the end of every frame
// (klauspost/compress's default, which parquet-go's codec turns off).
// With damage, the first page of the payload column's values (printable
// characters, but for their lengths) has a character in its middle
// changed after its checksum was taken: the frame decodes, to other bytes
// than the checksum's.
type checksummedZstd struct{ damage, damaged bool }

func (*checksummedZstd) String() string                            { return "ZSTD" }
func (*checksummedZstd) CompressionCodec() format.CompressionCodec { return format.Zstd }

func (c *checksummedZstd) Encode(dst, src []byte) ([]byte, error) {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer e.Close()
	frame := e.EncodeAll(src, dst[:0])
	if !c.damage || c.damaged || len(src) < 1024 || printable(src) < len(src)*9/10 {
		return frame, nil
	}
	// A character amid others, not a byte of a value's length.
	at := len(src) / 2
	for ; at+5 <= len(src) && (printable(src[at-4:at+5]) < 9 || src[at] == '~'); at++ {
	}
	if at+5 > len(src) {
		return frame, nil
	}
	damaged := slices.Clone(src)
	damaged[at]++
	out := e.EncodeAll(damaged, nil)
	copy(out[len(out)-4:], frame[len(frame)-4:]) // the checksum of src
	c.damaged = true
	return out, nil
}

// printable counts the bytes of b from ' ' to '~'.
func printable(b []byte) int {
	n := 0
	for _, c := range b {
		if c >= ' ' && c <= '~' {
			n++
		}
	}
	return n
}

func (*checksummedZstd) Decode(dst, src []byte) ([]byte, error) {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.DecodeAll(src, dst[:0])
}
