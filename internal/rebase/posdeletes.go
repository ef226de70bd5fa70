package rebase

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/parquet-go/parquet-go"
)

// PosDeleteRow is a row of a position delete file, with the field IDs the
// spec reserves for its columns.
type PosDeleteRow struct {
	FilePath string `parquet:"file_path,id(2147483546)"`
	Pos      int64  `parquet:"pos,id(2147483545)"`
}

// PosFieldID is the field ID of a position delete file's pos column.
const PosFieldID = 2147483545

// ReadPositionDeletes reads a Parquet position delete file: the positions
// it deletes, by data file path, checked against its manifest entry's
// record count.
func ReadPositionDeletes(fs icebergio.IO, df iceberg.DataFile) (map[string][]int64, error) {
	if df.FileFormat() != iceberg.ParquetFile {
		return nil, fmt.Errorf("position delete file %s is %s; only Parquet is read", df.FilePath(), df.FileFormat())
	}
	f, err := fs.Open(df.FilePath())
	if err != nil {
		return nil, fmt.Errorf("open position delete file %s: %w", df.FilePath(), err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read position delete file %s: %w", df.FilePath(), err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("read position delete file %s: %w", df.FilePath(), err)
	}
	if pf.NumRows() != df.Count() {
		return nil, fmt.Errorf("position delete file %s holds %d rows, its manifest entry %d", df.FilePath(), pf.NumRows(), df.Count())
	}
	r := parquet.NewGenericReader[PosDeleteRow](pf)
	defer r.Close()
	out := map[string][]int64{}
	buf := make([]PosDeleteRow, 1024)
	for {
		n, err := r.Read(buf)
		for _, row := range buf[:n] {
			out[row.FilePath] = append(out[row.FilePath], row.Pos)
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read position delete file %s: %w", df.FilePath(), err)
		}
	}
}
