package merge

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/cespare/xxhash/v2"
	"github.com/icekeeper/icekeeper/internal/s3write"
	"github.com/icekeeper/icekeeper/internal/version"
	"github.com/icekeeper/icekeeper/planner"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
	"github.com/sourcegraph/conc/pool"
)

// mergeOutput is one output file being written. Its row groups are
// stitched (see stitcher): an input row group healthy enough to keep is
// copied byte for byte, and the others are merged and re-encoded into row
// groups of the table's size.
type mergeOutput struct {
	path    string
	file    icebergio.FileWriter
	counter *countingWriter
	st      *stitcher
	set     mergeSettings
	opts    []parquet.WriterOption
	// w re-encodes one row group at a time, as a Parquet file of its own
	// whose row group sink passes straight into the output.
	w          *parquet.Writer
	sink       reencodeSink
	rgBytes    int64 // input bytes in the open re-encoded row group
	rgRows     int64
	inputBytes int64
	counts     RowGroupCounts
	lanes      [2][]int           // columns by lane, balanced on the first input
	values     [2][]parquet.Value // one decoding buffer per lane
	schema     *parquet.Schema
	ncols      int // the table's columns, which the lineage columns follow
	// With lineage (format version 3) every row's lineage is written out
	// (see lineage.go).
	lineage               bool
	lineageBounds         [2]longBounds
	lineageIn, lineageOut []parquet.Value
	// lw encodes the lineage of a row group copied without it, as a
	// Parquet file of its own passing into the output like w's.
	lw    *parquet.Writer
	lsink reencodeSink
	// proof, when the merge checks rows, hashes what it reads.
	proof *rowProof
	// kinds are the table's columns' types on the merge path (boundKinds).
	// own are the columns of re-encoded row groups the merge writes itself
	// (ownColumns), nil when w writes them all; wcol maps a column to w's
	// (-1 for an own column).
	kinds []boundKind
	own   []*ownChunk
	wcol  []int
}

// RowGroupCounts say what the merge did with its inputs' row groups:
// copied them byte for byte (ByStorage of them copied by the storage
// itself), or decoded and re-encoded them.
type RowGroupCounts struct {
	Copied, Reencoded, ByStorage int
	// KeptPages are pages of the re-encoded row groups' inputs written to
	// the output as they were, compressed (ownChunk): PLAIN data pages,
	// and dictionaries of distinct values as data pages.
	KeptPages int
	// OwnPages are the pages the merge encoded itself (ownChunk), from
	// the values of input pages it did not keep.
	OwnPages int
}

