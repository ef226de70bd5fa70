package rebase

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/parquet-go/parquet-go"

	"github.com/icekeeper/icekeeper/internal/objects"
)

// openForFooter opens df to read its footer: in ranges on S3, else
// through fs.
func openForFooter(ctx context.Context, fs icebergio.IO, location string, df iceberg.DataFile) (io.ReaderAt, int64, func(), error) {
	if rr, ok := objects.Ranged(ctx, fs, location, df.FilePath(), df.FileSizeBytes()); ok {
		return rr, df.FileSizeBytes(), func() {}, nil
	}
	f, err := fs.Open(df.FilePath())
	if err != nil {
		return nil, 0, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, nil, err
	}
	return f, st.Size(), func() { f.Close() }, nil
}

// maxPageBytes is the largest page readers are sure to accept: arrow-go
// refuses pages over 64 MiB, and a file written with one cannot be read by
// it at all.
const maxPageBytes = 64 << 20

// VerifyOutput reads a written data file's footer with parquet-go before
// the file is committed: the row count the manifest will claim must be the
// file's, and no page may be larger than readers accept. For iceberg-go's
// outputs parquet-go is a second, independent Parquet implementation; the
// merge path's outputs are its own, and their close also checks every
// column's value count.
//
// On S3 the footer is read with ranged GETs of the table's bucket
// (objects.Ranged), without the GET of the whole object an open makes:
// its bytes count against a rewrite whose row groups the store copied.
func VerifyOutput(ctx context.Context, fs icebergio.IO, location string, df iceberg.DataFile) error {
	r, size, closeFn, err := openForFooter(ctx, fs, location, df)
	if err != nil {
		return fmt.Errorf("verify %s: %w", df.FilePath(), err)
	}
	defer closeFn()
	pf, err := parquet.OpenFile(r, size, parquet.SkipBloomFilters(true))
	if err != nil {
		return fmt.Errorf("verify %s: not a readable Parquet file: %w", df.FilePath(), err)
	}
	if pf.NumRows() != df.Count() {
		return fmt.Errorf("verify %s: the file holds %d rows, the manifest entry would claim %d", df.FilePath(), pf.NumRows(), df.Count())
	}
	offsets := pf.OffsetIndexes()
	chunk := 0
	for rg, g := range pf.Metadata().RowGroups {
		for _, c := range g.Columns {
			md := c.MetaData
			if md.DictionaryPageOffset > 0 && md.DataPageOffset-md.DictionaryPageOffset > maxPageBytes {
				return fmt.Errorf("verify %s: row group %d column %v has a %d-byte dictionary page, over the %d readers accept", df.FilePath(), rg, md.PathInSchema, md.DataPageOffset-md.DictionaryPageOffset, maxPageBytes)
			}
			if chunk < len(offsets) {
				for _, p := range offsets[chunk].PageLocations {
					if p.CompressedPageSize > maxPageBytes {
						return fmt.Errorf("verify %s: row group %d column %v has a %d-byte page, over the %d readers accept", df.FilePath(), rg, md.PathInSchema, p.CompressedPageSize, maxPageBytes)
					}
				}
			}
			// Without a page index, data pages cannot be told apart from
			// the footer alone; the writer's page size bound is trusted.
			chunk++
		}
	}
	return nil
}
