package merge

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/cespare/xxhash/v2"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/icekeeper/icekeeper/internal/rowdigest"
)

// rowProof is what an output proves of its rows (Merger.CheckRows): the
// row digest of the re-encoded rows as they were decoded from the inputs,
// and the bytes of the row groups it copied as they were read; prove then
// reads the written file back from storage and must find the same.
//
// The inputs' rows are hashed where the merge decodes them anyway, so the
// read side costs hashing alone; the written side decodes the re-encoded
// row groups of the output once more, but for the pages they kept as they
// were from inputs read whole, whose bytes are compared instead
// (provenPage). Copied row groups are never decoded: their column chunks'
// bytes are hashed on both sides.
type rowProof struct {
	ids    []int // field ID of each table column
	read   rowdigest.Digest
	copied []copiedGroup
	in     rowdigest.Digest // of the copied row groups' bytes, as read
	proven []provenGroup
	lanes  [2]laneHash
}

// provenPage is an input's page that a re-encoded row group kept as it
// was (ownChunk.keepRaw, or a dictionary kept as a data page) and that
// prove checks by its bytes instead of decoding it again. Only a page of
// an input read whole is: parquet-go decoded it, and the merge hashed its
// values, from the very buffer whose bytes were written, and the same
// bytes decode to the same values. Its values' hashes go into the row
// group's sums as they are hashed on the read side, at the rows the page
// holds in the output.
type provenPage struct {
	page        int    // of its column chunk
	first, rows int64  // in the row group
	hash        uint64 // of its header and body as written
}

// provenGroup is a re-encoded row group with pages proven by their bytes:
// its ordinal in the output, those pages by column, and per row the sum
// of their values' hashes.
type provenGroup struct {
	ordinal int
	pages   [][]provenPage
	sums    []uint64
}

// copiedGroup is a row group copied byte for byte: where it is in the
// output, how many of its columns came from the input, its rows and the
// hash of those columns' chunk bytes.
//
// A row group the storage copied (sampled) is hashed by its sample
// (sampleRange) on both sides: its bytes never pass through icekeeper,
// and reading them back would undo what the copy saved. The sample holds
// the range's length and its first and last bytes, so that a range
// copied from the wrong place or to the wrong offset reads back
// otherwise; the bytes between are the storage's own copy, as trusted as
// any object it stores, and their pages are still checked by the readers
// that decode them.
type copiedGroup struct {
	ordinal, cols int
	// inPlace of the cols are one range where the row group is; the
	// others are in the tail (stitcher.tail) and hashed by their bytes.
	inPlace int
	rows    int64
	hash    uint64
	sampled bool
}

// sampleBytes is how much of each end of a range the storage copied is
// hashed, on each side.
const sampleBytes = 16 << 10

// sampleRange writes to h the sample of n bytes of src from off: n, then
// the first and the last sampleBytes (the range whole when shorter).
func sampleRange(h io.Writer, src io.ReaderAt, off, n int64) error {
	var size [8]byte
	binary.LittleEndian.PutUint64(size[:], uint64(n))
	h.Write(size[:])
	if n <= 2*sampleBytes {
		b := make([]byte, n)
		if err := readFull(src, b, off); err != nil {
			return err
		}
		h.Write(b)
		return nil
	}
	b := make([]byte, sampleBytes)
	for _, at := range []int64{off, off + n - sampleBytes} {
		if err := readFull(src, b, at); err != nil {
			return err
		}
		h.Write(b)
	}
	return nil
}

// laneHash is one lane's part of the row hashes of the row group being
// re-encoded: per row, the sum of the hashes of its values in the lane's
// columns. Lanes sum into the row hash once both are done.
type laneHash struct {
	acc []uint64
	// kept sums, per row of the open re-encoded row group of the output,
	// the hashes of the values of the lane's pages proven by their bytes
	// (provenPage); typed says values holds the hashes of the page hashed
	// last (page hashed it from its typed data).
	kept  []uint64
	typed bool
	// values holds a page's value hashes before they are added to their
	// rows; dict the hashes of the entries of the dictionary of the
	// column chunk being hashed (see page).
	values []uint64
	dict   struct {
		of     parquet.Dictionary
		hashes []uint64
	}
}

func newRowProof(ids []int) *rowProof { return &rowProof{ids: ids} }

// begin readies the lanes for a row group of n rows.
func (p *rowProof) begin(n int64) {
	for i := range p.lanes {
		l := &p.lanes[i]
		if int64(cap(l.acc)) < n {
			l.acc = make([]uint64, n) // zeroed already
			continue
		}
		l.acc = l.acc[:n]
		clear(l.acc)
	}
}

