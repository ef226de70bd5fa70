package merge

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"

	"github.com/cespare/xxhash/v2"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/encoding/rle"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// ownChunk is a column chunk of a re-encoded row group that the merge
// writes itself, not through parquet-go's writer: PLAIN data pages, so
// that a page whose values are PLAIN-encoded and compressed with the
// table's codec already goes into the output as it is, neither
// decompressed for re-encoding nor compressed again. Such pages hold most
// of a small-files table's bytes: its columns of distinct values (ids,
// keys, free text), which writers leave PLAIN, or, in a small file, put
// in a dictionary of all its distinct values (whose page is their PLAIN
// encoding), and which a large output cannot keep a dictionary for.
// The values of other pages, and of pages too small to be worth keeping
// (worthKeeping), are encoded into v2 pages of the table's page size.
//
// Pages kept as they were keep their writer's compression level, page
// size and page version, as copied row groups do.
type ownChunk struct {
	meta      format.ColumnMetaData // type, path and codec
	kind      parquet.Kind          // Int32, Int64, Float, Double or ByteArray
	compare   func(a, b []byte) int
	optional  bool
	codec     compress.Codec
	pageBytes int

	pages segments // the chunk so far, page headers included
	// The open page: its values PLAIN-encoded, a level per row (1 for a
	// value, 0 for a null), its nulls and bounds.
	values      []byte
	levels      []byte
	nulls       int
	pageBounds  bounds
	zbuf, lbuf  []byte
	rows        int64
	nullCount   int64
	rawSize     int64 // uncompressed, headers included
	chunkBounds bounds
	colIndex    format.ColumnIndex
	offIndex    format.OffsetIndex
	kept        int // pages kept as they were (verbatim)
	encoded     int // pages encoded here
	v1          int // pages of version 1 (kept), of all pages
	// For copyInto: the levels and bounds of a page being kept, and the
	// bytes of the input chunk, split into pages.
	keptLevels []byte
	keptBounds bounds
	raw        []rawPage
	// proven are the pages kept that the row check proves by their bytes.
	proven []provenPage
	// dict is set for a column written dictionary-encoded (ownDict).
	dict *ownDict
}

// ownKind reports whether ownChunk writes columns of physical type k:
// those whose Iceberg types (boundKinds) order their values as their
// compare does on the PLAIN bytes, which the statistics are. Floating
// point values are ordered as Parquet's statistics ask, NaN left out
// (floatBounds).
func ownKind(k parquet.Kind) bool {
	switch k {
	case parquet.Int32, parquet.Int64, parquet.Float, parquet.Double, parquet.ByteArray:
		return true
	}
	return false
}

// columnIndexBytes bounds a byte array's column index entry, as
// parquet-go's default ColumnIndexSizeLimit does.
const columnIndexBytes = 16

func newOwnChunk(cm *format.ColumnMetaData, kind boundKind, optional bool, set mergeSettings) *ownChunk {
	return &ownChunk{
		meta: format.ColumnMetaData{
			Type:         cm.Type,
			PathInSchema: slices.Clone(cm.PathInSchema),
			Codec:        set.codec.CompressionCodec(),
		},
		kind:      kind.kind,
		compare:   kind.compare,
		optional:  optional,
		codec:     set.codec,
		pageBytes: set.pageBytes,
	}
}

// bounds are the least and greatest of a set of values, PLAIN-encoded
// (integers little-endian, byte arrays as they are).
type bounds struct {
	ok     bool
	lo, hi []byte
}

func (b *bounds) add(v []byte, cmp func(a, b []byte) int) {
	if !b.ok {
		b.ok = true
		b.lo, b.hi = append(b.lo[:0], v...), append(b.hi[:0], v...)
		// A nil bound would be written as none.
		if b.lo == nil {
			b.lo, b.hi = []byte{}, []byte{}
		}
		return
	}
	if cmp(v, b.lo) < 0 {
		b.lo = append(b.lo[:0], v...)
	}
	if cmp(v, b.hi) > 0 {
		b.hi = append(b.hi[:0], v...)
	}
}

func (b *bounds) reset() { b.ok, b.lo, b.hi = false, b.lo[:0], b.hi[:0] }

// addValues appends a batch of the column's values to the open page, and
// closes the page once it holds the table's page size.
func (c *ownChunk) addValues(batch []parquet.Value) error {
	for _, v := range batch {
		if v.IsNull() {
			if !c.optional {
				return fmt.Errorf("column %v: a null in a required column", c.meta.PathInSchema)
			}
			c.levels = append(c.levels, 0)
			c.nulls++
			continue
		}
		if v.Kind() != c.kind {
			return fmt.Errorf("column %v: a %v value in a %v column", c.meta.PathInSchema, v.Kind(), c.kind)
		}
		c.levels = append(c.levels, 1)
		start := len(c.values)
		switch c.kind {
		case parquet.Int32:
			c.values = binary.LittleEndian.AppendUint32(c.values, uint32(v.Int32()))
		case parquet.Int64:
			c.values = binary.LittleEndian.AppendUint64(c.values, uint64(v.Int64()))
		case parquet.Float:
			c.values = putFloat(c.values, v.Float())
			floatBounds(&c.pageBounds, v.Float(), v.Float(), c.compare, putFloat)
			continue
		case parquet.Double:
			c.values = putDouble(c.values, v.Double())
			floatBounds(&c.pageBounds, v.Double(), v.Double(), c.compare, putDouble)
			continue
		default:
			b := v.ByteArray()
			c.values = binary.LittleEndian.AppendUint32(c.values, uint32(len(b)))
			start = len(c.values)
			c.values = append(c.values, b...)
		}
		c.pageBounds.add(c.values[start:], c.compare)
	}
	if len(c.values)+len(c.levels)/8 >= c.pageBytes {
		return c.flushPage()
	}
	return nil
}

