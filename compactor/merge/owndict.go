package merge

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/encoding/rle"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// ownDict is the dictionary of a column the merge writes
// dictionary-encoded: one whose first input's chunk has a dictionary of
// values that repeat (a category, a status, a constant per file), which
// parquet-go's writer would otherwise encode value by value, building
// its own dictionary. Here an input page's dictionary is mapped onto the
// output's once, and its indexes through that map.
//
// Like parquet-go's writer (DictionaryMaxBytes), once the entries pass
// the table's dict-size-bytes the rest of the chunk is written in PLAIN
// pages: a chunk may hold dictionary-encoded pages and then plain ones.
type ownDict struct {
	width    int    // of an entry's PLAIN bytes: 4, 8, or 0 for byte arrays
	values   []byte // the entries, PLAIN-encoded, in the order first met
	starts   []int  // where each entry begins in values (byte arrays)
	fixed    map[uint64]int32
	strs     map[string]int32
	maxBytes int
	full     bool // past maxBytes: the pages after are PLAIN
	pages    int  // dictionary-encoded pages written

	ixs     []int32 // the open page's indexes
	used    []int32 // the entries the open page holds, once each
	stamp   []int32 // per entry, the page (pages+1) that last used it
	remap   []int32 // the output's index of each entry of remapOf
	remapOf parquet.Dictionary
	ibuf    []byte
}

func newOwnDict(kind parquet.Kind, maxBytes int64) *ownDict {
	d := &ownDict{maxBytes: int(min(maxBytes, math.MaxInt32))}
	switch kind {
	case parquet.Int32, parquet.Float:
		d.width = 4
	case parquet.Int64, parquet.Double:
		d.width = 8
	}
	d.reset()
	return d
}

func (d *ownDict) reset() {
	d.values, d.starts = d.values[:0], d.starts[:0]
	if d.fixed == nil {
		d.fixed, d.strs = map[uint64]int32{}, map[string]int32{}
	}
	clear(d.fixed)
	clear(d.strs)
	d.full, d.pages = false, 0
	d.ixs, d.used, d.stamp = d.ixs[:0], d.used[:0], d.stamp[:0]
	d.remap, d.remapOf = d.remap[:0], nil
}

// len is how many entries d has (each has a stamp).
func (d *ownDict) len() int { return len(d.stamp) }

// entry is entry e's bytes: its PLAIN encoding, without a byte array's
// length.
func (d *ownDict) entry(e int32) []byte {
	if d.width > 0 {
		return d.values[int(e)*d.width : int(e+1)*d.width]
	}
	end := len(d.values)
	if int(e)+1 < len(d.starts) {
		end = d.starts[e+1]
	}
	return d.values[d.starts[e]+4 : end]
}

// index is the entry of v (a fixed-width value's bits, or a byte
// array's bytes), added if new.
func (d *ownDict) index(bits uint64, b []byte) int32 {
	if d.width > 0 {
		if e, ok := d.fixed[bits]; ok {
			return e
		}
		e := int32(d.len())
		d.fixed[bits] = e
		if d.width == 4 {
			d.values = binary.LittleEndian.AppendUint32(d.values, uint32(bits))
		} else {
			d.values = binary.LittleEndian.AppendUint64(d.values, bits)
		}
		d.stamp = append(d.stamp, 0)
		return e
	}
	if e, ok := d.strs[string(b)]; ok {
		return e
	}
	e := int32(d.len())
	d.strs[string(b)] = e
	d.starts = append(d.starts, len(d.values))
	d.values = binary.LittleEndian.AppendUint32(d.values, uint32(len(b)))
	d.values = append(d.values, b...)
	d.stamp = append(d.stamp, 0)
	return e
}

// indexes calls fn with the entry of each of data's n values, the i-th
// being data's at(i)-th, adding new ones; false when data is not of the
// dictionary's kind.
func (d *ownDict) indexes(kind parquet.Kind, data encoding.Values, n int, at func(int) int, fn func(int32)) bool {
	switch {
	case kind == parquet.Int32 && data.Kind() == encoding.Int32:
		v := data.Int32()
		for i := range n {
			fn(d.index(uint64(uint32(v[at(i)])), nil))
		}
	case kind == parquet.Int64 && data.Kind() == encoding.Int64:
		v := data.Int64()
		for i := range n {
			fn(d.index(uint64(v[at(i)]), nil))
		}
	case kind == parquet.Float && data.Kind() == encoding.Float:
		v := data.Float()
		for i := range n {
			fn(d.index(uint64(math.Float32bits(v[at(i)])), nil))
		}
	case kind == parquet.Double && data.Kind() == encoding.Double:
		v := data.Double()
		for i := range n {
			fn(d.index(math.Float64bits(v[at(i)]), nil))
		}
	case kind == parquet.ByteArray && data.Kind() == encoding.ByteArray:
		b, offsets := data.ByteArray()
		for i := range n {
			j := at(i)
			fn(d.index(0, b[offsets[j]:offsets[j+1]]))
		}
	default:
		return false
	}
	return true
}

