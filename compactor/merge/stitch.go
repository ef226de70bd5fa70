package merge

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// stitcher writes a Parquet file whose row groups are copied byte for byte
// from other Parquet files: their column chunks (dictionary and data pages
// as they are), bloom filters, column indexes and offset indexes, with
// every offset moved to where the bytes land. The footer is its own.
//
// A row group the merge re-encodes is written by a parquet-go writer as a
// file of its own whose row group bytes pass straight into the output
// (reencodeSink); the stitcher then adopts it as it would a copy, so one
// file can hold copied and re-encoded row groups in any order.
type stitcher struct {
	w      *countingWriter
	bufs   [copyAhead][]byte // copy buffers (see copyRange)
	piece  int64             // their size, copyPieceBytes
	schema []format.SchemaElement
	orders []format.ColumnOrder
	groups []format.RowGroup
	// Page indexes are written after the last row group, as parquet-mr
	// and parquet-go place them; they are held until then. A nil entry
	// means the input chunk had none.
	columnIndexes [][][]byte
	offsetIndexes [][]*format.OffsetIndex
	rows          int64
	// origin is the input whose row groups are being copied, as storage
	// holds it, when the storage may copy them itself (nil: it may not).
	origin *copySource
	// tail holds column chunks placed after the last row group, at
	// offsets of their own until close moves them there: the row-lineage
	// columns encoded for copied row groups, and the small chunks of a
	// copied row group that do not follow its others. Between two copied
	// row groups they would begin an object-store part that the next
	// copy's first bytes must complete (s3write: parts of 5 MiB), so the
	// copies could not stay whole. Readers find a chunk by its offsets,
	// wherever it is in the file. tailCols are, per row group, its
	// columns in the tail.
	tail     countingWriter
	tailBuf  bytes.Buffer
	tailCols [][]int
}

// maxDeferredBytes bounds the chunks of one copied row group that go to
// the tail: past it they are copied in place, one by one, as before.
const maxDeferredBytes = 4 << 20

// parquetMagic opens and closes every Parquet file.
const parquetMagic = "PAR1"

func newStitcher(w *countingWriter) (*stitcher, error) {
	if _, err := io.WriteString(w, parquetMagic); err != nil {
		return nil, err
	}
	s := &stitcher{w: w, piece: copyPieceBytes}
	s.tail.w = &s.tailBuf
	return s, nil
}

// chunkStart is where a column chunk's bytes begin: its dictionary page
// when it has one, else its first data page (or index page, which no
// current writer emits but the format allows first).
func chunkStart(md *format.ColumnMetaData) int64 {
	start := md.DataPageOffset
	if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
		start = md.DictionaryPageOffset
	}
	if md.IndexPageOffset > 0 && md.IndexPageOffset < start {
		start = md.IndexPageOffset
	}
	return start
}

// appendRowGroup copies row group r of the file src whose footer is md,
// writing its column chunks' bytes, in column order, to h too when it is
// set. It reports whether the storage copied them (copyByStorage): then
// h got the sample of the range of the first inPlace chunks
// (sampleRange), and the bytes of the others, which went to the tail.
func (s *stitcher) appendRowGroup(src io.ReaderAt, md *format.FileMetaData, r int, h io.Writer) (byStorage bool, inPlace int, err error) {
	// Writers put a row group's chunks one after another: then one
	// ranged read copies them all (on object storage, a GET per 8 MiB
	// rather than one per column at least), or one copy by the storage.
	// Chunks that do not follow the first ones (the lineage columns of a
	// file this merge wrote: see tail) go to the tail when they are
	// small; else each chunk is copied in place.
	cols := md.RowGroups[r].Columns
	inPlace = contiguousPrefix(cols)
	if inPlace == 0 || !deferrable(cols[inPlace:]) {
		return false, len(cols), s.addRowGroup(src, md, r, nil, h)
	}
	start := chunkStart(&cols[0].MetaData)
	end := chunkStart(&cols[inPlace-1].MetaData) + cols[inPlace-1].MetaData.TotalCompressedSize
	at := s.w.n
	byStorage, err = s.copyByStorage(start, end-start, h)
	if err == nil && !byStorage {
		err = s.copyRange(s.w, src, start, end-start, h)
	}
	if err != nil {
		return false, 0, fmt.Errorf("copy row group %d: %w", r, err)
	}
	deltas := make([]int64, len(cols))
	for i := range cols {
		deltas[i] = at - start
	}
	var moved []int
	for i := inPlace; i < len(cols); i++ {
		cm := &cols[i].MetaData
		deltas[i] = s.tail.n - chunkStart(cm)
		if err := s.copyRange(&s.tail, src, chunkStart(cm), cm.TotalCompressedSize, h); err != nil {
			return false, 0, fmt.Errorf("copy row group %d, column %v: %w", r, cm.PathInSchema, err)
		}
		moved = append(moved, i)
	}
	if err := s.addRowGroup(src, md, r, deltas, nil); err != nil {
		return false, 0, err
	}
	s.tailCols[len(s.tailCols)-1] = moved
	return byStorage, inPlace, nil
}

