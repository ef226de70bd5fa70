package planner

import (
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// CopyThreshold is the compressed size from which an input row group is
// copied byte for byte by the merge path rather than decoded and encoded
// again: half the table's row-group target, write.parquet.row-group-size-
// bytes (Iceberg's default 128 MB when unset). At half the target a row
// group is already worth a reader's seek, and re-encoding it would cost the
// whole decode and encode to gain at most a factor of two in row-group
// size. (Amoro copies row groups only when their average is 8 MB or more;
// this rule is per row group, so that one file can keep its healthy row
// groups and have its tiny ones merged.)
func CopyThreshold(props iceberg.Properties) int64 {
	return int64(props.GetInt(table.ParquetRowGroupSizeBytesKey, table.ParquetRowGroupSizeBytesDefault)) / 2
}

// RowGroupRows is the table's row limit for a row group,
// write.parquet.row-group-limit (iceberg-go's default when unset).
func RowGroupRows(props iceberg.Properties) int64 {
	return int64(props.GetInt(table.ParquetRowGroupLimitKey, table.ParquetRowGroupLimitDefault))
}

// RowGroupFull reports whether a row group of size compressed bytes and
// rows rows is full enough to copy: it reached copyBytes (CopyThreshold)
// or the table's row limit, and it does not pass the limit, which the
// output must honour. A writer that cuts row groups by rows (iceberg-go's
// does, and a Flink job with a row limit) writes row groups full by rows
// whatever their bytes; re-encoding one would only cut it the same way
// again.
func RowGroupFull(size, rows, copyBytes, rowLimit int64) bool {
	if rows > rowLimit {
		return false
	}
	return size >= copyBytes || rows == rowLimit
}

// RowGroupEstimate is what the plan expects the merge path to do with a
// group's row groups, from the manifests' split offsets (one per row
// group): how many there are, and how many are full (RowGroupFull). The
// merge decides again per row group from the files' footers, where it
// also checks the codec, which manifests do not record.
type RowGroupEstimate struct {
	RowGroups int `json:"rowGroups"`
	ToCopy    int `json:"toCopy"`
}

// EstimateCopies estimates a group's row groups from its files' split
// offsets. A row group's size is the distance to the next one's offset;
// the last one's runs to the end of the file, footer included, which a
// footer of a few KiB does not change for row groups of megabytes. A file
// without split offsets counts as one row group of its size. Manifests
// do not record rows per row group: a file of n rows counts its first
// n / limit row groups as full by rows, as a writer that cuts by rows
// leaves them. On format version 3 a file holding the lineage of only
// some of its rows is re-encoded (see lineageCopies).
func EstimateCopies(meta table.Metadata, tasks []table.FileScanTask) RowGroupEstimate {
	threshold, limit := CopyThreshold(meta.Properties()), RowGroupRows(meta.Properties())
	var e RowGroupEstimate
	for _, t := range tasks {
		copies := meta.Version() < 3 || lineageCopies(t.File)
		offsets := t.File.SplitOffsets()
		if len(offsets) == 0 {
			offsets = []int64{0}
		}
		fullByRows := t.File.Count() / max(limit, 1)
		for i, off := range offsets {
			end := t.File.FileSizeBytes()
			if i+1 < len(offsets) {
				end = offsets[i+1]
			}
			e.RowGroups++
			if copies && (end-off >= threshold || int64(i) < fullByRows) {
				e.ToCopy++
			}
		}
	}
	return e
}

// lineageCopies reports whether a file's row groups can be copied on a v3
// table, by its metrics: it holds a _row_id and a
// _last_updated_sequence_number for every row (copied whole), or neither
// column (copied, the lineage columns added). A file holding some lineage
// values is re-encoded.
func lineageCopies(df iceberg.DataFile) bool {
	ids := []int{iceberg.RowIDFieldID, iceberg.LastUpdatedSequenceNumberFieldID}
	none := true
	for _, id := range ids {
		if _, ok := df.ValueCounts()[id]; ok {
			none = false
		}
	}
	if none {
		return true
	}
	for _, id := range ids {
		n, ok := df.NullValueCounts()[id]
		if df.ValueCounts()[id] != df.Count() || !ok || n != 0 {
			return false
		}
	}
	return true
}