// addPage appends the values of input page p to the open page, as
// addValues does, from the page's typed data rather than one
// parquet.Value at a time; values is addValues' batch for the kinds it
// leaves to it.
func (c *ownChunk) addPage(p parquet.Page, values []parquet.Value) error {
	data := p.Data()
	var ixs []int32
	if d := p.Dictionary(); d != nil {
		ixs, data = data.Int32(), d.Page().Data()
	}
	n, ok, err := c.appendPlain(data, ixs)
	if err != nil {
		return err
	}
	if !ok {
		return pageValues(p, values, c.addValues)
	}
	if err := c.appendLevels(p, n); err != nil {
		return err
	}
	if len(c.values)+len(c.levels)/8 >= c.pageBytes {
		return c.flushPage()
	}
	return nil
}

// appendLevels appends page p's levels, a level per row (1 for a value,
// 0 for a null), to the open page, to which its n values went.
func (c *ownChunk) appendLevels(p parquet.Page, n int) error {
	levels := p.DefinitionLevels()
	if levels == nil {
		for range n {
			c.levels = append(c.levels, 1)
		}
	} else {
		present := 0
		for _, lv := range levels {
			if lv != 0 {
				present++
				c.levels = append(c.levels, 1)
			} else {
				c.levels = append(c.levels, 0)
			}
		}
		if present != n {
			return fmt.Errorf("column %v: a page holds %d values for %d levels present", c.meta.PathInSchema, n, present)
		}
		if nulls := len(levels) - n; nulls > 0 {
			if !c.optional {
				return fmt.Errorf("column %v: a null in a required column", c.meta.PathInSchema)
			}
			c.nulls += nulls
		}
	}
	return nil
}

// appendPlain appends data's values PLAIN-encoded to the open page, with
// their bounds, in the order of ixs when it is set (indexes into data, a
// dictionary's entries), and returns how many it appended; false, with
// nothing appended, when data is not of the column's kind.
func (c *ownChunk) appendPlain(data encoding.Values, ixs []int32) (int, bool, error) {
	var n int
	switch {
	case c.kind == parquet.Int32 && data.Kind() == encoding.Int32:
		n = len(data.Int32())
	case c.kind == parquet.Int64 && data.Kind() == encoding.Int64:
		n = len(data.Int64())
	case c.kind == parquet.Float && data.Kind() == encoding.Float:
		n = len(data.Float())
	case c.kind == parquet.Double && data.Kind() == encoding.Double:
		n = len(data.Double())
	case c.kind == parquet.ByteArray && data.Kind() == encoding.ByteArray:
		_, offsets := data.ByteArray()
		n = max(len(offsets)-1, 0)
	default:
		return 0, false, nil
	}
	if ixs != nil {
		for _, ix := range ixs {
			if uint32(ix) >= uint32(n) {
				return 0, false, fmt.Errorf("column %v: dictionary index %d of %d entries", c.meta.PathInSchema, ix, n)
			}
		}
		n = len(ixs)
	}
	at := func(i int) int {
		if ixs != nil {
			return int(ixs[i])
		}
		return i
	}
	if n == 0 {
		return 0, true, nil
	}
	need := 0 // a dictionary's entries: unknown until appended
	switch c.kind {
	case parquet.Int32, parquet.Float:
		need = 4 * n
	case parquet.Int64, parquet.Double:
		need = 8 * n
	default:
		if b, _ := data.ByteArray(); ixs == nil {
			need = 4*n + len(b)
		}
	}
	c.reserve(need)
	switch c.kind {
	case parquet.Int32:
		c.values = appendFixed(c.values, data.Int32(), n, at, &c.pageBounds, c.compare,
			func(b []byte, x int32) []byte { return binary.LittleEndian.AppendUint32(b, uint32(x)) })
	case parquet.Int64:
		c.values = appendFixed(c.values, data.Int64(), n, at, &c.pageBounds, c.compare,
			func(b []byte, x int64) []byte { return binary.LittleEndian.AppendUint64(b, uint64(x)) })
	case parquet.Float:
		c.values = appendFloats(c.values, data.Float(), n, at, &c.pageBounds, c.compare, putFloat)
	case parquet.Double:
		c.values = appendFloats(c.values, data.Double(), n, at, &c.pageBounds, c.compare, putDouble)
	default:
		b, offsets := data.ByteArray()
		for i := range n {
			j := at(i)
			c.values = binary.LittleEndian.AppendUint32(c.values, offsets[j+1]-offsets[j])
			c.values = append(c.values, b[offsets[j]:offsets[j+1]]...)
		}
		lo, hi := byteArrayRange(b, offsets, n, at)
		c.pageBounds.add(lo, c.compare)
		c.pageBounds.add(hi, c.compare)
	}
	return n, true, nil
}

