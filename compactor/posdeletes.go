package compactor

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
	"github.com/parquet-go/parquet-go"

	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/internal/version"
)

// deleteWriter writes the merged deletes of data files: on v2 one
// file-scoped Parquet position delete file per data file, on v3 one
// deletion vector per data file, all in one Puffin file.
type deleteWriter struct {
	fs     icebergio.WriteFileIO
	locs   table.LocationProvider
	meta   table.Metadata
	name   string // a prefix unique to the run
	dvs    *dv.DVWriter
	n      int
	out    []iceberg.DataFile
	puffin bool
}

func newDeleteWriter(fs icebergio.WriteFileIO, locs table.LocationProvider, meta table.Metadata, name string) *deleteWriter {
	w := &deleteWriter{fs: fs, locs: locs, meta: meta, name: name, puffin: meta.Version() >= 3}
	if w.puffin {
		w.dvs = dv.NewDVWriter(fs, func(id int32) *iceberg.PartitionSpec { return meta.PartitionSpecByID(int(id)) })
	}
	return w
}

// add writes, or on v3 queues, the deletes of data file df: positions,
// sorted and without repeats.
func (w *deleteWriter) add(df iceberg.DataFile, positions []int64) error {
	if len(positions) == 0 {
		return nil
	}
	if w.puffin {
		return w.dvs.Add(df.FilePath(), positions, df.SpecID(), df.Partition())
	}
	spec := w.meta.PartitionSpecByID(int(df.SpecID()))
	if spec == nil {
		return fmt.Errorf("data file %s has partition spec %d, which the table does not have", df.FilePath(), df.SpecID())
	}
	path := w.locs.NewDataLocation(fmt.Sprintf("%s-%05d-deletes.parquet", w.name, w.n))
	w.n++
	var buf bytes.Buffer
	pw := parquet.NewGenericWriter[rebase.PosDeleteRow](&buf, parquet.Compression(&parquet.Zstd),
		parquet.CreatedBy("icekeeper", version.Version(), version.Commit()))
	rows := make([]rebase.PosDeleteRow, len(positions))
	for i, p := range positions {
		rows[i] = rebase.PosDeleteRow{FilePath: df.FilePath(), Pos: p}
	}
	if _, err := pw.Write(rows); err != nil {
		return fmt.Errorf("write position deletes %s: %w", path, err)
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("write position deletes %s: %w", path, err)
	}
	if err := rebase.WriteFile(w.fs, path, buf.Bytes()); err != nil {
		return fmt.Errorf("write position deletes %s: %w", path, err)
	}
	b, err := iceberg.NewDataFileBuilder(*spec, iceberg.EntryContentPosDeletes, path, iceberg.ParquetFile, df.Partition(), nil, nil, int64(len(positions)), int64(buf.Len()))
	if err != nil {
		return err
	}
	pathBytes := []byte(df.FilePath())
	lo, hi := make([]byte, 8), make([]byte, 8)
	binary.LittleEndian.PutUint64(lo, uint64(positions[0]))
	binary.LittleEndian.PutUint64(hi, uint64(positions[len(positions)-1]))
	n := int64(len(positions))
	b.ReferencedDataFile(df.FilePath()).
		ValueCounts(map[int]int64{rebase.FilePathFieldID: n, rebase.PosFieldID: n}).
		NullValueCounts(map[int]int64{rebase.FilePathFieldID: 0, rebase.PosFieldID: 0}).
		LowerBoundValues(map[int][]byte{rebase.FilePathFieldID: pathBytes, rebase.PosFieldID: lo}).
		UpperBoundValues(map[int][]byte{rebase.FilePathFieldID: pathBytes, rebase.PosFieldID: hi})
	w.out = append(w.out, b.Build())
	return nil
}

// finish writes the Puffin file of the queued deletion vectors (v3) and
// returns every delete file written.
func (w *deleteWriter) finish(ctx context.Context) ([]iceberg.DataFile, error) {
	if !w.puffin {
		return w.out, nil
	}
	path := w.locs.NewDataLocation(w.name + "-deletes.puffin")
	files, err := w.dvs.Flush(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("write deletion vectors %s: %w", path, err)
	}
	return files, nil
}

// sortedUnique sorts positions and drops repeats.
func sortedUnique(positions []int64) []int64 {
	slices.Sort(positions)
	return slices.Compact(positions)
}