// fold adds the rows of the row group the lanes hashed to d.
func (p *rowProof) fold(d *rowdigest.Digest) {
	a, b := p.lanes[0].acc, p.lanes[1].acc
	for i := range a {
		d.Add(rowdigest.Fmix64(a[i] + b[i]))
	}
}

// add hashes a batch of column id's values, the rows from row on, into
// the lane's sums. For the merge path's types (boundKinds) Iceberg's
// single-value serialization is the Parquet physical value, little-endian.
// It is page's fallback, for the kinds typedHashes leaves out.
func (l *laneHash) add(id int, row int, values []parquet.Value) {
	seed := rowdigest.Seed(id)
	acc := l.acc[row : row+len(values)]
	for i, v := range values {
		var h uint64
		switch v.Kind() {
		case parquet.Boolean:
			var b [1]byte
			if v.Boolean() {
				b[0] = 1
			}
			h = rowdigest.XXH64(seed, b[:])
		case parquet.Int32:
			h = rowdigest.XXH64Uint32(seed, uint32(v.Int32()))
		case parquet.Int64:
			h = rowdigest.XXH64Uint64(seed, uint64(v.Int64()))
		case parquet.Float:
			h = rowdigest.XXH64Uint32(seed, math.Float32bits(v.Float()))
		case parquet.Double:
			h = rowdigest.XXH64Uint64(seed, math.Float64bits(v.Double()))
		case parquet.ByteArray, parquet.FixedLenByteArray:
			h = rowdigest.XXH64(seed, v.ByteArray())
		default: // null
			continue
		}
		acc[i] += h
	}
}

// newChunk forgets the dictionary of the column chunk hashed before: a
// column chunk has one dictionary, and parquet-go may reuse one for the
// next chunk.
func (l *laneHash) newChunk() { l.dict.of, l.dict.hashes = nil, l.dict.hashes[:0] }

// page hashes the values of page p of column id, the rows from row on,
// into the lane's sums: from the page's typed data, without a
// parquet.Value per value, and a dictionary-encoded page by the hashes of
// its dictionary's entries, computed once per column chunk. Kinds
// typedHashes leaves out are read through values and hashed by add.
// Columns are flat: each level is a row, 0 for a null.
func (l *laneHash) page(id, row int, p parquet.Page, values []parquet.Value) error {
	l.typed = false
	seed := rowdigest.Seed(id)
	vh, ok := l.values[:0], true
	if d := p.Dictionary(); d != nil {
		if l.dict.of != d {
			l.dict.hashes, ok = typedHashes(l.dict.hashes[:0], seed, d.Page().Data())
			if !ok {
				return fmt.Errorf("column %d: dictionary of kind %v", id, d.Type().Kind())
			}
			l.dict.of = d
		}
		dh := l.dict.hashes
		ixs := p.Data()
		for _, ix := range ixs.Int32() {
			if uint32(ix) >= uint32(len(dh)) {
				return fmt.Errorf("column %d: dictionary index %d of %d entries", id, ix, len(dh))
			}
			vh = append(vh, dh[ix])
		}
	} else if vh, ok = typedHashes(vh, seed, p.Data()); !ok {
		return pageValues(p, values, func(batch []parquet.Value) error {
			l.add(id, row, batch)
			row += len(batch)
			return nil
		})
	}
	l.values = vh
	if err := spread(l.acc, row, vh, p.DefinitionLevels()); err != nil {
		return fmt.Errorf("column %d: %w", id, err)
	}
	l.typed = true
	return nil
}

// keep adds the value hashes of page p, the page the lane hashed last, to
// the kept sums from row at of the output's row group on, and reports
// whether it could (page hashed p from its typed data).
func (l *laneHash) keep(at int64, p parquet.Page) bool {
	if !l.typed {
		return false
	}
	l.growKept(int(at + p.NumRows()))
	return spread(l.kept, int(at), l.values, p.DefinitionLevels()) == nil
}

// keepDictionary adds, from row at of the output's row group on, the
// hashes of the entries of the dictionary of the column chunk the lane
// hashed last, n of them, in order, one per row levels mark present: the
// values of a dictionary kept as a data page (ownChunk.copyInto).
func (l *laneHash) keepDictionary(at int64, levels []byte, n int) bool {
	if l.dict.of == nil || len(l.dict.hashes) != n {
		return false
	}
	l.growKept(int(at) + len(levels))
	return spread(l.kept, int(at), l.dict.hashes, levels) == nil
}