// maxPageReserve bounds what reserve sets aside for an open page at
// once: a table's page size may be far larger than its pages come out.
const maxPageReserve = 4 << 20

// reserve makes room for n more bytes in the open page, and for the
// table's page size (up to maxPageReserve) at the first page: appending
// page after small page to a buffer that grows by a quarter at a time
// copied a page's bytes several times over.
func (c *ownChunk) reserve(n int) {
	if cap(c.values) == 0 {
		n = max(n, min(c.pageBytes, maxPageReserve))
	}
	c.values = slices.Grow(c.values, n)
}

// appendFixed appends n of v's values, the i-th being v[at(i)], to dst
// with put, and adds the least and the greatest to b.
func appendFixed[T int32 | int64](dst []byte, v []T, n int, at func(int) int, b *bounds, cmp func(a, b []byte) int, put func([]byte, T) []byte) []byte {
	lo, hi := v[at(0)], v[at(0)]
	for i := range n {
		x := v[at(i)]
		lo, hi = min(lo, x), max(hi, x)
		dst = put(dst, x)
	}
	b.add(put(nil, lo), cmp)
	b.add(put(nil, hi), cmp)
	return dst
}

// appendFloats is appendFixed for floating point values, whose bounds
// leave NaN out (floatBounds).
func appendFloats[T float32 | float64](dst []byte, v []T, n int, at func(int) int, b *bounds, cmp func(a, b []byte) int, put func([]byte, T) []byte) []byte {
	for i := range n {
		dst = put(dst, v[at(i)])
	}
	if lo, hi, ok := floatRange(v, n, at); ok {
		floatBounds(b, lo, hi, cmp, put)
	}
	return dst
}

// floatRange is the least and the greatest of n of v's values, the i-th
// being v[at(i)], NaN left out; false when there are none but NaN.
func floatRange[T float32 | float64](v []T, n int, at func(int) int) (lo, hi T, ok bool) {
	for i := range n {
		switch x := v[at(i)]; {
		case x != x: // NaN
		case !ok:
			lo, hi, ok = x, x, true
		default:
			// min and max order -0.0 before 0.0.
			lo, hi = min(lo, x), max(hi, x)
		}
	}
	return lo, hi, ok
}

// floatBounds adds lo and hi to b as the Parquet format asks writers of
// floating point statistics to: NaN is never a bound, a least value of
// zero is written -0.0 and a greatest one 0.0, so that a reader that
// orders -0.0 before 0.0 prunes neither.
func floatBounds[T float32 | float64](b *bounds, lo, hi T, cmp func(a, b []byte) int, put func([]byte, T) []byte) {
	if lo != lo || hi != hi {
		return
	}
	if lo == 0 {
		lo = T(math.Copysign(0, -1))
	}
	if hi == 0 {
		hi = 0
	}
	var buf [8]byte
	b.add(put(buf[:0], lo), cmp)
	b.add(put(buf[:0], hi), cmp)
}

// nanBound is NaN as a bound of a float or double column.
func nanBound(k parquet.Kind) []byte {
	if k == parquet.Float {
		return putFloat(nil, float32(math.NaN()))
	}
	return putDouble(nil, math.NaN())
}

func identity(i int) int { return i }

func putFloat(b []byte, x float32) []byte {
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
}

func putDouble(b []byte, x float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
}

// flushPage compresses and writes the open page.
func (c *ownChunk) flushPage() error {
	if len(c.levels) == 0 {
		return nil
	}
	if c.dict != nil && !c.dict.full {
		return c.flushDictPage()
	}
	var err error
	if c.zbuf, err = c.codec.Encode(c.zbuf[:0], c.values); err != nil {
		return fmt.Errorf("compress a page of column %v: %w", c.meta.PathInSchema, err)
	}
	if _, _, err := c.writePage(c.levels, c.nulls, c.zbuf, false, len(c.values), &c.pageBounds, format.Plain); err != nil {
		return err
	}
	c.encoded++
	c.values, c.levels, c.nulls = c.values[:0], c.levels[:0], 0
	c.pageBounds.reset()
	return nil
}

// keep writes body, PLAIN values compressed with the chunk's codec
// (rawSize bytes before), as a page of its own with levels, after the
// open page, and returns the page's header and levels bytes (writePage).
func (c *ownChunk) keep(levels []byte, nulls int, body []byte, rawSize int, b *bounds) (header, defs []byte, err error) {
	if err := c.flushPage(); err != nil {
		return nil, nil, err
	}
	c.kept++
	return c.writePage(levels, nulls, body, true, rawSize, b, format.Plain)
}

// lastPageRow is the row of the chunk at which the page written last
// begins.
func (c *ownChunk) lastPageRow() int64 {
	return c.offIndex.PageLocations[len(c.offIndex.PageLocations)-1].FirstRowIndex
}

