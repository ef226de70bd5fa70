package statistics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"sync/atomic"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/parquet-go/parquet-go"
	"github.com/sourcegraph/conc/stream"

	"github.com/icekeeper/icekeeper/internal/parquetcols"
	"github.com/icekeeper/icekeeper/internal/theta"
	"github.com/icekeeper/icekeeper/planner"
)

// sketcher feeds the values of the chosen columns of data files into one
// update sketch per column, counting what it reads.
type sketcher struct {
	cols     []planner.StatisticsColumn
	sketches []*theta.UpdateSketch
	files    atomic.Int64
	bytes    atomic.Int64
	rows     atomic.Int64
}

func newSketcher(cols []planner.StatisticsColumn) *sketcher {
	s := &sketcher{cols: cols, sketches: make([]*theta.UpdateSketch, len(cols))}
	for i := range s.sketches {
		s.sketches[i] = theta.NewUpdateSketch()
	}
	return s
}

// countingReader counts the bytes read through it: what a run's figures
// and its benchmark call bytes read.
type countingReader struct {
	r io.ReaderAt
	n *atomic.Int64
}

func (c countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

// wholeFileBytes is the size up to which a data file is read with one
// request, footer included, when the chosen columns are most of it (or
// the file is at most smallFileBytes); otherwise it is read in ranges as
// its chosen columns are decoded: a request per column chunk, but not the
// bytes of the columns left out.
const (
	wholeFileBytes = 8 << 20
	smallFileBytes = 1 << 20
)

// readWhole reports whether df is read with one request: small, or small
// enough with the chosen columns at least half its bytes by its manifest
// entry's column sizes (a file without them is read whole).
func (s *sketcher) readWhole(df iceberg.DataFile) bool {
	size := df.FileSizeBytes()
	if size > wholeFileBytes {
		return false
	}
	sizes := df.ColumnSizes()
	if size <= smallFileBytes || len(sizes) == 0 {
		return true
	}
	var chosen int64
	for _, c := range s.cols {
		chosen += sizes[c.FieldID]
	}
	return 2*chosen >= size
}

// filesAhead is how many data files are fetched at once ahead of the one
// being decoded: on object storage their round trips overlap.
const filesAhead = 4

// addAll reads files' chosen columns in the order of files: fetching up
// to filesAhead of them at once, decoding one after another, so that the
// sketches see the values as they would reading the files one by one.
func (s *sketcher) addAll(ctx context.Context, fs icebergio.IO, files []iceberg.DataFile) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var first error // set and read by the callbacks only, which run one at a time
	st := stream.New().WithMaxGoroutines(filesAhead)
	for _, df := range files {
		st.Go(func() stream.Callback {
			in, err := s.fetch(ctx, fs, df)
			return func() {
				defer in.close()
				if first == nil && err == nil {
					err = s.add(df, in)
				}
				if first == nil && err != nil {
					first = err
					cancel()
				}
			}
		})
	}
	st.Wait()
	return first
}

// fetched is a data file as fetch has it: its bytes when it is small,
// else the open file.
type fetched struct {
	r     io.ReaderAt
	size  int64
	close func()
}

// fetch opens data file df and, when readWhole says so, reads it whole.
// A file that is not Parquet is an error: a sketch built from it would
// describe another table.
func (s *sketcher) fetch(ctx context.Context, fs icebergio.IO, df iceberg.DataFile) (fetched, error) {
	none := fetched{close: func() {}}
	path := df.FilePath()
	if err := ctx.Err(); err != nil {
		return none, err
	}
	if df.FileFormat() != iceberg.ParquetFile {
		return none, fmt.Errorf("data file %s is %s: only Parquet data files are read", path, df.FileFormat())
	}
	f, err := fs.Open(path)
	if err != nil {
		return none, fmt.Errorf("open data file %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return none, fmt.Errorf("open data file %s: %w", path, err)
	}
	size := fi.Size()
	if size > wholeFileBytes || !s.readWhole(df) {
		return fetched{r: countingReader{f, &s.bytes}, size: size, close: func() { f.Close() }}, nil
	}
	defer f.Close()
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return none, fmt.Errorf("read data file %s: %w", path, err)
	}
	s.bytes.Add(size)
	return fetched{r: bytes.NewReader(b), size: size, close: func() {}}, nil
}