// growKept makes the kept sums at least n rows long, doubling them rather
// than growing them by the quarter append grows a large slice by: a row
// group's sums grow a page at a time to millions.
func (l *laneHash) growKept(n int) {
	if len(l.kept) >= n {
		return
	}
	if n > cap(l.kept) {
		grown := make([]uint64, len(l.kept), max(n, 2*cap(l.kept)))
		copy(grown, l.kept)
		l.kept = grown
	}
	k := len(l.kept)
	l.kept = l.kept[:n]
	clear(l.kept[k:])
}

// spread adds value hashes vh to acc from row on, one per row that
// levels mark present (every row when levels is nil).
func spread(acc []uint64, row int, vh []uint64, levels []byte) error {
	n := len(levels)
	if levels == nil {
		n = len(vh)
	}
	if row+n > len(acc) {
		return fmt.Errorf("%d rows past the row group's %d", row+n-len(acc), len(acc))
	}
	acc = acc[row : row+n]
	if levels == nil {
		for i, h := range vh {
			acc[i] += h
		}
		return nil
	}
	j := 0
	for i, lv := range levels {
		if lv != 0 {
			if j == len(vh) {
				return fmt.Errorf("a page's levels hold more values than its %d", len(vh))
			}
			acc[i] += vh[j]
			j++
		}
	}
	if j != len(vh) {
		return fmt.Errorf("a page holds %d values for %d levels present", len(vh), j)
	}
	return nil
}

// typedHashes appends to dst the hash of each of data's values, as add
// hashes them, and reports false for the kinds it leaves to add
// (booleans, whose pages may start inside a byte, and INT96, which the
// merge path does not take).
func typedHashes(dst []uint64, seed uint64, data encoding.Values) ([]uint64, bool) {
	switch data.Kind() {
	case encoding.Int32:
		for _, v := range data.Uint32() {
			dst = append(dst, rowdigest.XXH64Uint32(seed, v))
		}
	case encoding.Int64:
		for _, v := range data.Uint64() {
			dst = append(dst, rowdigest.XXH64Uint64(seed, v))
		}
	case encoding.Float:
		for _, v := range data.Float() {
			dst = append(dst, rowdigest.XXH64Uint32(seed, math.Float32bits(v)))
		}
	case encoding.Double:
		for _, v := range data.Double() {
			dst = append(dst, rowdigest.XXH64Uint64(seed, math.Float64bits(v)))
		}
	case encoding.ByteArray:
		b, offsets := data.ByteArray()
		for i := 1; i < len(offsets); i++ {
			dst = append(dst, rowdigest.XXH64(seed, b[offsets[i-1]:offsets[i]]))
		}
	case encoding.FixedLenByteArray:
		b, size := data.FixedLenByteArray()
		if size <= 0 {
			return dst, false
		}
		for ; len(b) >= size; b = b[size:] {
			dst = append(dst, rowdigest.XXH64(seed, b[:size]))
		}
	default:
		return dst, false
	}
	return dst, true
}

// prove reads the output in (openOutput: the bytes the store acknowledged,
// or the object read back from storage as the merge reads its inputs) and
// checks that its re-encoded row groups hold the rows the inputs' did and
// its copied row groups the bytes that were read. It returns the output's
// claim.
func (p *rowProof) prove(in openedFile) (rowdigest.Claim, error) {
	claim := rowdigest.Claim{Read: p.read}
	path := in.df.FilePath()
	defer in.close()
	if errors.Is(in.err, errRowCount) {
		return claim, fmt.Errorf("%w: read back: %v", rowdigest.ErrRowsDiffer, in.err)
	}
	if in.err != nil {
		return claim, fmt.Errorf("read back: %w", in.err)
	}
	pf := in.pf
	copiedAt := make(map[int]copiedGroup, len(p.copied))
	for _, g := range p.copied {
		copiedAt[g.ordinal] = g
	}
	provenAt := make(map[int]*provenGroup, len(p.proven))
	for i := range p.proven {
		provenAt[p.proven[i].ordinal] = &p.proven[i]
	}
	md := pf.Metadata()
	values := make([]parquet.Value, writeBatch)
	buf := make([]byte, 1<<20)
	xx := xxhash.New()
	for r, rg := range pf.RowGroups() {
		if g, ok := copiedAt[r]; ok {
			xx.Reset()
			if err := p.hashCopied(xx, in, md, r, g, buf); err != nil {
				return claim, fmt.Errorf("read back %s: row group %d: %w", path, r, err)
			}
			if h := xx.Sum64(); h != g.hash || rg.NumRows() != g.rows {
				return claim, fmt.Errorf("%w: %s: row group %d, copied byte for byte, reads back other bytes than were copied", rowdigest.ErrRowsDiffer, path, r)
			}
			claim.CopiedRows += g.rows
			claim.Copied.Add(g.hash)
			continue
		}
		p.begin(rg.NumRows())
		l := &p.lanes[0]
		g := provenAt[r]
		if g != nil {
			if int64(len(g.sums)) > rg.NumRows() {
				return claim, fmt.Errorf("%w: %s: row group %d holds %d rows, fewer than its kept pages' %d", rowdigest.ErrRowsDiffer, path, r, rg.NumRows(), len(g.sums))
			}
			copy(l.acc, g.sums)
		}
		chunks := rg.ColumnChunks()
		for c, id := range p.ids {
			row := 0
			l.newChunk()
			var err error
			if g != nil && c < len(g.pages) && len(g.pages[c]) > 0 {
				err = l.proveKept(xx, in.body, id, chunks[c], &md.RowGroups[r].Columns[c].MetaData, g.pages[c], values, buf)
			} else {
				err = eachPage(chunks[c], func(pg parquet.Page) error {
					err := l.page(id, row, pg, values)
					row += int(pg.NumRows())
					return err
				})
			}
			if err != nil {
				return claim, fmt.Errorf("read back %s: row group %d: %w", path, r, err)
			}
		}
		p.fold(&claim.Written)
	}
	if claim.Read != claim.Written || claim.Copied != p.in {
		return claim, fmt.Errorf("%w: %s: read %s, wrote %s", rowdigest.ErrRowsDiffer, path, claim.Read, claim.Written)
	}
	return claim, nil
}

