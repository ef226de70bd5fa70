package compactor

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/zstd"
	"github.com/parquet-go/parquet-go/format"
	"github.com/sourcegraph/conc/pool"
)

// errNotMergeable says a group must take iceberg-go's general path; it is
// never a failure of the run.
var errNotMergeable = errors.New("not mergeable column by column")

// The merge path is bin-pack's fast path for the common case of a streaming
// writer's output: delete-free Parquet files that all carry the table's
// current schema. Their pages are decoded column by column with parquet-go
// and re-encoded into row groups sized by the table's write properties —
// no Arrow record is built and no row is assembled. Everything else (row-
// level deletes, older schemas or specs, nested columns, files larger than
// the target, write properties the merge does not implement) takes
// iceberg-go's ExecuteCompactionGroup, and so does any group whose files turn
// out not to share one schema.

// mergeSettings are the table's Parquet write properties the merge honours.
type mergeSettings struct {
	codec         compress.Codec
	pageVersion   int
	pageBytes     int
	dictionary    bool
	dictBytes     int64
	rowGroupBytes int64
	rowGroupRows  int64
}

// mergeSettingsOf reads the table's write properties, with iceberg-go's
// defaults. A property the merge does not implement (bloom filters, per-
// column dictionary switches, a codec parquet-go lacks) makes the group
// not mergeable, so that iceberg-go's writer honours it instead.
func mergeSettingsOf(props iceberg.Properties) (mergeSettings, error) {
	for k := range props {
		if strings.HasPrefix(k, table.ParquetBloomFilterColumnEnabledKeyPrefix+".") || strings.HasPrefix(k, "write.parquet.dict-encoding-enabled.column.") {
			return mergeSettings{}, fmt.Errorf("%w: table property %s", errNotMergeable, k)
		}
	}
	s := mergeSettings{
		pageBytes:     props.GetInt(table.ParquetPageSizeBytesKey, table.ParquetPageSizeBytesDefault),
		dictionary:    props.GetBool("parquet.enable.dictionary", true),
		dictBytes:     int64(props.GetInt(table.ParquetDictSizeBytesKey, table.ParquetDictSizeBytesDefault)),
		rowGroupBytes: int64(props.GetInt(table.ParquetRowGroupSizeBytesKey, table.ParquetRowGroupSizeBytesDefault)),
		rowGroupRows:  int64(props.GetInt("write.parquet.row-group-limit", table.ParquetRowGroupLimitDefault)),
	}
	switch v := props.Get("write.parquet.page-version", "2"); v {
	case "1", "2":
		s.pageVersion, _ = strconv.Atoi(v)
	default:
		return s, fmt.Errorf("%w: write.parquet.page-version %q", errNotMergeable, v)
	}
	level := props.GetInt(table.ParquetCompressionLevelKey, table.ParquetCompressionLevelDefault)
	switch c := props.Get(table.ParquetCompressionKey, table.ParquetCompressionDefault); c {
	case "zstd":
		z := &zstd.Codec{}
		if level > 0 {
			z.Level = zstdLevel(level)
		}
		s.codec = z
	case "snappy":
		s.codec = &parquet.Snappy
	case "gzip":
		s.codec = &parquet.Gzip
	case "uncompressed":
		s.codec = &parquet.Uncompressed
	case "lz4raw":
		s.codec = &parquet.Lz4Raw
	default:
		return s, fmt.Errorf("%w: codec %q", errNotMergeable, c)
	}
	return s, nil
}

// zstdLevel maps a zstd level (1–22) onto the four speeds of the Go
// encoder, as the encoder's own documentation pairs them.
func zstdLevel(level int) zstd.Level {
	switch {
	case level <= 1:
		return zstd.SpeedFastest
	case level <= 4:
		return zstd.SpeedDefault
	case level <= 8:
		return zstd.SpeedBetterCompression
	}
	return zstd.SpeedBestCompression
}