// newMergeOutput starts writing output name; keepSent keeps a copy of what
// it sends for the proof (sentCopy).
func newMergeOutput(wfs icebergio.WriteFileIO, name string, schema *parquet.Schema, set mergeSettings, kinds []boundKind, lineage, keepSent bool) (*mergeOutput, error) {
	f, err := wfs.Create(name)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	opts := []parquet.WriterOption{
		schema,
		parquet.Compression(set.codec),
		parquet.PageBufferSize(set.pageBytes),
		parquet.DataPageVersion(set.pageVersion),
		parquet.WriteBufferSize(64 << 10),
		createdBy(writerName()),
	}
	if set.dictionary {
		// Dictionary-encoded columns fall back to plain pages once their
		// dictionary passes the table's dict-size-bytes, so that a
		// high-cardinality column never carries a dictionary page
		// readers refuse.
		opts = append(opts, parquet.DictionaryMaxBytes(set.dictBytes))
	}
	cw := &countingWriter{w: f, copies: set.copies}
	if keepSent {
		cw.sent = newSentCopy(f)
	}
	st, err := newStitcher(cw)
	if err != nil {
		f.Close()
		cw.sent.close()
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	o := &mergeOutput{path: name, file: f, counter: cw, st: st, set: set, opts: opts, schema: schema, ncols: len(kinds), kinds: kinds, lineage: lineage}
	o.sink.reset()
	o.lsink.reset()
	for i := range o.values {
		o.values[i] = make([]parquet.Value, writeBatch)
	}
	if lineage {
		o.lineageIn = make([]parquet.Value, writeBatch)
		o.lineageOut = make([]parquet.Value, 0, writeBatch)
	}
	return o, nil
}

// writerName is the footer's created_by.
func writerName() string {
	return "icekeeper version " + version.Version() + " (build " + version.Commit() + ")"
}

// copyable reports whether input row group rg, of size compressed bytes,
// is copied as it is: full (planner.RowGroupFull: half the byte target,
// or the table's row limit reached), within the row limit, compressed
// with the table's codec, dictionary-encoded only if the table allows
// dictionaries, and not encrypted.
func (o *mergeOutput) copyable(rg *format.RowGroup, size int64) bool {
	if !planner.RowGroupFull(size, rg.NumRows, o.set.copyBytes, o.set.rowGroupRows) {
		return false
	}
	codec := o.set.codec.CompressionCodec()
	for i := range rg.Columns {
		c := &rg.Columns[i]
		if c.MetaData.Codec != codec || len(c.EncryptedColumnMetadata) > 0 || c.CryptoMetadata.Value != nil {
			return false
		}
		if !o.set.dictionary && c.MetaData.DictionaryPageOffset > 0 {
			return false
		}
	}
	return true
}

// copyFile appends every row group of pf, whose rows take their lineage
// from lin: copied when copyable, else
// merged into the open re-encoded row group, column by column, on two
// lanes of columns at once (distinct column writers share no state until
// the row group is flushed); the lineage columns are a third lane.
//
// src is pf's bytes as storage holds them: a healthy row group may be
// copied by the storage itself from there (stitcher.copyByStorage).
func (o *mergeOutput) copyFile(pf *parquet.File, src copySource, lin lineageSource) error {
	o.st.origin = nil
	if o.set.storageCopies && src.r != nil {
		o.st.origin = &src
	}
	defer func() { o.st.origin = nil }()
	md := pf.Metadata()
	var pos int64 // of the row group's first row in the file
	for r, rg := range pf.RowGroups() {
		start := pos
		pos += rg.NumRows()
		var size int64
		for _, c := range md.RowGroups[r].Columns {
			size += c.MetaData.TotalCompressedSize
		}
		if o.copyable(&md.RowGroups[r], size) {
			// With lineage, a row group is copied whole when it holds
			// its rows' lineage already, and gets the lineage columns
			// added when its file holds none of them; else it is
			// re-encoded.
			whole := !o.lineage || o.copiesLineage(pf, r, lin)
			if whole || lin.rowIDCol < 0 && lin.seqCol < 0 {
				// The open re-encoded row group goes first: rows keep
				// their order.
				if err := o.flushReencoded(); err != nil {
					return err
				}
				// A nil *xxhash.Digest would be a non-nil io.Writer.
				var h *xxhash.Digest
				var hw io.Writer
				if o.proof != nil {
					h = xxhash.New()
					hw = h
				}
				ordinal := len(o.st.groups)
				byStorage, inPlace, err := o.st.appendRowGroup(pf, md, r, hw)
				if err != nil {
					return err
				}
				if h != nil {
					g := copiedGroup{ordinal: ordinal, cols: len(md.RowGroups[r].Columns), inPlace: inPlace, rows: rg.NumRows(), hash: h.Sum64(), sampled: byStorage}
					o.proof.copied = append(o.proof.copied, g)
					o.proof.in.Add(g.hash)
				}
				if !whole {
					if err := o.appendLineage(rg, lin, start); err != nil {
						return fmt.Errorf("row group %d: %w", r, err)
					}
				}
				o.counts.Copied++
				if byStorage {
					o.counts.ByStorage++
				}
				continue
			}
		}
		if o.rgRows > 0 && (o.rgBytes+size > o.set.rowGroupBytes || o.rgRows+rg.NumRows() > o.set.rowGroupRows) {
			if err := o.flushReencoded(); err != nil {
				return err
			}
		}
		if o.w == nil {
			if err := o.newWriter(inputBytes{r: pf, whole: src.whole}, md, r); err != nil {
				return err
			}
		}
		if o.lanes[0] == nil {
			o.lanes = balanceLanes(md.RowGroups[r].Columns[:o.ncols])
		}
		writers := o.w.ColumnWriters()
		chunks := rg.ColumnChunks()
		if o.proof != nil {
			o.proof.begin(rg.NumRows())
		}
		p := pool.New().WithErrors()
		for l, lane := range o.lanes {
			p.Go(func() error {
				for _, c := range lane {
					var lh *laneHash
					var id int
					if o.proof != nil && c < len(o.proof.ids) {
						lh, id = &o.proof.lanes[l], o.proof.ids[c]
					}
					var err error
					if o.own != nil && o.own[c] != nil {
						in := inputBytes{r: pf, whole: src.whole, pin: src.pin}
						err = o.own[c].copyInto(in, chunks[c], &md.RowGroups[r].Columns[c].MetaData, o.values[l], lh, id)
					} else {
						err = copyChunk(writers[o.wcol[c]], chunks[c], o.values[l], lh, id)
					}
					if err != nil {
						return err
					}
				}
				return nil
			})
		}
		if o.lineage {
			p.Go(func() error { return o.writeLineage(writers[o.wcol[o.ncols]:], o.ncols, rg, lin, start) })
		}
		if err := p.Wait(); err != nil {
			return err
		}
		if o.proof != nil {
			o.proof.fold(&o.proof.read)
		}
		o.rgBytes += size
		o.rgRows += rg.NumRows()
		o.counts.Reencoded++
	}
	return nil
}

// newWriter makes the writer of re-encoded row groups, on the first
// input row group to be re-encoded (row group r of the input in, whose
// footer is md), with the columns ownColumns chooses left to ownChunk. Its row
// groups are then held whole until they are flushed, so that the own
// chunks go in between (stitcher.adoptWithOwn).
func (o *mergeOutput) newWriter(in inputBytes, md *format.FileMetaData, r int) error {
	o.sink.out = o.counter
	fields := o.schema.Fields()
	o.own = o.ownColumns(in, md, r)
	o.wcol = make([]int, len(fields))
	schema := o.schema
	if o.own != nil {
		var kept []parquet.Field
		for i, f := range fields {
			o.wcol[i] = -1
			if o.own[i] == nil {
				o.wcol[i] = len(kept)
				kept = append(kept, f)
			}
		}
		schema = parquet.NewSchema(o.schema.Name(), orderedGroup{fields: kept})
		if o.st.schema == nil {
			// The output's schema is the whole one, not the writer's.
			var b bytes.Buffer
			if err := parquet.NewWriter(&b, o.opts...).Close(); err != nil {
				return fmt.Errorf("write the schema: %w", err)
			}
			full, err := readFooter(b.Bytes())
			if err != nil {
				return fmt.Errorf("read the schema: %w", err)
			}
			o.st.schema, o.st.orders = full.Schema, full.ColumnOrders
		}
		o.sink.hold = true
	} else {
		for i := range o.wcol {
			o.wcol[i] = i
		}
	}
	o.w = parquet.NewWriter(&o.sink, append([]parquet.WriterOption{schema}, o.opts[1:]...)...)
	return nil
}

// ownColumns chooses the table columns the merge writes itself
// (ownChunk), from row group r of the first input re-encoded: those of a
// type ownChunk writes, compressed with the table's codec, whose chunk
// there is PLAIN-encoded (as the output's would be: outputSchema), or
// holds at least minKeptEntries values, all distinct, in a PLAIN
// dictionary, or, where the table allows dictionaries, holds values that
// repeat in a PLAIN dictionary: those are written dictionary-encoded
// (ownDict). Nil when there are none, or when the table's pages are not
// v2 (ownChunk writes v2 pages).
func (o *mergeOutput) ownColumns(in inputBytes, md *format.FileMetaData, r int) []*ownChunk {
	if o.set.pageVersion != 2 {
		return nil
	}
	fields := o.schema.Fields()
	var own []*ownChunk
	for c, k := range o.kinds {
		if !ownKind(k.kind) {
			continue
		}
		cm := &md.RowGroups[r].Columns[c].MetaData
		oc := newOwnChunk(cm, k, fields[c].Optional(), o.set)
		dict, raw, err := oc.rawPages(in, cm)
		if err != nil || len(raw) == 0 {
			continue
		}
		if dict != nil {
			h, _ := dict.h.DictionaryPageHeader.Get()
			if !oc.keptDictionary(dict) {
				continue
			}
			if h.NumValues < minKeptEntries || int64(h.NumValues) != cm.NumValues-cm.Statistics.NullCount {
				// Values that repeat: dictionary-encoded, as their
				// writer chose, where the table allows it.
				if !o.set.dictionary {
					continue
				}
				oc.dict = newOwnDict(k.kind, o.set.dictBytes)
			}
		} else if !allPlain(raw) {
			continue
		}
		if own == nil {
			own = make([]*ownChunk, len(fields))
		}
		own[c] = oc
	}
	return own
}

// allPlain reports whether data pages are all PLAIN-encoded.
func allPlain(pages []rawPage) bool {
	for i := range pages {
		h := &pages[i].h
		if v, ok := h.DataPageHeaderV2.Get(); ok && v.Encoding == format.Plain {
			continue
		}
		if v, ok := h.DataPageHeader.Get(); ok && v.Encoding == format.Plain {
			continue
		}
		return false
	}
	return true
}

// flushReencoded finishes the open re-encoded row group, whose bytes are
// already in the output, and adds it to the stitcher.
func (o *mergeOutput) flushReencoded() error {
	if o.rgRows == 0 {
		return nil
	}
	// Flush hands the row group's pages to the sink; Close writes the
	// page indexes and the footer, which the sink holds back.
	if err := o.w.Flush(); err != nil {
		return err
	}
	o.sink.hold = true
	if err := o.w.Close(); err != nil {
		return err
	}
	var err error
	if o.own != nil {
		ordinal := len(o.st.groups)
		err = o.st.adoptWithOwn(&o.sink, o.own, o.rgRows)
		if err == nil && o.proof != nil {
			o.proof.reencoded(ordinal, o.own, o.rgRows)
		}
		for _, oc := range o.own {
			if oc != nil {
				o.counts.KeptPages += oc.kept
				o.counts.OwnPages += oc.encoded
				oc.reset()
			}
		}
	} else {
		_, err = o.st.adoptRowGroups(&o.sink)
	}
	if err != nil {
		return fmt.Errorf("re-encoded row group: %w", err)
	}
	o.sink.reset()
	o.sink.hold = o.own != nil
	o.w.Reset(&o.sink)
	o.rgBytes, o.rgRows = 0, 0
	return nil
}

// reencodeSink is where the re-encoding writer writes its one-row-group
// file. The file's magic is dropped, its row group passes into the output
// as it comes, and what follows the flush of the row group is held: the
// rest of the writer's buffer, the page indexes and the footer. The bytes
// that belong to the row group are sorted out from the footer once it is
// known (adoptRowGroups), so no copy of the row group is ever made.
type reencodeSink struct {
	out  *countingWriter
	base int64 // the output offset of the file's byte 4 (-1: not yet)
	n    int64 // bytes of the file seen
	hold bool
	tail blockBuffer // the file from byte n-tail.Len() on
}

func (s *reencodeSink) reset() {
	s.base, s.n, s.hold = -1, 0, false
	s.tail.Reset()
}

func (s *reencodeSink) Write(p []byte) (int, error) {
	written := len(p)
	if s.n < int64(len(parquetMagic)) {
		skip := min(int64(len(parquetMagic))-s.n, int64(len(p)))
		s.n += skip
		p = p[skip:]
	}
	if len(p) == 0 {
		return written, nil
	}
	if s.hold {
		s.tail.Write(p)
		s.n += int64(len(p))
		return written, nil
	}
	if s.base < 0 {
		s.base = s.out.n
	}
	if _, err := s.out.Write(p); err != nil {
		return 0, err
	}
	s.n += int64(len(p))
	return written, nil
}

// held are the held bytes, at the file's offsets.
func (s *reencodeSink) held() *pieces { return s.tail.pieces(s.n - int64(s.tail.Len())) }

// footer decodes the footer of the file, which ends what is held.
func (s *reencodeSink) footer() (*format.FileMetaData, error) {
	held := s.held()
	var end [8]byte
	if _, err := held.ReadAt(end[:], s.n-8); err != nil {
		return nil, fmt.Errorf("not a Parquet file: %w", err)
	}
	size := int64(binary.LittleEndian.Uint32(end[:]))
	// readFooter reads a whole file's last bytes, its magic first.
	b := make([]byte, len(parquetMagic)+int(size)+8)
	copy(b, parquetMagic)
	if _, err := held.ReadAt(b[len(parquetMagic):], s.n-8-size); err != nil {
		return nil, fmt.Errorf("footer of %d bytes: %w", size, err)
	}
	return readFooter(b)
}

// balanceLanes splits the columns into two lanes of about equal bytes.
func balanceLanes(cols []format.ColumnChunk) [2][]int {
	order := make([]int, len(cols))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Compare(cols[b].MetaData.TotalCompressedSize, cols[a].MetaData.TotalCompressedSize)
	})
	var lanes [2][]int
	var bytes [2]int64
	for _, c := range order {
		l := 0
		if bytes[1] < bytes[0] {
			l = 1
		}
		lanes[l] = append(lanes[l], c)
		bytes[l] += cols[c].MetaData.TotalCompressedSize
	}
	return lanes
}