// deferrable reports whether cols may go to the tail: small, and with no
// bloom filter, which is copied right after its chunk.
func deferrable(cols []format.ColumnChunk) bool {
	var n int64
	for i := range cols {
		if cols[i].MetaData.BloomFilterOffset > 0 {
			return false
		}
		n += cols[i].MetaData.TotalCompressedSize
	}
	return n <= maxDeferredBytes
}

// copyByStorage has the output's storage copy n bytes of the origin from
// start, where it can (countingWriter.copyRange), and then hands h the
// range's sample: the bytes never pass through here, and the proof reads
// back the same sample of the output.
func (s *stitcher) copyByStorage(start, n int64, h io.Writer) (bool, error) {
	if s.origin == nil {
		return false, nil
	}
	ok, err := s.w.copyRange(*s.origin, start, n)
	if err != nil || !ok {
		return false, err
	}
	if h != nil {
		if err := sampleRange(h, s.origin.r, start, n); err != nil {
			return true, fmt.Errorf("read the ends of the copied range: %w", err)
		}
	}
	return true, nil
}

// contiguous reports whether cols lie one after another in their file,
// from start for n bytes.
func contiguous(cols []format.ColumnChunk) (start, n int64, ok bool) {
	if len(cols) == 0 || contiguousPrefix(cols) < len(cols) {
		return 0, 0, false
	}
	start = chunkStart(&cols[0].MetaData)
	for i := range cols {
		n += cols[i].MetaData.TotalCompressedSize
	}
	return start, n, true
}

// contiguousPrefix is how many of cols, from the first, lie one after
// another in their file.
func contiguousPrefix(cols []format.ColumnChunk) int {
	if len(cols) == 0 {
		return 0
	}
	next := chunkStart(&cols[0].MetaData)
	for i := range cols {
		if chunkStart(&cols[i].MetaData) != next {
			return i
		}
		next += cols[i].MetaData.TotalCompressedSize
	}
	return len(cols)
}

// adoptRowGroups adds the row groups of the re-encoding writer's file
// (see reencodeSink), whose bytes up to the flush are already in the
// output from sink.base on; the rest of them, still held, is written now.
func (s *stitcher) adoptRowGroups(sink *reencodeSink) (*format.FileMetaData, error) {
	md, err := sink.footer()
	if err != nil {
		return nil, err
	}
	var end int64 // the end of the row groups' bytes in the file
	for _, rg := range md.RowGroups {
		for _, c := range rg.Columns {
			if c.MetaData.BloomFilterOffset > 0 {
				return nil, fmt.Errorf("column %v has a bloom filter", c.MetaData.PathInSchema)
			}
			end = max(end, chunkStart(&c.MetaData)+c.MetaData.TotalCompressedSize)
		}
	}
	out := sink.out // the output, or the stitcher's tail
	held := sink.n - int64(sink.tail.Len())
	if end > held {
		if err := sink.held().each(held, end-held, func(b []byte) error {
			_, err := out.Write(b)
			return err
		}); err != nil {
			return nil, err
		}
	}
	base := sink.base
	if base < 0 { // every byte was held
		base = out.n - (end - int64(len(parquetMagic)))
	}
	if out.n-base != end-int64(len(parquetMagic)) {
		return nil, fmt.Errorf("the output holds %d bytes of row groups ending at %d", out.n-base, end)
	}
	for r := range md.RowGroups {
		deltas := make([]int64, len(md.RowGroups[r].Columns))
		for i := range deltas {
			deltas[i] = base - int64(len(parquetMagic))
		}
		if err := s.addRowGroup(sink.held(), md, r, deltas, nil); err != nil {
			return nil, err
		}
		if out == &s.tail {
			s.tailCols[len(s.tailCols)-1] = allColumns(len(deltas))
		}
	}
	return md, nil
}