// proveKept hashes the column chunk cc (metadata cm) of the output, a
// column of id with pages proven by their bytes (kept, in page order),
// into the lane's sums: it walks the chunk's pages as its offset index
// lists them, checking the index against the pages' headers (a reader
// that ignores the index reads the same pages), compares each kept
// page's bytes with those written, and decodes the others, through the
// index, to hash their values.
func (l *laneHash) proveKept(xx *xxhash.Digest, src io.ReaderAt, id int, cc parquet.ColumnChunk, cm *format.ColumnMetaData, kept []provenPage, values []parquet.Value, buf []byte) error {
	index, err := cc.OffsetIndex()
	if err != nil {
		return fmt.Errorf("column %d: the offset index: %w", id, err)
	}
	pages := cc.Pages()
	defer pages.Close()
	at, end := chunkStart(cm), chunkStart(cm)+cm.TotalCompressedSize
	var row int64
	for i := range index.NumPages() {
		off, size := index.Offset(i), index.CompressedPageSize(i)
		if off != at || index.FirstRowIndex(i) != row || size <= 0 || off+size > end {
			return fmt.Errorf("%w: column %d: the offset index's page %d (offset %d, %d bytes, row %d) is not the chunk's next page (offset %d, row %d)", rowdigest.ErrRowsDiffer, id, i, off, size, index.FirstRowIndex(i), at, row)
		}
		h, headerLen, err := readPageHeader(src, off, size, buf)
		if err != nil {
			return fmt.Errorf("column %d: page %d: %w", id, i, err)
		}
		rows, ok := flatPageRows(&h)
		if !ok || int64(headerLen)+int64(h.CompressedPageSize) != size {
			return fmt.Errorf("%w: column %d: page %d's header (%d bytes, a body of %d) is not the offset index's %d bytes", rowdigest.ErrRowsDiffer, id, i, headerLen, h.CompressedPageSize, size)
		}
		if len(kept) > 0 && kept[0].page == i {
			k := kept[0]
			kept = kept[1:]
			xx.Reset()
			if err := hashRange(xx, src, off, size, buf); err != nil {
				return err
			}
			if k.first != row || k.rows != rows || xx.Sum64() != k.hash {
				return fmt.Errorf("%w: column %d: page %d, kept as it was read, reads back other bytes or rows than were written", rowdigest.ErrRowsDiffer, id, i)
			}
		} else {
			if err := pages.SeekToRow(row); err != nil {
				return fmt.Errorf("column %d: page %d: %w", id, i, err)
			}
			pg, err := pages.ReadPage()
			if err != nil {
				return fmt.Errorf("column %d: page %d: %w", id, i, err)
			}
			if pg.NumRows() != rows {
				parquet.Release(pg)
				return fmt.Errorf("%w: column %d: page %d reads %d rows, its header says %d", rowdigest.ErrRowsDiffer, id, i, pg.NumRows(), rows)
			}
			err = l.page(id, int(row), pg, values)
			parquet.Release(pg)
			if err != nil {
				return err
			}
		}
		at += size
		row += rows
	}
	if len(kept) > 0 || at != end || row != int64(len(l.acc)) {
		return fmt.Errorf("%w: column %d: the pages end at offset %d, row %d, the chunk at %d, row %d, %d kept pages not found", rowdigest.ErrRowsDiffer, id, at, row, end, len(l.acc), len(kept))
	}
	return nil
}