// mergeable reports, from metadata alone, whether a group can take the
// merge path; the files' own schemas are checked as they are read.
func mergeable(meta table.Metadata, tasks []table.FileScanTask, target int64) error {
	if meta.Version() > 2 {
		// Row lineage: rewritten rows must keep their row IDs, which is
		// iceberg-go's writer's business.
		return fmt.Errorf("%w: format version %d", errNotMergeable, meta.Version())
	}
	sc := meta.CurrentSchema()
	for _, f := range sc.Fields() {
		if _, ok := boundKinds[f.Type.String()]; !ok {
			return fmt.Errorf("%w: column %s has type %s", errNotMergeable, f.Name, f.Type)
		}
	}
	for _, t := range tasks {
		df := t.File
		switch {
		case len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles) > 0:
			return fmt.Errorf("%w: %s has row-level deletes", errNotMergeable, df.FilePath())
		case df.FileFormat() != iceberg.ParquetFile:
			return fmt.Errorf("%w: %s is %s", errNotMergeable, df.FilePath(), df.FileFormat())
		case int(df.SpecID()) != meta.DefaultPartitionSpec():
			return fmt.Errorf("%w: %s has an older partition spec", errNotMergeable, df.FilePath())
		case df.FileSizeBytes() > target:
			// Input row groups are never split, so a file over the
			// target is left to the general path, which can.
			return fmt.Errorf("%w: %s is larger than the target", errNotMergeable, df.FilePath())
		}
		// Metrics name the columns a file holds: other columns mean an
		// older schema, caught here before anything is read.
		vc := df.ValueCounts()
		if len(vc) != len(sc.Fields()) {
			return fmt.Errorf("%w: %s has metrics for other columns than the schema's", errNotMergeable, df.FilePath())
		}
		for _, f := range sc.Fields() {
			if _, ok := vc[f.ID]; !ok {
				return fmt.Errorf("%w: %s has no column %s", errNotMergeable, df.FilePath(), f.Name)
			}
		}
	}
	return nil
}