// writeBatch bounds the values handed to a column writer at once: it
// closes a page only after a write, so a page can pass the page size by
// one batch.
const writeBatch = 1024

// copyChunk decodes a column chunk page by page into w. With lh set, each
// page is hashed into the lane's row sums first (laneHash.page), as
// column id, from the row of its first value. Columns are flat, so each
// value is a row.
func copyChunk(w *parquet.ColumnWriter, cc parquet.ColumnChunk, values []parquet.Value, lh *laneHash, id int) error {
	row := 0
	if lh != nil {
		lh.newChunk()
	}
	return eachPage(cc, func(p parquet.Page) error {
		if lh != nil {
			if err := lh.page(id, row, p, values); err != nil {
				return err
			}
			row += int(p.NumRows())
		}
		return pageValues(p, values, func(batch []parquet.Value) error {
			_, err := w.WriteRowValues(batch)
			return err
		})
	})
}

// eachBatch decodes a column chunk page by page, handing fn each batch of
// values read into values.
func eachBatch(cc parquet.ColumnChunk, values []parquet.Value, fn func([]parquet.Value) error) error {
	return eachPage(cc, func(p parquet.Page) error { return pageValues(p, values, fn) })
}

// eachPage reads a column chunk page by page; a page is released once fn
// is done with it.
func eachPage(cc parquet.ColumnChunk, fn func(parquet.Page) error) error {
	pages := cc.Pages()
	defer pages.Close()
	for {
		p, err := pages.ReadPage()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		err = fn(p)
		parquet.Release(p)
		if err != nil {
			return err
		}
	}
}