// readPageHeader reads the header of the page of size bytes at off of
// src, through buf, and returns it with its length.
func readPageHeader(src io.ReaderAt, off, size int64, buf []byte) (format.PageHeader, int, error) {
	var h format.PageHeader
	b := buf[:min(int64(len(buf)), size, pageHeaderBytes)]
	if err := readFull(src, b, off); err != nil {
		return h, 0, err
	}
	r := bytes.NewReader(b)
	if err := thrift.NewDecoder(new(thrift.CompactProtocol).NewReader(r)).Decode(&h); err != nil {
		return h, 0, fmt.Errorf("%w: a page header: %v", rowdigest.ErrRowsDiffer, err)
	}
	return h, len(b) - r.Len(), nil
}

// pageHeaderBytes bounds a page header of the output: without statistics
// (ownChunk writes none, and drops a kept page's) it is a few dozen bytes.
const pageHeaderBytes = 4 << 10

// flatPageRows is how many rows data page h holds of a flat column.
func flatPageRows(h *format.PageHeader) (int64, bool) {
	if v, ok := h.DataPageHeaderV2.Get(); ok && h.Type == format.DataPageV2 {
		return int64(v.NumRows), v.NumRows >= 0
	}
	if v, ok := h.DataPageHeader.Get(); ok && h.Type == format.DataPage {
		return int64(v.NumValues), v.NumValues >= 0
	}
	return 0, false
}

// reencoded records the proven pages of the re-encoded row group just
// written as the output's ordinal-th, from its columns own, and readies
// the lanes for the next.
func (p *rowProof) reencoded(ordinal int, own []*ownChunk, rows int64) {
	g := provenGroup{ordinal: ordinal, pages: make([][]provenPage, len(own))}
	found := false
	for c, oc := range own {
		if oc != nil && len(oc.proven) > 0 {
			g.pages[c] = slices.Clone(oc.proven)
			found = true
		}
	}
	if found {
		// The sums end at the last row of a kept page: prove reports
		// them longer than the row group.
		long, short := &p.lanes[0].kept, &p.lanes[1].kept
		if len(*long) < len(*short) {
			long, short = short, long
		}
		for r, h := range *short {
			(*long)[r] += h
		}
		g.sums, *long = *long, nil
		p.proven = append(p.proven, g)
	}
	for i := range p.lanes {
		p.lanes[i].kept = p.lanes[i].kept[:0]
	}
}

// hashCopied hashes copied row group r of the output as the merge hashed
// it: its first g.cols column chunks' bytes, or, when the storage copied
// them, the sample of the range of the first g.inPlace, read directly
// rather than through the read-ahead (which would fetch the pieces around
// it), and the bytes of the rest.
func (p *rowProof) hashCopied(xx *xxhash.Digest, out openedFile, md *format.FileMetaData, r int, g copiedGroup, buf []byte) error {
	cols := md.RowGroups[r].Columns[:g.cols]
	if !g.sampled {
		for c := range cols {
			cm := &cols[c].MetaData
			if err := hashRange(xx, out.pf, chunkStart(cm), cm.TotalCompressedSize, buf); err != nil {
				return err
			}
		}
		return nil
	}
	start, n, ok := contiguous(cols[:g.inPlace])
	if !ok {
		return fmt.Errorf("%w: the row group's copied column chunks are not one range", rowdigest.ErrRowsDiffer)
	}
	src := out.src.r
	if src == nil {
		src = out.pf
	}
	if err := sampleRange(xx, src, start, n); err != nil {
		return err
	}
	for c := g.inPlace; c < len(cols); c++ {
		cm := &cols[c].MetaData
		if err := hashRange(xx, out.pf, chunkStart(cm), cm.TotalCompressedSize, buf); err != nil {
			return err
		}
	}
	return nil
}

// hashRange hashes n bytes of src from off, through buf.
func hashRange(h *xxhash.Digest, src io.ReaderAt, off, n int64, buf []byte) error {
	for n > 0 {
		b := buf[:min(int64(len(buf)), n)]
		if err := readFull(src, b, off); err != nil {
			return err
		}
		h.Write(b)
		off += int64(len(b))
		n -= int64(len(b))
	}
	return nil
}