// lastPage is the page written last, of rows rows, whose bytes are parts,
// as a page proven by its bytes.
func (c *ownChunk) lastPage(rows int64, parts ...[]byte) provenPage {
	xx := xxhash.New()
	for _, b := range parts {
		xx.Write(b)
	}
	return provenPage{page: len(c.offIndex.PageLocations) - 1, first: c.lastPageRow(), rows: rows, hash: xx.Sum64()}
}

// writePage writes a data page (v2) of len(levels) rows: its header, its
// definition levels (RLE, uncompressed, as v2 keeps them) and body, an
// input's bytes when input is set. It returns the header's bytes and the
// levels', which stay valid until the next page.
func (c *ownChunk) writePage(levels []byte, nulls int, body []byte, input bool, rawSize int, b *bounds, enc format.Encoding) (header, defs []byte, err error) {
	if c.optional {
		if c.lbuf, err = (&rle.Encoding{BitWidth: 1}).EncodeLevels(c.lbuf[:0], levels); err != nil {
			return nil, nil, fmt.Errorf("encode the levels of column %v: %w", c.meta.PathInSchema, err)
		}
		defs = c.lbuf
	}
	rows := len(levels)
	crc := crc32.Update(crc32.ChecksumIEEE(defs), crc32.IEEETable, body)
	h := format.PageHeader{
		Type:                 format.DataPageV2,
		UncompressedPageSize: int32(len(defs) + rawSize),
		CompressedPageSize:   int32(len(defs) + len(body)),
		CRC:                  int32(crc),
		DataPageHeaderV2: thrift.New(format.DataPageHeaderV2{
			NumValues:                  int32(rows),
			NumNulls:                   int32(nulls),
			NumRows:                    int32(rows),
			Encoding:                   enc,
			DefinitionLevelsByteLength: int32(len(defs)),
			IsCompressed:               thrift.New(c.meta.Codec != format.Uncompressed),
		}),
	}
	header, err = c.writeHeaded(&h, defs, body, input, rows, nulls, b)
	return header, defs, err
}

// writeHeaded writes a data page of rows rows, nulls of them null, and
// bounds b: header h, then defs and body, which are its data; and indexes
// it. A body that is an input's bytes (input) is referred to, not copied.
// It returns the header's bytes.
func (c *ownChunk) writeHeaded(h *format.PageHeader, defs, body []byte, input bool, rows, nulls int, b *bounds) ([]byte, error) {
	hb, err := thrift.Marshal(new(thrift.CompactProtocol), h)
	if err != nil {
		return nil, fmt.Errorf("encode a page header of column %v: %w", c.meta.PathInSchema, err)
	}
	c.offIndex.PageLocations = append(c.offIndex.PageLocations, format.PageLocation{
		Offset:             int64(c.pages.Len()),
		CompressedPageSize: int32(len(hb) + len(defs) + len(body)),
		FirstRowIndex:      c.rows,
	})
	lo, hi := []byte{}, []byte{}
	if b.ok {
		lo, hi = slices.Clone(b.lo), slices.Clone(b.hi)
		if c.kind == parquet.ByteArray {
			lo, hi = truncateLower(lo), truncateUpper(hi)
		}
		c.chunkBounds.add(b.lo, c.compare)
		c.chunkBounds.add(b.hi, c.compare)
	} else if nulls < rows {
		// Values but no bounds: a page of NaN alone, whose column index
		// entry is NaN, as parquet-go and Arrow write it. Readers ignore
		// a NaN bound, and the chunk's statistics leave the page out.
		lo = nanBound(c.kind)
		hi = lo
	}
	c.colIndex.NullPages = append(c.colIndex.NullPages, nulls == rows)
	c.colIndex.MinValues = append(c.colIndex.MinValues, lo)
	c.colIndex.MaxValues = append(c.colIndex.MaxValues, hi)
	c.colIndex.NullCounts = append(c.colIndex.NullCounts, int64(nulls))
	c.pages.write(hb)
	c.pages.write(defs)
	if input {
		c.pages.ref(body)
	} else {
		c.pages.write(body)
	}
	c.rows += int64(rows)
	c.nullCount += int64(nulls)
	c.rawSize += int64(len(hb)) + int64(h.UncompressedPageSize)
	if h.Type == format.DataPage {
		c.v1++
	}
	return hb, nil
}

// truncateLower is a prefix of v no greater than v, at most
// columnIndexBytes long.
func truncateLower(v []byte) []byte { return v[:min(len(v), columnIndexBytes)] }

// truncateUpper is a value at most columnIndexBytes long no less than v:
// a prefix with its last byte that can be incremented incremented, or v.
func truncateUpper(v []byte) []byte {
	if len(v) <= columnIndexBytes {
		return v
	}
	p := v[:columnIndexBytes]
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] < 0xff {
			p[i]++
			return p[:i+1]
		}
	}
	return v
}

