package merge

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/icekeeper/icekeeper/internal/version"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
	"github.com/sourcegraph/conc/pool"
)

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
		createdBy("icekeeper version " + version.Version() + " (build " + version.Commit() + ")"),
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

// createdBy sets the footer's created_by in parquet-mr's form, "APP version
// V (build B)", which readers parse to know a writer's bugs; parquet-go's
// CreatedBy option leaves out the space before "(build".
type createdBy string

func (c createdBy) ConfigureWriter(cfg *parquet.WriterConfig) { cfg.CreatedBy = string(c) }