// adoptWithOwn adds the one row group of rows rows of the re-encoding
// writer's file, held whole by sink, with the columns the merge wrote
// itself (own[i], for column i; nil for the writer's) in their places.
// The chunks are written in column order, one after another, as a writer
// places them: a later merge can copy the row group as one range. When
// every column is the merge's, the writer, with none, made no row group,
// and the row group is the own chunks alone.
func (s *stitcher) adoptWithOwn(sink *reencodeSink, own []*ownChunk, rows int64) error {
	if sink.base >= 0 {
		return fmt.Errorf("the re-encoded row group was not held")
	}
	md, err := sink.footer()
	if err != nil {
		return err
	}
	if len(md.RowGroups) == 0 && !slices.Contains(own, nil) {
		md.RowGroups = []format.RowGroup{{NumRows: rows}}
	}
	if len(md.RowGroups) != 1 {
		return fmt.Errorf("%d re-encoded row groups, not one", len(md.RowGroups))
	}
	// The writer's file and, after it, the own chunks with their page
	// indexes, as one file that addRowGroup copies from.
	src := sink.held()
	proto := new(thrift.CompactProtocol)
	in := md.RowGroups[0]
	cols := make([]format.ColumnChunk, 0, len(own))
	j := 0
	for i, oc := range own {
		if oc == nil {
			if j == len(in.Columns) {
				return fmt.Errorf("the re-encoded row group has %d columns, fewer than the file's", len(in.Columns))
			}
			cols = append(cols, in.Columns[j])
			j++
			continue
		}
		c, ci, oi, err := oc.finish(src.end)
		if err != nil {
			return err
		}
		if c.MetaData.NumValues != in.NumRows {
			return fmt.Errorf("column %d has %d values for %d rows", i, c.MetaData.NumValues, in.NumRows)
		}
		for _, b := range oc.pages.segs {
			src.add(src.end, b)
		}
		oib, err := thrift.Marshal(proto, oi)
		if err != nil {
			return fmt.Errorf("encode an offset index: %w", err)
		}
		c.ColumnIndexOffset, c.ColumnIndexLength = src.end, int32(len(ci))
		src.add(src.end, ci)
		c.OffsetIndexOffset, c.OffsetIndexLength = src.end, int32(len(oib))
		src.add(src.end, oib)
		cols = append(cols, c)
		in.TotalByteSize += c.MetaData.TotalUncompressedSize
	}
	if j != len(in.Columns) {
		return fmt.Errorf("the re-encoded row group has %d columns, more than the file's", len(in.Columns))
	}
	in.Columns = cols
	md.RowGroups[0] = in
	return s.addRowGroup(src, md, 0, nil, nil)
}

// pieces are byte slices one after another in one file, which
// addRowGroup reads as it reads a file.
type pieces struct {
	at  []int64
	b   [][]byte
	end int64 // of the last piece
}

// add appends b, which begins at offset at (the end of the last piece,
// or past it).
func (p *pieces) add(at int64, b []byte) {
	p.at, p.b, p.end = append(p.at, at), append(p.b, b), at+int64(len(b))
}

// each hands fn the n bytes from off, piece by piece.
func (p *pieces) each(off, n int64, fn func([]byte) error) error {
	if n == 0 {
		return nil
	}
	i, _ := slices.BinarySearch(p.at, off+1)
	for i--; n > 0; i++ {
		if i < 0 || i >= len(p.at) || off < p.at[i] || off >= p.at[i]+int64(len(p.b[i])) {
			return fmt.Errorf("%d bytes at %d outside what is held", n, off)
		}
		b := p.b[i][off-p.at[i]:]
		b = b[:min(int64(len(b)), n)]
		if err := fn(b); err != nil {
			return err
		}
		off += int64(len(b))
		n -= int64(len(b))
	}
	return nil
}

func (p *pieces) ReadAt(b []byte, off int64) (int, error) {
	k := 0
	err := p.each(off, int64(len(b)), func(src []byte) error {
		k += copy(b[k:], src)
		return nil
	})
	return k, err
}