// finish closes the chunk, whose first byte goes at offset at of its
// file, and describes it: its metadata, its column index (encoded) and
// its offset index. The chunk's bytes are c.pages.
func (c *ownChunk) finish(at int64) (format.ColumnChunk, []byte, *format.OffsetIndex, error) {
	if err := c.flushPage(); err != nil {
		return format.ColumnChunk{}, nil, nil, err
	}
	md := c.meta
	md.Encoding = []format.Encoding{format.Plain, format.RLE}
	dictLen := 0
	if c.dict != nil && c.dict.pages > 0 {
		var err error
		if dictLen, err = c.writeDictionary(); err != nil {
			return format.ColumnChunk{}, nil, nil, err
		}
		md.Encoding = append(md.Encoding, format.RLEDictionary)
		md.DictionaryPageOffset = at
	}
	md.NumValues = c.rows
	md.TotalUncompressedSize = c.rawSize
	md.TotalCompressedSize = int64(c.pages.Len())
	md.DataPageOffset = at + int64(dictLen)
	md.Statistics = format.Statistics{NullCount: c.nullCount}
	if c.chunkBounds.ok {
		md.Statistics.MinValue, md.Statistics.MaxValue = c.chunkBounds.lo, c.chunkBounds.hi
	}
	md.EncodingStats = nil
	plain := c.kept + c.encoded - c.v1
	if dictLen > 0 {
		plain -= c.dict.pages
		md.EncodingStats = append(md.EncodingStats,
			format.PageEncodingStats{PageType: format.DictionaryPage, Encoding: format.Plain, Count: 1},
			format.PageEncodingStats{PageType: format.DataPageV2, Encoding: format.RLEDictionary, Count: int32(c.dict.pages)})
	}
	if plain > 0 {
		md.EncodingStats = append(md.EncodingStats, format.PageEncodingStats{PageType: format.DataPageV2, Encoding: format.Plain, Count: int32(plain)})
	}
	if c.v1 > 0 {
		md.EncodingStats = append(md.EncodingStats, format.PageEncodingStats{PageType: format.DataPage, Encoding: format.Plain, Count: int32(c.v1)})
	}
	ci := c.colIndex
	ci.BoundaryOrder = format.Unordered
	cib, err := thrift.Marshal(new(thrift.CompactProtocol), &ci)
	if err != nil {
		return format.ColumnChunk{}, nil, nil, fmt.Errorf("encode the column index of %v: %w", c.meta.PathInSchema, err)
	}
	oi := &format.OffsetIndex{PageLocations: slices.Clone(c.offIndex.PageLocations)}
	moveOffsetIndex(oi, at+int64(dictLen))
	return format.ColumnChunk{FileOffset: at, MetaData: md}, cib, oi, nil
}

// reset readies the chunk for the next row group.
func (c *ownChunk) reset() {
	c.pages.Reset()
	c.values, c.levels, c.nulls = c.values[:0], c.levels[:0], 0
	c.pageBounds.reset()
	c.chunkBounds = bounds{}
	c.rows, c.nullCount, c.rawSize, c.kept, c.encoded, c.v1 = 0, 0, 0, 0, 0, 0
	c.colIndex, c.offIndex = format.ColumnIndex{}, format.OffsetIndex{}
	clear(c.raw) // inputs' bytes
	c.proven = c.proven[:0]
	if c.dict != nil {
		c.dict.reset()
	}
}

// errNotKept says an input chunk's pages cannot be kept; its values are
// encoded instead.
var errNotKept = errors.New("pages not kept")

// rawPage is a data page of an input column chunk as it is stored.
type rawPage struct {
	h    format.PageHeader
	body []byte
}

// inputBytes are an input's bytes as ownChunk reads them: from the whole
// file when it was read whole (kept from being recycled by pin once a
// page refers to it), else through r.
type inputBytes struct {
	r     io.ReaderAt
	whole []byte
	pin   func()
}

// rawPages reads the input column chunk cm and splits it into its pages:
// its dictionary page, if any, and its data pages. Their bodies are the
// input's bytes, which a kept page refers to rather than copies. errNotKept
// says the chunk's pages cannot be kept (another codec, or pages this
// parser does not follow); parquet-go's reader reports damage.
func (c *ownChunk) rawPages(in inputBytes, cm *format.ColumnMetaData) (dict *rawPage, data []rawPage, err error) {
	if cm.Codec != c.meta.Codec || cm.IndexPageOffset > 0 {
		return nil, nil, errNotKept
	}
	start, n := chunkStart(cm), cm.TotalCompressedSize
	if start < 0 || n <= 0 || n > 1<<31 {
		return nil, nil, errNotKept
	}
	var b []byte
	if in.whole != nil && start+n <= int64(len(in.whole)) {
		b = in.whole[start : start+n : start+n]
	} else {
		b = make([]byte, n)
		if err := readFull(in.r, b, start); err != nil {
			return nil, nil, fmt.Errorf("read column %v: %w", cm.PathInSchema, err)
		}
	}
	r := bytes.NewReader(b)
	dec := thrift.NewDecoder(new(thrift.CompactProtocol).NewReader(r))
	data = c.raw[:0]
	for r.Len() > 0 {
		var h format.PageHeader
		if err := dec.Decode(&h); err != nil {
			return nil, nil, errNotKept
		}
		at := len(b) - r.Len()
		size := int(h.CompressedPageSize)
		if size < 0 || size > r.Len() || h.UncompressedPageSize < 0 {
			return nil, nil, errNotKept
		}
		p := rawPage{h: h, body: b[at : at+size : at+size]}
		r.Seek(int64(size), io.SeekCurrent)
		switch h.Type {
		case format.DictionaryPage:
			if dict != nil || len(data) > 0 {
				return nil, nil, errNotKept
			}
			dict = &p
		case format.DataPage, format.DataPageV2:
			data = append(data, p)
		default:
			return nil, nil, errNotKept
		}
	}
	c.raw = data
	return dict, data, nil
}

