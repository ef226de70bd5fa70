package merge

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/gzip"

	"github.com/icekeeper/icekeeper/internal/s3write"
	"github.com/icekeeper/icekeeper/planner"
)

// mergeSettings are the table's Parquet write properties the merge honours.
type mergeSettings struct {
	codec         compress.Codec
	pageVersion   int
	pageBytes     int
	dictionary    bool
	dictBytes     int64
	rowGroupBytes int64
	rowGroupRows  int64
	// copyBytes is the size from which an input row group is copied as
	// it is (planner.CopyThreshold).
	copyBytes int64
	// storageCopies lets the storage copy healthy row groups itself
	// (Merger.NoStorageCopies unset); copies is what the run knows of
	// its stores' part copies (nil: nothing).
	storageCopies bool
	copies        *s3write.Copies
}

// mergeSettingsOf reads the table's write properties, with iceberg-go's
// defaults, with m's compressors (nil: new ones). A property the merge does not implement (bloom filters, per-
// column dictionary switches, a codec parquet-go lacks) makes the group
// not mergeable, so that iceberg-go's writer honours it instead.
func mergeSettingsOf(props iceberg.Properties, m *Merger) (mergeSettings, error) {
	for k := range props {
		if strings.HasPrefix(k, table.ParquetBloomFilterColumnEnabledKeyPrefix+".") || strings.HasPrefix(k, "write.parquet.dict-encoding-enabled.column.") {
			return mergeSettings{}, fmt.Errorf("%w: table property %s", ErrNotMergeable, k)
		}
	}
	s := mergeSettings{
		pageBytes:     props.GetInt(table.ParquetPageSizeBytesKey, table.ParquetPageSizeBytesDefault),
		dictionary:    props.GetBool("parquet.enable.dictionary", true),
		dictBytes:     int64(props.GetInt(table.ParquetDictSizeBytesKey, table.ParquetDictSizeBytesDefault)),
		rowGroupBytes: int64(props.GetInt(table.ParquetRowGroupSizeBytesKey, table.ParquetRowGroupSizeBytesDefault)),
		rowGroupRows:  planner.RowGroupRows(props),
		copyBytes:     planner.CopyThreshold(props),
		storageCopies: m == nil || !m.NoStorageCopies,
	}
	if m != nil {
		s.copies = m.storageCopies()
	}
	switch v := props.Get("write.parquet.page-version", "2"); v {
	case "1", "2":
		s.pageVersion, _ = strconv.Atoi(v)
	default:
		return s, fmt.Errorf("%w: write.parquet.page-version %q", ErrNotMergeable, v)
	}
	level := props.GetInt(table.ParquetCompressionLevelKey, table.ParquetCompressionLevelDefault)
	switch c := props.Get(table.ParquetCompressionKey, table.ParquetCompressionDefault); c {
	case "zstd":
		if m != nil {
			s.codec = m.zstdCodec(level)
		} else {
			s.codec = newZstdCodec(level)
		}
	case "snappy":
		s.codec = &parquet.Snappy
	case "gzip":
		g := &gzip.Codec{Level: gzip.DefaultCompression}
		if level >= 0 {
			g.Level = level
		}
		s.codec = g
	case "uncompressed":
		s.codec = &parquet.Uncompressed
	default:
		return s, fmt.Errorf("%w: codec %q", ErrNotMergeable, c)
	}
	return s, nil
}