// count is how many values data holds.
func count(data encoding.Values) int {
	switch data.Kind() {
	case encoding.Int32:
		return len(data.Int32())
	case encoding.Int64:
		return len(data.Int64())
	case encoding.Float:
		return len(data.Float())
	case encoding.Double:
		return len(data.Double())
	case encoding.ByteArray:
		_, offsets := data.ByteArray()
		return max(len(offsets)-1, 0)
	}
	return 0
}

// addDictPage appends the values of input page p to the open
// dictionary-encoded page, as their entries: a dictionary-encoded page's
// indexes through its dictionary's map onto the output's, built once
// per input dictionary; other pages' values one by one.
func (c *ownChunk) addDictPage(p parquet.Page) error {
	d := c.dict
	page := int32(d.pages + 1)
	add := func(e int32) {
		d.ixs = append(d.ixs, e)
		if d.stamp[e] != page {
			d.stamp[e] = page
			d.used = append(d.used, e)
		}
	}
	data := p.Data()
	var n int
	if pd := p.Dictionary(); pd != nil {
		if pd != d.remapOf {
			d.remapOf, d.remap = pd, d.remap[:0]
			entries := pd.Page().Data()
			if !d.indexes(c.kind, entries, count(entries), identity, func(e int32) { d.remap = append(d.remap, e) }) {
				return fmt.Errorf("column %v: a dictionary of %v values in a %v column", c.meta.PathInSchema, entries.Kind(), c.kind)
			}
		}
		ixs := data.Int32()
		for _, ix := range ixs {
			if uint32(ix) >= uint32(len(d.remap)) {
				return fmt.Errorf("column %v: dictionary index %d of %d entries", c.meta.PathInSchema, ix, len(d.remap))
			}
			add(d.remap[ix])
		}
		n = len(ixs)
	} else {
		n = count(data)
		if !d.indexes(c.kind, data, n, identity, add) {
			return fmt.Errorf("column %v: a page of %v values in a %v column", c.meta.PathInSchema, data.Kind(), c.kind)
		}
	}
	if err := c.appendLevels(p, n); err != nil {
		return err
	}
	switch {
	case len(d.values) > d.maxBytes:
		// The entries so far stay; what follows is PLAIN.
		err := c.flushDictPage()
		d.full = true
		return err
	case 4*len(d.ixs)+len(c.levels)/8 >= c.pageBytes:
		return c.flushDictPage()
	}
	return nil
}

// flushDictPage compresses and writes the open page's indexes as an
// RLE_DICTIONARY data page, bounded by the entries it holds.
func (c *ownChunk) flushDictPage() error {
	d := c.dict
	if len(c.levels) == 0 {
		return nil
	}
	var err error
	if d.ibuf, err = (&rle.DictionaryEncoding{}).EncodeInt32(d.ibuf[:0], d.ixs); err != nil {
		return fmt.Errorf("encode the indexes of a page of column %v: %w", c.meta.PathInSchema, err)
	}
	if c.zbuf, err = c.codec.Encode(c.zbuf[:0], d.ibuf); err != nil {
		return fmt.Errorf("compress a page of column %v: %w", c.meta.PathInSchema, err)
	}
	c.pageBounds.reset()
	for _, e := range d.used {
		c.entryBound(e)
	}
	if _, _, err := c.writePage(c.levels, c.nulls, c.zbuf, false, len(d.ibuf), &c.pageBounds, format.RLEDictionary); err != nil {
		return err
	}
	d.pages++
	c.encoded++
	d.ixs, d.used = d.ixs[:0], d.used[:0]
	c.levels, c.nulls = c.levels[:0], 0
	c.pageBounds.reset()
	return nil
}

// entryBound adds entry e to the open page's bounds: floating point
// values as floatBounds does.
func (c *ownChunk) entryBound(e int32) {
	b := c.dict.entry(e)
	switch c.kind {
	case parquet.Float:
		x := math.Float32frombits(binary.LittleEndian.Uint32(b))
		floatBounds(&c.pageBounds, x, x, c.compare, putFloat)
	case parquet.Double:
		x := math.Float64frombits(binary.LittleEndian.Uint64(b))
		floatBounds(&c.pageBounds, x, x, c.compare, putDouble)
	default:
		c.pageBounds.add(b, c.compare)
	}
}

// writeDictionary puts the dictionary page before the chunk's data
// pages and returns its length, by which their offsets move.
func (c *ownChunk) writeDictionary() (int, error) {
	d := c.dict
	body, err := c.codec.Encode(nil, d.values)
	if err != nil {
		return 0, fmt.Errorf("compress the dictionary of column %v: %w", c.meta.PathInSchema, err)
	}
	h := format.PageHeader{
		Type:                 format.DictionaryPage,
		UncompressedPageSize: int32(len(d.values)),
		CompressedPageSize:   int32(len(body)),
		CRC:                  int32(crc32.ChecksumIEEE(body)),
		DictionaryPageHeader: thrift.New(format.DictionaryPageHeader{NumValues: int32(d.len()), Encoding: format.Plain}),
	}
	hb, err := thrift.Marshal(new(thrift.CompactProtocol), &h)
	if err != nil {
		return 0, fmt.Errorf("encode the dictionary page header of column %v: %w", c.meta.PathInSchema, err)
	}
	page := append(hb, body...)
	c.pages.prepend(page)
	c.rawSize += int64(len(hb) + len(d.values))
	return len(page), nil
}