// plain reports whether raw data page r holds page p's values
// PLAIN-encoded, as ownChunk writes them: then it is kept as it is.
func (c *ownChunk) plain(r *rawPage, p parquet.Page) bool {
	if p.Dictionary() != nil || p.NumNulls() > 0 && !c.optional {
		return false
	}
	if h, ok := r.h.DataPageHeaderV2.Get(); ok {
		return r.h.Type == format.DataPageV2 && h.Encoding == format.Plain &&
			int64(h.NumRows) == p.NumRows() && int64(h.NumValues) == p.NumRows() && int64(h.NumNulls) == p.NumNulls() &&
			h.RepetitionLevelsByteLength == 0 && h.DefinitionLevelsByteLength >= 0 && int(h.DefinitionLevelsByteLength) <= len(r.body) &&
			(h.DefinitionLevelsByteLength == 0) == !c.optional
	}
	if h, ok := r.h.DataPageHeader.Get(); ok {
		return r.h.Type == format.DataPage && h.Encoding == format.Plain && int64(h.NumValues) == p.NumRows() &&
			(!c.optional || h.DefinitionLevelEncoding == format.RLE)
	}
	return false
}

// keepRaw writes raw data page r, whose decoded form is p, as it is: a
// header of its own (without the writer's statistics, whose order the
// footer's created_by no longer vouches for), which it returns, and its
// body.
func (c *ownChunk) keepRaw(r *rawPage, p parquet.Page) ([]byte, error) {
	if err := c.flushPage(); err != nil {
		return nil, err
	}
	sum, err := c.checkCRC(r)
	if err != nil {
		return nil, err
	}
	h := r.h
	h.CRC = int32(sum)
	if v, ok := h.DataPageHeader.Get(); ok {
		v.Statistics = format.Statistics{}
		h.DataPageHeader = thrift.New(v)
	}
	if v, ok := h.DataPageHeaderV2.Get(); ok {
		v.Statistics = format.Statistics{}
		h.DataPageHeaderV2 = thrift.New(v)
	}
	c.valuesBounds(p.Data(), &c.keptBounds)
	c.kept++
	return c.writeHeaded(&h, nil, r.body, true, int(p.NumRows()), int(p.NumNulls()), &c.keptBounds)
}

// checkCRC checks a page to be kept against the CRC its writer gave it,
// if any, and returns the page's CRC. parquet-go checked the bytes it decoded; the bytes kept were
// read apart from them (rawPages), and a kept page's new CRC must not
// vouch for other bytes than those.
func (c *ownChunk) checkCRC(r *rawPage) (uint32, error) {
	sum := crc32.ChecksumIEEE(r.body)
	if r.h.CRC != 0 && uint32(r.h.CRC) != sum {
		return 0, fmt.Errorf("column %v: a page's CRC does not match its bytes: the input is damaged", c.meta.PathInSchema)
	}
	return sum, nil
}

// valuesBounds sets b to the bounds of data's values.
func (c *ownChunk) valuesBounds(data encoding.Values, b *bounds) {
	b.reset()
	switch data.Kind() {
	case encoding.Int32:
		v := data.Int32()
		if len(v) == 0 {
			return
		}
		b.add(binary.LittleEndian.AppendUint32(nil, uint32(slices.Min(v))), c.compare)
		b.add(binary.LittleEndian.AppendUint32(nil, uint32(slices.Max(v))), c.compare)
	case encoding.Int64:
		v := data.Int64()
		if len(v) == 0 {
			return
		}
		b.add(binary.LittleEndian.AppendUint64(nil, uint64(slices.Min(v))), c.compare)
		b.add(binary.LittleEndian.AppendUint64(nil, uint64(slices.Max(v))), c.compare)
	case encoding.Float:
		v := data.Float()
		if lo, hi, ok := floatRange(v, len(v), identity); ok {
			floatBounds(b, lo, hi, c.compare, putFloat)
		}
	case encoding.Double:
		v := data.Double()
		if lo, hi, ok := floatRange(v, len(v), identity); ok {
			floatBounds(b, lo, hi, c.compare, putDouble)
		}
	case encoding.ByteArray:
		v, offsets := data.ByteArray()
		if n := len(offsets) - 1; n > 0 {
			lo, hi := byteArrayRange(v, offsets, n, identity)
			b.add(lo, c.compare)
			b.add(hi, c.compare)
		}
	}
}