// pageValues hands fn the values of page p, a batch at a time read into
// values.
func pageValues(p parquet.Page, values []parquet.Value, fn func([]parquet.Value) error) error {
	vr := p.Values()
	for {
		n, err := vr.ReadValues(values)
		if n > 0 {
			if ferr := fn(values[:n]); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// close finishes the file and describes it for the manifest: counts and
// sizes from its own footer, bounds merged from the inputs' metrics.
func (o *mergeOutput) close(spec iceberg.PartitionSpec, sc *iceberg.Schema, inputs []iceberg.DataFile) (iceberg.DataFile, error) {
	if err := o.flushReencoded(); err != nil {
		o.file.Close()
		return nil, fmt.Errorf("write %s: %w", o.path, err)
	}
	md, err := o.st.close(writerName())
	if err != nil {
		o.file.Close()
		return nil, fmt.Errorf("write %s: %w", o.path, err)
	}
	if err := o.file.Close(); err != nil {
		return nil, fmt.Errorf("close %s: %w", o.path, err)
	}
	var ids []int
	for _, f := range sc.Fields() {
		ids = append(ids, f.ID)
	}
	if o.lineage {
		l := lineageIDs()
		ids = append(ids, l[:]...)
	}
	sizes := map[int]int64{}
	valueCounts := map[int]int64{}
	nullCounts := map[int]int64{}
	var splits []int64
	for _, rg := range md.RowGroups {
		for i, c := range rg.Columns {
			if c.MetaData.NumValues != rg.NumRows {
				// Columns are flat: one value per row, in every column.
				return nil, fmt.Errorf("write %s: column %v has %d values for %d rows", o.path, c.MetaData.PathInSchema, c.MetaData.NumValues, rg.NumRows)
			}
			if i >= len(ids) {
				return nil, fmt.Errorf("write %s: column %v is not in the schema", o.path, c.MetaData.PathInSchema)
			}
			id := ids[i]
			sizes[id] += c.MetaData.TotalCompressedSize
			valueCounts[id] += c.MetaData.NumValues
			nullCounts[id] += c.MetaData.Statistics.NullCount
		}
		first := rg.Columns[0].MetaData
		off := first.DataPageOffset
		if first.DictionaryPageOffset > 0 && first.DictionaryPageOffset < off {
			off = first.DictionaryPageOffset
		}
		splits = append(splits, off)
	}
	b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, o.path, iceberg.ParquetFile, inputs[0].Partition(), nil, nil, md.NumRows, o.counter.n)
	if err != nil {
		return nil, err
	}
	lower, upper := mergeBounds(sc, inputs)
	if o.lineage {
		for l, id := range lineageIDs() {
			if b := o.lineageBounds[l]; b.ok {
				lower[id], upper[id] = lineageBoundBytes(b)
			}
		}
	}
	b.ColumnSizes(sizes).ValueCounts(valueCounts).NullValueCounts(nullCounts).
		LowerBoundValues(lower).UpperBoundValues(upper).SplitOffsets(splits)
	if nan := sumCounts(inputs, iceberg.DataFile.NaNValueCounts); len(nan) > 0 {
		b.NaNValueCounts(nan)
	}
	return b.Build(), nil
}

// countingWriter counts the bytes of the file being written, and keeps
// what it sends where the proof will read it from there (sent).
type countingWriter struct {
	w      io.Writer
	n      int64
	copies *s3write.Copies // for rangeCopier
	sent   *sentCopy
}

// rangeCopier is an output whose storage appends a range of another of
// its files itself (s3write's writer: S3 part copies). It reports false,
// having appended nothing, where it makes no copy.
type rangeCopier interface {
	CopyRange(copies *s3write.Copies, r io.ReaderAt, path string, off, n int64) (bool, error)
}

// localCopyBytes is the smallest range copied with copy_file_range: below
// it the system calls cost more than the copy through memory.
const localCopyBytes = 1 << 20

// copyRange appends n bytes of src from off copied by the storage, when
// the output's storage can: an S3 part copy (rangeCopier), or between
// local files copy_file_range, which os.File.ReadFrom uses on Linux (and
// which falls back to reading and writing elsewhere). It reports false,
// having appended nothing, where no copy is made.
func (c *countingWriter) copyRange(src copySource, off, n int64) (bool, error) {
	var ok bool
	var err error
	switch w := c.w.(type) {
	case rangeCopier:
		ok, err = w.CopyRange(c.copies, src.r, src.path, off, n)
	case *os.File:
		ok, err = copyFileRange(w, src.r, off, n)
	}
	if ok {
		c.sent.copied(c.n, n)
		c.n += n
	}
	return ok, err
}

// copyFileRange appends n bytes of r from off to dst, when r is a local
// file too: from r's offset, which only this copy moves (the merge reads
// inputs with ReadAt).
func copyFileRange(dst *os.File, r io.ReaderAt, off, n int64) (bool, error) {
	f, ok := r.(*os.File)
	if !ok || n < localCopyBytes {
		return false, nil
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return false, nil
	}
	k, err := dst.ReadFrom(io.LimitReader(f, n))
	if err == nil && k != n {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		// Bytes may have been appended: the output is abandoned.
		return false, fmt.Errorf("copy %d bytes of %s at %d: %w", n, f.Name(), off, err)
	}
	return true, nil
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.sent.write(p[:n], c.n)
	c.n += int64(n)
	return n, err
}

// createdBy sets the footer's created_by in parquet-mr's form, "APP version
// V (build B)", which readers parse to know a writer's bugs; parquet-go's
// CreatedBy option leaves out the space before "(build".
type createdBy string

func (c createdBy) ConfigureWriter(cfg *parquet.WriterConfig) { cfg.CreatedBy = string(c) }