// mergeGroup rewrites a group by merging its files column by column. It
// returns an error wrapping errNotMergeable when the group must take the
// general path; an output it had begun is never returned, and the run
// removes it with its other uncommitted files.
func mergeGroup(ctx context.Context, tbl *table.Table, tasks []table.FileScanTask, target, wholeFileBytes int64) (table.CompactionGroupResult, error) {
	if wholeFileBytes <= 0 {
		wholeFileBytes = defaultWholeFileBytes
	}
	res := table.CompactionGroupResult{}
	meta := tbl.Metadata()
	if err := mergeable(meta, tasks, target); err != nil {
		return res, err
	}
	set, err := mergeSettingsOf(meta.Properties())
	if err != nil {
		return res, err
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return res, err
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return res, fmt.Errorf("the file system of %s cannot write", tbl.Location())
	}
	spec := meta.PartitionSpec()
	sc := meta.CurrentSchema()
	// Outputs go beside the first input, in its partition's directory.
	// (path.Dir would collapse the "//" of a URL.)
	first := tasks[0].File.FilePath()
	dir := first[:strings.LastIndexByte(first, '/')]

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	files := prefetch(ctx, fsys, tasks, wholeFileBytes)
	defer func() {
		cancel()
		for f := range files { // release what was read ahead
			f.close()
		}
	}()

	var out *mergeOutput
	defer func() {
		if out != nil { // abandoned by an error
			out.file.Close()
		}
	}()
	var schema, outSchema *parquet.Schema
	var inputs []iceberg.DataFile
	finish := func() error {
		if out == nil {
			return nil
		}
		df, err := out.close(spec, sc, inputs)
		out, inputs = nil, nil
		if err != nil {
			return err
		}
		res.NewDataFiles = append(res.NewDataFiles, df)
		return nil
	}
	for f := range files {
		if f.err != nil {
			return res, f.err
		}
		// Every input must be the table's schema (names, field IDs,
		// types) and the same Parquet schema as the first (optionality,
		// logical types).
		if err := matchSchema(sc, f.pf.Schema()); err != nil {
			f.close()
			return res, fmt.Errorf("%s: %w", f.df.FilePath(), err)
		}
		if schema == nil {
			schema = f.pf.Schema()
			outSchema = outputSchema(schema, set)
		} else if !parquet.EqualNodes(schema, f.pf.Schema()) {
			f.close()
			return res, fmt.Errorf("%w: %s has another Parquet schema than %s", errNotMergeable, f.df.FilePath(), tasks[0].File.FilePath())
		}
		// Roll like iceberg-go's writer does, once the file has reached
		// the target: the planner's groups spill over it by one file.
		if out != nil && out.inputBytes >= target {
			if err := finish(); err != nil {
				f.close()
				return res, err
			}
		}
		if out == nil {
			name := dir + "/" + uuid.NewString() + ".parquet"
			if out, err = newMergeOutput(wfs, name, outSchema, set); err != nil {
				f.close()
				return res, err
			}
		}
		err := out.copyFile(f.pf)
		f.close()
		if err != nil {
			return res, fmt.Errorf("merge %s: %w", f.df.FilePath(), err)
		}
		out.inputBytes += f.df.FileSizeBytes()
		inputs = append(inputs, f.df)
		res.OldDataFiles = append(res.OldDataFiles, f.df)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if len(res.OldDataFiles) != len(tasks) {
		return res, fmt.Errorf("merge read %d of the group's %d files", len(res.OldDataFiles), len(tasks))
	}
	if err := finish(); err != nil {
		return res, err
	}
	return res, nil
}

// matchSchema checks that a file's Parquet schema is the table's current
// schema, flat: one top-level column per field, same field IDs, names and
// physical types, in order.
func matchSchema(sc *iceberg.Schema, ps *parquet.Schema) error {
	fields := sc.Fields()
	cols := ps.Fields()
	if len(cols) != len(fields) {
		return fmt.Errorf("%w: the file has %d columns, the schema %d", errNotMergeable, len(cols), len(fields))
	}
	for i, f := range fields {
		c := cols[i]
		if !c.Leaf() || c.Repeated() || c.ID() != f.ID || c.Name() != f.Name {
			return fmt.Errorf("%w: column %d of the file is %q (id %d), the schema's is %q (id %d)", errNotMergeable, i, c.Name(), c.ID(), f.Name, f.ID)
		}
		if want := boundKinds[f.Type.String()].kind; c.Type().Kind() != want {
			return fmt.Errorf("%w: column %s is %v in the file, %s in the schema", errNotMergeable, f.Name, c.Type().Kind(), f.Type)
		}
	}
	return nil
}

// outputSchema is the inputs' schema with the table's codec in place of
// the inputs' own: parquet-go gives a file's schema the codec and encoding
// of its column chunks, and a writer would keep them. Each column keeps
// the encoding its first input was written with — dictionary or not, the
// writer that saw the data chose — except that a dictionary is used only
// when the table allows them. The columns keep the inputs' order
// (parquet.Group would sort them by name).
func outputSchema(in *parquet.Schema, set mergeSettings) *parquet.Schema {
	cols := in.Fields()
	fields := make([]parquet.Field, len(cols))
	for i, c := range cols {
		enc := c.Encoding()
		switch {
		case enc == nil:
			enc = &parquet.Plain
		case enc.Encoding() == format.RLEDictionary || enc.Encoding() == format.PlainDictionary:
			enc = &parquet.RLEDictionary
			if !set.dictionary {
				enc = &parquet.Plain
			}
		}
		fields[i] = outputColumn{Node: parquet.Compressed(parquet.Encoded(c, enc), set.codec), name: c.Name()}
	}
	return parquet.NewSchema(in.Name(), orderedGroup{fields: fields})
}

// orderedGroup is a group node whose fields keep the order given.
type orderedGroup struct {
	parquet.Group // the other methods of a group node
	fields        []parquet.Field
}

func (g orderedGroup) Fields() []parquet.Field { return g.fields }

// outputColumn names a re-encoded column. Its values are written column
// by column, never taken from Go values, so Value is never called.
type outputColumn struct {
	parquet.Node
	name string
}

func (c outputColumn) Name() string { return c.name }

func (c outputColumn) Value(reflect.Value) reflect.Value { return reflect.Value{} }

// openedFile is one input, read ahead.
type openedFile struct {
	df    iceberg.DataFile
	pf    *parquet.File
	close func()
	err   error
}

// defaultWholeFileBytes is the size up to which an input is read in one
// request: small files are the merge's business, and one read per file
// (one GET on object storage) beats many ranged reads. Larger files are
// read through 4 MiB buffers, not parquet-go's 4 KiB default, which would
// mean a GET per 4 KiB on object storage.
const (
	defaultWholeFileBytes = 16 << 20
	readBufferBytes       = 4 << 20
)

// prefetch opens the tasks' files in order on another goroutine, reading
// up to two ahead of the writer, so that reading overlaps encoding. The
// buffers of whole-file reads are recycled once the writer closes a file.
func prefetch(ctx context.Context, fsys icebergio.IO, tasks []table.FileScanTask, wholeFileBytes int64) <-chan openedFile {
	ch := make(chan openedFile, 2)
	free := make(chan []byte, 4)
	go func() {
		defer close(ch)
		for _, t := range tasks {
			f := openInput(fsys, t.File, wholeFileBytes, free)
			select {
			case ch <- f:
				if f.err != nil {
					return
				}
			case <-ctx.Done():
				f.close()
				return
			}
		}
	}()
	return ch
}

func openInput(fsys icebergio.IO, df iceberg.DataFile, wholeFileBytes int64, free chan []byte) openedFile {
	o := openedFile{df: df, close: func() {}}
	fail := func(err error) openedFile {
		o.close()
		o.err = fmt.Errorf("read %s: %w", df.FilePath(), err)
		return o
	}
	f, err := fsys.Open(df.FilePath())
	if err != nil {
		return fail(err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fail(err)
	}
	size := st.Size()
	var r io.ReaderAt = f
	if size <= wholeFileBytes {
		var buf []byte
		select {
		case buf = <-free:
		default:
		}
		if int64(cap(buf)) < size {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		o.close = func() {
			select {
			case free <- buf:
			default:
			}
		}
		_, err = io.ReadFull(f, buf)
		f.Close()
		if err != nil {
			return fail(err)
		}
		r = bytes.NewReader(buf)
	} else {
		o.close = func() { f.Close() }
	}
	opts := []parquet.FileOption{parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true)}
	if size > wholeFileBytes {
		opts = append(opts, parquet.ReadBufferSize(readBufferBytes))
	}
	if o.pf, err = parquet.OpenFile(r, size, opts...); err != nil {
		return fail(err)
	}
	if o.pf.NumRows() != df.Count() {
		return fail(fmt.Errorf("the file holds %d rows, its manifest entry %d", o.pf.NumRows(), df.Count()))
	}
	return o
}

// mergeOutput is one output file being written.
type mergeOutput struct {
	path       string
	file       icebergio.FileWriter
	counter    *countingWriter
	w          *parquet.Writer
	set        mergeSettings
	rgBytes    int64 // input bytes in the open row group
	rgRows     int64
	inputBytes int64
	rows       int64
	lanes      [2][]int           // columns by lane, balanced on the first input
	values     [2][]parquet.Value // one decoding buffer per lane
}

func newMergeOutput(wfs icebergio.WriteFileIO, name string, schema *parquet.Schema, set mergeSettings) (*mergeOutput, error) {
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
		parquet.CreatedBy("icekeeper", "", ""),
	}
	if set.dictionary {
		// Dictionary-encoded columns fall back to plain pages once their
		// dictionary passes the table's dict-size-bytes, so that a
		// high-cardinality column never carries a dictionary page
		// readers refuse.
		opts = append(opts, parquet.DictionaryMaxBytes(set.dictBytes))
	}
	cw := &countingWriter{w: f}
	o := &mergeOutput{path: name, file: f, counter: cw, w: parquet.NewWriter(cw, opts...), set: set}
	for i := range o.values {
		o.values[i] = make([]parquet.Value, writeBatch)
	}
	return o, nil
}

// copyFile appends every row group of pf, column by column, on two lanes
// of columns at once: distinct column writers share no state until the
// row group is flushed.
func (o *mergeOutput) copyFile(pf *parquet.File) error {
	for r, rg := range pf.RowGroups() {
		var size int64
		for _, c := range pf.Metadata().RowGroups[r].Columns {
			size += c.MetaData.TotalCompressedSize
		}
		if o.rgRows > 0 && (o.rgBytes+size > o.set.rowGroupBytes || o.rgRows+rg.NumRows() > o.set.rowGroupRows) {
			if err := o.w.Flush(); err != nil {
				return err
			}
			o.rgBytes, o.rgRows = 0, 0
		}
		if o.lanes[0] == nil {
			o.lanes = balanceLanes(pf.Metadata().RowGroups[r].Columns)
		}
		writers := o.w.ColumnWriters()
		chunks := rg.ColumnChunks()
		p := pool.New().WithErrors()
		for l, lane := range o.lanes {
			p.Go(func() error {
				for _, c := range lane {
					if err := copyChunk(writers[c], chunks[c], o.values[l]); err != nil {
						return err
					}
				}
				return nil
			})
		}
		if err := p.Wait(); err != nil {
			return err
		}
		o.rgBytes += size
		o.rgRows += rg.NumRows()
		o.rows += rg.NumRows()
	}
	return nil
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

// copyChunk decodes a column chunk page by page into w. Columns are flat,
// so each value is a row.
func copyChunk(w *parquet.ColumnWriter, cc parquet.ColumnChunk, values []parquet.Value) error {
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
		vr := p.Values()
		for {
			n, err := vr.ReadValues(values)
			if n > 0 {
				if _, werr := w.WriteRowValues(values[:n]); werr != nil {
					parquet.Release(p)
					return werr
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				parquet.Release(p)
				return err
			}
		}
		parquet.Release(p)
	}
}

// close finishes the file and describes it for the manifest: counts and
// sizes from its own footer, bounds merged from the inputs' metrics.
func (o *mergeOutput) close(spec iceberg.PartitionSpec, sc *iceberg.Schema, inputs []iceberg.DataFile) (iceberg.DataFile, error) {
	if err := o.w.Close(); err != nil {
		o.file.Close()
		return nil, fmt.Errorf("write %s: %w", o.path, err)
	}
	if err := o.file.Close(); err != nil {
		return nil, fmt.Errorf("close %s: %w", o.path, err)
	}
	md := o.w.File().Metadata()
	fields := sc.Fields()
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
			id := fields[i].ID
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
	b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, o.path, iceberg.ParquetFile, inputs[0].Partition(), nil, nil, o.rows, o.counter.n)
	if err != nil {
		return nil, err
	}
	lower, upper := mergeBounds(sc, inputs)
	b.ColumnSizes(sizes).ValueCounts(valueCounts).NullValueCounts(nullCounts).
		LowerBoundValues(lower).UpperBoundValues(upper).SplitOffsets(splits)
	if nan := sumCounts(inputs, iceberg.DataFile.NaNValueCounts); len(nan) > 0 {
		b.NaNValueCounts(nan)
	}
	return b.Build(), nil
}

// countingWriter counts the bytes of the file being written.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