// byteArrayRange is the least and the greatest of n > 0 byte arrays, the
// i-th being data[offsets[at(i)]:offsets[at(i)+1]], in bytes.Compare's
// order. Their first 8 bytes are compared as an integer first, which
// orders them as bytes.Compare does where they differ: only a value whose
// prefix is not strictly between the least's and the greatest's is
// compared in full. Most values of a page are neither, so bounding a
// page of random strings costs about a load and two integer comparisons
// a value.
func byteArrayRange(data []byte, offsets []uint32, n int, at func(int) int) (lo, hi []byte) {
	value := func(i int) []byte {
		j := at(i)
		return data[offsets[j]:offsets[j+1]]
	}
	lo = value(0)
	hi = lo
	loP := bytePrefix(lo)
	hiP := loP
	for i := 1; i < n; i++ {
		v := value(i)
		p := bytePrefix(v)
		if p > loP && p < hiP {
			continue
		}
		if bytes.Compare(v, lo) < 0 {
			lo, loP = v, p
		} else if bytes.Compare(v, hi) > 0 {
			hi, hiP = v, p
		}
	}
	return lo, hi
}

// bytePrefix is v's first 8 bytes, zero-padded, as a big-endian integer.
func bytePrefix(v []byte) uint64 {
	if len(v) >= 8 {
		return binary.BigEndian.Uint64(v)
	}
	var b [8]byte
	copy(b[:], v)
	return binary.BigEndian.Uint64(b[:])
}

// minKeptEntries is the fewest distinct values for which a
// dictionary-encoded column is written by ownChunk (ownColumns): a column
// whose first input holds fewer may well repeat its values in the next
// inputs, where a dictionary serves it better.
const minKeptEntries = 256

// copyInto reads the input column chunk cc, whose metadata is cm, of the
// input in, into c, keeping what it can of its pages as they are:
//   - its PLAIN data pages (plain);
//   - its dictionary page, as a data page, when the chunk's values are
//     the dictionary's entries in order, each once (every data page
//     dictionary-encoded, its indexes 0, 1, 2, …: a high-cardinality
//     column of a small file, dictionary-encoded because the file is
//     small).
//
// Each only when it holds at least a sixteenth of the table's page size
// (worthKeeping). The values of other pages are encoded (addPage). With
// lh set, the values are hashed into the lane's row sums as column id,
// as copyChunk does.
func (c *ownChunk) copyInto(in inputBytes, cc parquet.ColumnChunk, cm *format.ColumnMetaData, values []parquet.Value, lh *laneHash, id int) error {
	if lh != nil {
		lh.newChunk()
	}
	if c.dict != nil {
		// An input's dictionary is mapped for its chunk only, whatever
		// a reader reuses.
		c.dict.remapOf = nil
		row := 0
		return eachPage(cc, func(p parquet.Page) error {
			if lh != nil {
				if err := lh.page(id, row, p, values); err != nil {
					return err
				}
				row += int(p.NumRows())
			}
			if c.dict.full {
				return c.addPage(p, values)
			}
			return c.addDictPage(p)
		})
	}
	dictPage, raw, err := c.rawPages(in, cm)
	if err != nil && !errors.Is(err, errNotKept) {
		return err
	}
	// A dictionary page is kept only when the data pages are the
	// dictionary's indexes in order, which is checked as they are read;
	// a chunk that turns out otherwise is read again for its values.
	keepDict := dictPage != nil && c.worthKeeping(&dictPage.h) && c.keptDictionary(dictPage)
	broken := false
	var dict parquet.Dictionary
	var next int32
	levels, nulls, row, i := c.keptLevels[:0], 0, 0, 0
	err = eachPage(cc, func(p parquet.Page) error {
		if lh != nil {
			if err := lh.page(id, row, p, values); err != nil {
				return err
			}
			row += int(p.NumRows())
		}
		r := (*rawPage)(nil)
		if i < len(raw) {
			r = &raw[i]
		}
		i++
		if !keepDict {
			if r != nil && c.worthKeeping(&r.h) && c.plain(r, p) {
				if in.pin != nil {
					in.pin()
				}
				header, err := c.keepRaw(r, p)
				if err != nil {
					return err
				}
				// Read whole, the page's bytes are those parquet-go
				// decoded p from (provenPage).
				if lh != nil && in.whole != nil && lh.keep(c.lastPageRow(), p) {
					c.proven = append(c.proven, c.lastPage(p.NumRows(), header, r.body))
				}
				return nil
			}
			return c.addPage(p, values)
		}
		if broken {
			return nil
		}
		d := p.Dictionary()
		if d == nil || dict != nil && d != dict {
			broken = true
			return nil
		}
		if dict == nil {
			// The dictionary lives as long as the chunk's pages.
			dict = d
			c.valuesBounds(d.Page().Data(), &c.keptBounds)
		}
		ixs := p.Data()
		for _, ix := range ixs.Int32() {
			if ix != next {
				broken = true
				return nil
			}
			next++
		}
		if lv := p.DefinitionLevels(); lv != nil {
			for _, l := range lv {
				if l == 0 {
					nulls++
					levels = append(levels, 0)
				} else {
					levels = append(levels, 1)
				}
			}
		} else {
			for range p.NumRows() {
				levels = append(levels, 1)
			}
		}
		return nil
	})
	c.keptLevels = levels
	if err != nil || !keepDict {
		return err
	}
	if !broken && dict != nil && int(next) == dict.Len() && int64(len(levels)) == cm.NumValues && (nulls == 0 || c.optional) {
		if _, err := c.checkCRC(dictPage); err != nil {
			return err
		}
		if in.pin != nil {
			in.pin()
		}
		header, defs, err := c.keep(levels, nulls, dictPage.body, int(dictPage.h.UncompressedPageSize), &c.keptBounds)
		if err != nil {
			return err
		}
		// The page's values are the dictionary's entries in order, which
		// parquet-go decoded from the bytes kept when the input was read
		// whole (provenPage).
		if lh != nil && in.whole != nil && lh.keepDictionary(c.lastPageRow(), levels, dict.Len()) {
			c.proven = append(c.proven, c.lastPage(int64(len(levels)), header, defs, dictPage.body))
		}
		return nil
	}
	return eachBatch(cc, values, c.addValues)
}