// allColumns is 0, 1, …, n-1.
func allColumns(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// joinLast makes the columns of the last row group further columns of the
// one before it, which holds the same rows: the lineage columns encoded
// for a row group copied without them. md is the footer of the file the
// last row group came from; the output's schema takes the columns from it
// when it has not got them yet.
func (s *stitcher) joinLast(md *format.FileMetaData) error {
	n := len(s.groups)
	if n < 2 {
		return fmt.Errorf("%d row groups to join", n)
	}
	a, b := &s.groups[n-2], s.groups[n-1]
	if a.NumRows != b.NumRows {
		return fmt.Errorf("joining columns of %d rows to a row group of %d", b.NumRows, a.NumRows)
	}
	for _, i := range s.tailCols[n-1] {
		s.tailCols[n-2] = append(s.tailCols[n-2], len(a.Columns)+i)
	}
	a.Columns = append(a.Columns, b.Columns...)
	a.TotalByteSize += b.TotalByteSize
	a.TotalCompressedSize += b.TotalCompressedSize
	s.columnIndexes[n-2] = append(s.columnIndexes[n-2], s.columnIndexes[n-1]...)
	s.offsetIndexes[n-2] = append(s.offsetIndexes[n-2], s.offsetIndexes[n-1]...)
	s.groups, s.columnIndexes, s.offsetIndexes, s.tailCols = s.groups[:n-1], s.columnIndexes[:n-1], s.offsetIndexes[:n-1], s.tailCols[:n-1]
	s.rows -= b.NumRows
	// Columns are flat: the schema is its root and one element per column.
	if have := len(s.schema) - 1; have < len(a.Columns) {
		if have+len(md.Schema)-1 != len(a.Columns) {
			return fmt.Errorf("a schema of %d columns and one of %d for a row group of %d", have, len(md.Schema)-1, len(a.Columns))
		}
		s.schema = append(slices.Clone(s.schema), md.Schema[1:]...)
		s.schema[0].NumChildren = thrift.New(int32(len(a.Columns)))
		if len(s.orders) == have && len(md.ColumnOrders) == len(md.Schema)-1 {
			s.orders = append(slices.Clone(s.orders), md.ColumnOrders...)
		} else {
			s.orders = nil
		}
	}
	return nil
}

// addRowGroup adds row group r of the file src whose footer is md: its
// chunks copied one by one from src (their bytes written to h too when it
// is set), or, when deltas are given, already placed, column i deltas[i]
// bytes after where it is in src (in the output, or in the tail).
func (s *stitcher) addRowGroup(src io.ReaderAt, md *format.FileMetaData, r int, deltas []int64, h io.Writer) error {
	placed := deltas != nil
	if s.schema == nil {
		s.schema = md.Schema
		s.orders = md.ColumnOrders
	}
	in := &md.RowGroups[r]
	rg := format.RowGroup{
		Columns:        make([]format.ColumnChunk, len(in.Columns)),
		TotalByteSize:  in.TotalByteSize,
		NumRows:        in.NumRows,
		SortingColumns: in.SortingColumns,
		FileOffset:     s.w.n,
		Ordinal:        int16(len(s.groups)),
	}
	if placed && len(in.Columns) > 0 {
		rg.FileOffset = chunkStart(&in.Columns[0].MetaData) + deltas[0]
	}
	if len(s.groups) >= 1<<15-1 {
		return fmt.Errorf("more than %d row groups", 1<<15-1)
	}
	colIdx := make([][]byte, len(in.Columns))
	offIdx := make([]*format.OffsetIndex, len(in.Columns))
	for i := range in.Columns {
		c := in.Columns[i] // a copy: its offsets change below
		if c.FilePath != "" {
			return fmt.Errorf("column %v is in another file, %s", c.MetaData.PathInSchema, c.FilePath)
		}
		start := chunkStart(&c.MetaData)
		var delta int64
		if placed {
			delta = deltas[i]
		} else {
			delta = s.w.n - start
			if err := s.copyRange(s.w, src, start, c.MetaData.TotalCompressedSize, h); err != nil {
				return fmt.Errorf("copy column %v: %w", c.MetaData.PathInSchema, err)
			}
		}
		c.FileOffset = start + delta
		moveChunk(&c.MetaData, delta)
		// The deprecated min and max are signed-order statistics that
		// readers trust or not by the footer's created_by, which is no
		// longer their writer's; min_value and max_value stay.
		c.MetaData.Statistics.Min, c.MetaData.Statistics.Max = nil, nil
		if err := s.copyBloomFilter(src, &c.MetaData); err != nil {
			return fmt.Errorf("copy the bloom filter of column %v: %w", c.MetaData.PathInSchema, err)
		}
		if c.ColumnIndexOffset > 0 && c.ColumnIndexLength > 0 {
			b := make([]byte, c.ColumnIndexLength)
			if _, err := src.ReadAt(b, c.ColumnIndexOffset); err != nil {
				return fmt.Errorf("read the column index of %v: %w", c.MetaData.PathInSchema, err)
			}
			colIdx[i] = b
		}
		if c.OffsetIndexOffset > 0 && c.OffsetIndexLength > 0 {
			b := make([]byte, c.OffsetIndexLength)
			if _, err := src.ReadAt(b, c.OffsetIndexOffset); err != nil {
				return fmt.Errorf("read the offset index of %v: %w", c.MetaData.PathInSchema, err)
			}
			oi := new(format.OffsetIndex)
			if err := thrift.Unmarshal(new(thrift.CompactProtocol), b, oi); err != nil {
				return fmt.Errorf("decode the offset index of %v: %w", c.MetaData.PathInSchema, err)
			}
			moveOffsetIndex(oi, delta)
			offIdx[i] = oi
		}
		c.ColumnIndexOffset, c.ColumnIndexLength, c.OffsetIndexOffset, c.OffsetIndexLength = 0, 0, 0, 0
		rg.Columns[i] = c
		rg.TotalCompressedSize += c.MetaData.TotalCompressedSize
	}
	s.groups = append(s.groups, rg)
	s.columnIndexes = append(s.columnIndexes, colIdx)
	s.offsetIndexes = append(s.offsetIndexes, offIdx)
	s.tailCols = append(s.tailCols, nil)
	s.rows += rg.NumRows
	return nil
}

// moveChunk moves a chunk's page offsets delta bytes.
func moveChunk(md *format.ColumnMetaData, delta int64) {
	md.DataPageOffset += delta
	if md.DictionaryPageOffset > 0 {
		md.DictionaryPageOffset += delta
	}
	if md.IndexPageOffset > 0 {
		md.IndexPageOffset += delta
	}
}

// moveOffsetIndex moves an offset index's pages delta bytes.
func moveOffsetIndex(oi *format.OffsetIndex, delta int64) {
	if oi == nil {
		return
	}
	for p := range oi.PageLocations {
		oi.PageLocations[p].Offset += delta
	}
}

// copyBloomFilter copies a chunk's bloom filter right after the chunk and
// points md at it. A filter whose length the footer does not give (writers
// before parquet-format 2.10) is dropped rather than parsed: a reader
// without it reads the pages, and the merge's re-encoded row groups carry
// none either.
func (s *stitcher) copyBloomFilter(src io.ReaderAt, md *format.ColumnMetaData) error {
	off, n := md.BloomFilterOffset, md.BloomFilterLength
	md.BloomFilterOffset, md.BloomFilterLength = 0, 0
	if off <= 0 || n <= 0 {
		return nil
	}
	at := s.w.n
	if err := s.copyRange(s.w, src, off, int64(n), nil); err != nil {
		return err
	}
	md.BloomFilterOffset, md.BloomFilterLength = at, n
	return nil
}

// copyRange copies n bytes of src from off to dst (the output or the
// tail), and to h when it is set, in pieces of s.piece bytes read up to
// copyAhead at once and written in order. On object storage each piece is
// a ranged GET: with several in flight the copy waits for one round trip
// per copyAhead pieces, not per piece.
func (s *stitcher) copyRange(dst *countingWriter, src io.ReaderAt, off, n int64, h io.Writer) error {
	if p, ok := src.(*pieces); ok {
		// Held in memory: written as it is.
		return p.each(off, n, func(b []byte) error {
			if h != nil {
				h.Write(b)
			}
			_, err := dst.Write(b)
			return err
		})
	}
	pieces := int((n + s.piece - 1) / s.piece)
	done := make([]chan error, pieces)
	read := func(i int) {
		at := int64(i) * s.piece
		buf := s.slot(i % copyAhead)[:min(s.piece, n-at)]
		done[i] = make(chan error, 1)
		go func() { done[i] <- readFull(src, buf, off+at) }()
	}
	started := 0
	for ; started < min(pieces, copyAhead); started++ {
		read(started)
	}
	for i := 0; i < pieces; i++ {
		err := <-done[i]
		if err == nil {
			at := int64(i) * s.piece
			piece := s.slot(i % copyAhead)[:min(s.piece, n-at)]
			if h != nil {
				h.Write(piece)
			}
			_, err = dst.Write(piece)
		}
		if err != nil {
			for j := i + 1; j < started; j++ { // the buffers are reused
				<-done[j]
			}
			return err
		}
		if started < pieces {
			read(started)
			started++
		}
	}
	return nil
}

// Pieces of copyRange: 4 × 8 MiB in flight per output file.
const (
	copyPieceBytes = 8 << 20
	copyAhead      = 4
)

// slot is copy buffer i, allocated when first used.
func (s *stitcher) slot(i int) []byte {
	if s.bufs[i] == nil {
		s.bufs[i] = make([]byte, s.piece)
	}
	return s.bufs[i]
}

// readFull reads len(buf) bytes of src at off; an io.EOF that comes with
// all of them is no error.
func readFull(src io.ReaderAt, buf []byte, off int64) error {
	n, err := src.ReadAt(buf, off)
	if n == len(buf) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// close writes the page indexes and the footer, and returns the footer.
//
// Each kind of page index is written only when every column chunk has
// one: readers locate them from the first chunk's (parquet-go v0.32 reads
// none at all when that chunk has none, and then fails every seek), so a
// file stitched from files with and without them keeps none.
func (s *stitcher) close(createdBy string) (*format.FileMetaData, error) {
	proto := new(thrift.CompactProtocol)
	if at := s.w.n; s.tail.n > 0 {
		if _, err := s.w.Write(s.tailBuf.Bytes()); err != nil {
			return nil, err
		}
		for g, cols := range s.tailCols {
			for _, i := range cols {
				c := &s.groups[g].Columns[i]
				c.FileOffset += at
				moveChunk(&c.MetaData, at)
				moveOffsetIndex(s.offsetIndexes[g][i], at)
			}
		}
	}
	if !everyChunk(s.columnIndexes) {
		s.columnIndexes = nil
	}
	if !everyChunk(s.offsetIndexes) {
		s.offsetIndexes = nil
	}
	for g := range s.columnIndexes {
		for i, b := range s.columnIndexes[g] {
			if b == nil {
				continue
			}
			c := &s.groups[g].Columns[i]
			c.ColumnIndexOffset, c.ColumnIndexLength = s.w.n, int32(len(b))
			if _, err := s.w.Write(b); err != nil {
				return nil, err
			}
		}
	}
	for g := range s.offsetIndexes {
		for i, oi := range s.offsetIndexes[g] {
			if oi == nil {
				continue
			}
			b, err := thrift.Marshal(proto, oi)
			if err != nil {
				return nil, fmt.Errorf("encode an offset index: %w", err)
			}
			c := &s.groups[g].Columns[i]
			c.OffsetIndexOffset, c.OffsetIndexLength = s.w.n, int32(len(b))
			if _, err := s.w.Write(b); err != nil {
				return nil, err
			}
		}
	}
	md := &format.FileMetaData{
		Version:      2,
		Schema:       s.schema,
		NumRows:      s.rows,
		RowGroups:    s.groups,
		CreatedBy:    createdBy,
		ColumnOrders: s.orders,
	}
	b, err := thrift.Marshal(proto, md)
	if err != nil {
		return nil, fmt.Errorf("encode the footer: %w", err)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(b)))
	b = append(b, parquetMagic...)
	if _, err := s.w.Write(b); err != nil {
		return nil, err
	}
	return md, nil
}

// everyChunk reports whether every row group has an index for every
// column chunk.
func everyChunk[T []byte | *format.OffsetIndex](groups [][]T) bool {
	for _, g := range groups {
		for _, x := range g {
			if x == nil {
				return false
			}
		}
	}
	return true
}

// readFooter decodes the footer of the Parquet file b.
func readFooter(b []byte) (*format.FileMetaData, error) {
	n := len(b)
	if n < 12 || string(b[n-4:]) != parquetMagic {
		return nil, fmt.Errorf("not a Parquet file")
	}
	size := int(binary.LittleEndian.Uint32(b[n-8:]))
	if size > n-12 {
		return nil, fmt.Errorf("footer of %d bytes in a file of %d", size, n)
	}
	md := new(format.FileMetaData)
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), b[n-8-size:n-8], md); err != nil {
		return nil, err
	}
	return md, nil
}