// add reads the chosen columns of data file df, fetched as in. A file
// whose row count differs from its manifest entry's is an error: a
// sketch built from it would describe another table.
func (s *sketcher) add(df iceberg.DataFile, in fetched) error {
	path := df.FilePath()
	pf, err := parquet.OpenFile(in.r, in.size, parquet.SkipBloomFilters(true),
		parquet.SkipPageIndex(true), parquet.ReadBufferSize(1<<20))
	if err != nil {
		return fmt.Errorf("read data file %s: %w", path, err)
	}
	if pf.NumRows() != df.Count() {
		return fmt.Errorf("data file %s holds %d rows, its manifest entry %d", path, pf.NumRows(), df.Count())
	}
	leaves := parquetcols.TopLevel(pf.Schema())
	var buf []byte
	for i, c := range s.cols {
		leaf, ok := leaves[c.FieldID]
		if !ok {
			continue // added to the schema after the file: all null
		}
		sk := s.sketches[i]
		for _, rg := range pf.RowGroups() {
			err := columnValues(rg.ColumnChunks()[leaf], func(v parquet.Value) error {
				if v.IsNull() {
					return nil
				}
				var err error
				if buf, err = serialize(buf[:0], c.Type, v); err != nil {
					return err
				}
				sk.Update(buf)
				return nil
			})
			if err != nil {
				return fmt.Errorf("read column %s of data file %s: %w", c.Name, path, err)
			}
		}
	}
	s.files.Add(1)
	s.rows.Add(df.Count())
	return nil
}

// serialize appends v in Iceberg's single-value serialization of type t,
// the bytes the sketch hashes. The file's physical type may be narrower
// than the table's (an int column promoted to long, a float to double):
// the value is serialized as the table's type, as Iceberg reads it.
func serialize(buf []byte, t iceberg.PrimitiveType, v parquet.Value) ([]byte, error) {
	switch t := t.(type) {
	case iceberg.BooleanType:
		return theta.Bool(buf, v.Boolean()), nil
	case iceberg.Int32Type, iceberg.DateType:
		return theta.Int(buf, v.Int32()), nil
	case iceberg.Int64Type, iceberg.TimeType, iceberg.TimestampType, iceberg.TimestampTzType,
		iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return theta.Long(buf, integer(v)), nil
	case iceberg.Float32Type:
		return theta.Float(buf, v.Float()), nil
	case iceberg.Float64Type:
		if v.Kind() == parquet.Float {
			return theta.Double(buf, float64(v.Float())), nil
		}
		return theta.Double(buf, v.Double()), nil
	case iceberg.StringType, iceberg.BinaryType, iceberg.FixedType, iceberg.UUIDType:
		return theta.Binary(buf, v.ByteArray()), nil
	case iceberg.DecimalType:
		switch v.Kind() {
		case parquet.Int32, parquet.Int64:
			return theta.DecimalInt64(buf, integer(v)), nil
		case parquet.ByteArray, parquet.FixedLenByteArray:
			return theta.Decimal(buf, twosComplement(v.ByteArray())), nil
		}
		return nil, fmt.Errorf("decimal stored as %s", v.Kind())
	default:
		return nil, fmt.Errorf("no single-value serialization of %s", t)
	}
}

// integer is an integer value of either width.
func integer(v parquet.Value) int64 {
	if v.Kind() == parquet.Int32 {
		return int64(v.Int32())
	}
	return v.Int64()
}

// twosComplement reads big-endian two's complement bytes.
func twosComplement(b []byte) *big.Int {
	n := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return n
}

// columnValues calls fn with every value of a flat column chunk.
func columnValues(cc parquet.ColumnChunk, fn func(parquet.Value) error) error {
	pages := cc.Pages()
	defer pages.Close()
	values := make([]parquet.Value, 1024)
	for {
		p, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		vr := p.Values()
		for {
			n, err := vr.ReadValues(values)
			for _, v := range values[:n] {
				if ferr := fn(v); ferr != nil {
					parquet.Release(p)
					return ferr
				}
			}
			if errors.Is(err, io.EOF) {
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