// worthKeeping reports whether an input page is large enough to be kept
// as it is: at least a sixteenth of the table's page size (64 KiB of 1
// MiB, iceberg-go's and Iceberg's default). The values of a smaller page
// are encoded into the output's pages of the table's page size instead:
// a compressor gains from a larger page's context (the benchmarks'
// timestamps, in pages of 38 KB, compressed 6% less well than in the
// 1 MB pages of a rewrite), and every page costs a header and page index
// entries.
func (c *ownChunk) worthKeeping(h *format.PageHeader) bool {
	return int64(h.UncompressedPageSize)*16 >= int64(c.pageBytes)
}

// keptDictionary reports whether dictionary page d may be kept as a data
// page (if the chunk's indexes allow: copyInto): PLAIN values.
func (c *ownChunk) keptDictionary(d *rawPage) bool {
	h, ok := d.h.DictionaryPageHeader.Get()
	return ok && (h.Encoding == format.Plain || h.Encoding == format.PlainDictionary) && h.NumValues >= 0
}

// blockBytes is the largest of blockBuffer's blocks; the first are
// smaller, so that a few kilobytes take no more.
const blockBytes = 4 << 20

// blockBuffer holds bytes in blocks that are kept from one row group to
// the next: a chunk of a hundred megabytes is neither copied to grow, as
// a bytes.Buffer would, nor allocated and zeroed again.
type blockBuffer struct {
	blocks [][]byte
	free   [][]byte
	n      int
}

func (b *blockBuffer) Write(p []byte) (int, error) {
	written := len(p)
	b.n += len(p)
	for len(p) > 0 {
		if k := len(b.blocks); k == 0 || len(b.blocks[k-1]) == cap(b.blocks[k-1]) {
			var blk []byte
			if k := len(b.free); k > 0 {
				blk, b.free = b.free[k-1][:0], b.free[:k-1]
			} else {
				blk = make([]byte, 0, min(blockBytes, max(64<<10, b.n)))
			}
			b.blocks = append(b.blocks, blk)
		}
		last := &b.blocks[len(b.blocks)-1]
		k := min(len(p), cap(*last)-len(*last))
		*last = append(*last, p[:k]...)
		p = p[k:]
	}
	return written, nil
}

// Len is how many bytes b holds.
func (b *blockBuffer) Len() int { return b.n }

// Reset empties b, keeping its blocks for what is written next.
func (b *blockBuffer) Reset() {
	b.free = append(b.free, b.blocks...)
	b.blocks, b.n = b.blocks[:0], 0
}

// pieces are b's bytes as those of a file from offset at on.
func (b *blockBuffer) pieces(at int64) *pieces {
	p := &pieces{end: at}
	for _, blk := range b.blocks {
		p.add(p.end, blk)
	}
	return p
}

// segments are a column chunk's bytes in order: bytes written, copied
// into blocks, and bytes referred to where they are (an input's), which
// must not change until Reset.
type segments struct {
	own  blockBuffer
	segs [][]byte
	n    int
}

// write appends a copy of p.
func (s *segments) write(p []byte) {
	if len(p) == 0 {
		return
	}
	k := len(s.own.blocks)
	if k > 0 {
		k-- // p may begin in the last block
	}
	from := 0
	if k < len(s.own.blocks) {
		from = len(s.own.blocks[k])
	}
	s.own.Write(p)
	for ; k < len(s.own.blocks); k, from = k+1, 0 {
		s.add(s.own.blocks[k][from:])
	}
}

// prepend puts p, which must not change until Reset, before the chunk's
// bytes.
func (s *segments) prepend(p []byte) {
	if len(p) == 0 {
		return
	}
	s.segs = slices.Insert(s.segs, 0, p)
	s.n += len(p)
}

// ref appends p itself.
func (s *segments) ref(p []byte) { s.add(p) }

// add appends a segment, joining it to the last one when they are
// adjacent in one block (a page's header and levels).
func (s *segments) add(p []byte) {
	if len(p) == 0 {
		return
	}
	s.n += len(p)
	if k := len(s.segs) - 1; k >= 0 {
		last := s.segs[k]
		if cap(last) > len(last) && &last[:len(last)+1][len(last)] == &p[0] {
			s.segs[k] = last[:len(last)+len(p)]
			return
		}
	}
	s.segs = append(s.segs, p)
}

// Len is how many bytes the chunk has.
func (s *segments) Len() int { return s.n }

// Reset empties the chunk.
func (s *segments) Reset() {
	s.own.Reset()
	clear(s.segs)
	s.segs, s.n = s.segs[:0], 0
}
