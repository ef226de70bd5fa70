package planner

import (
	"strconv"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

func TestCopyThreshold(t *testing.T) {
	for _, tc := range []struct {
		props iceberg.Properties
		want  int64
	}{
		{nil, 64 << 20}, // Iceberg's default 128 MB row groups
		{iceberg.Properties{table.ParquetRowGroupSizeBytesKey: strconv.Itoa(8 << 20)}, 4 << 20},
		{iceberg.Properties{table.ParquetRowGroupSizeBytesKey: "1001"}, 500},
	} {
		if got := CopyThreshold(tc.props); got != tc.want {
			t.Errorf("CopyThreshold(%v) = %d, want %d", tc.props, got, tc.want)
		}
	}
}

func TestRowGroupFull(t *testing.T) {
	for _, tc := range []struct {
		size, rows int64
		want       bool
	}{
		{size: 4 << 20, rows: 10, want: true},    // half the byte target
		{size: 4<<20 - 1, rows: 10, want: false}, // a byte under it
		{size: 1 << 10, rows: 1000, want: true},  // the row limit reached
		{size: 1 << 10, rows: 999, want: false},  // a row under it
		{size: 8 << 20, rows: 1001, want: false}, // past the limit: the output must honour it
		{size: 1 << 10, rows: 0, want: false},    // empty
	} {
		if got := RowGroupFull(tc.size, tc.rows, 4<<20, 1000); got != tc.want {
			t.Errorf("RowGroupFull(%d bytes, %d rows) = %v, want %v", tc.size, tc.rows, got, tc.want)
		}
	}
}

func TestEstimateCopies(t *testing.T) {
	const mib = 1 << 20
	rowsFile := func(rows, size int64, offsets ...int64) table.FileScanTask {
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, "s3://b/t/data/f.parquet", iceberg.ParquetFile, nil, nil, nil, rows, size)
		if err != nil {
			t.Fatal(err)
		}
		if len(offsets) > 0 {
			b.SplitOffsets(offsets)
		}
		return table.FileScanTask{File: b.Build()}
	}
	file := func(size int64, offsets ...int64) table.FileScanTask { return rowsFile(10, size, offsets...) }
	flink := file(32*mib, 4, 8*mib, 16*mib, 24*mib) // 4 row groups of 8 MiB
	eightMiB := iceberg.Properties{table.ParquetRowGroupSizeBytesKey: strconv.Itoa(8 * mib)}
	rowLimit := iceberg.Properties{table.ParquetRowGroupLimitKey: "72000"}
	v3 := iceberg.Properties{table.ParquetRowGroupSizeBytesKey: strconv.Itoa(8 * mib), table.PropertyFormatVersion: "3"}
	// withLineage is flink's shape with metrics for both lineage columns,
	// nulls of them null row IDs.
	withLineage := func(nulls int64) table.FileScanTask {
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, "s3://b/t/data/l.parquet", iceberg.ParquetFile, nil, nil, nil, 10, 32*mib)
		if err != nil {
			t.Fatal(err)
		}
		ids := []int{iceberg.RowIDFieldID, iceberg.LastUpdatedSequenceNumberFieldID}
		b.SplitOffsets([]int64{4, 8 * mib, 16 * mib, 24 * mib}).
			ValueCounts(map[int]int64{ids[0]: 10, ids[1]: 10}).
			NullValueCounts(map[int]int64{ids[0]: nulls, ids[1]: 0})
		return table.FileScanTask{File: b.Build()}
	}
	for _, tc := range []struct {
		name  string
		props iceberg.Properties
		tasks []table.FileScanTask
		want  RowGroupEstimate
	}{
		{"v3, rows inheriting their lineage", v3, []table.FileScanTask{flink}, RowGroupEstimate{4, 4}},
		{"v3, lineage written out", v3, []table.FileScanTask{flink, withLineage(0)}, RowGroupEstimate{8, 8}},
		{"v3, lineage with nulls", v3, []table.FileScanTask{withLineage(1)}, RowGroupEstimate{4, 0}},
		{"Flink's files, its row-group size", eightMiB, []table.FileScanTask{flink, flink}, RowGroupEstimate{8, 8}},
		{"Flink's files, Iceberg's default row groups", nil, []table.FileScanTask{flink}, RowGroupEstimate{4, 0}},
		{"one healthy, two tiny", eightMiB, []table.FileScanTask{file(6*mib+200<<10, 4, 6*mib, 6*mib+100<<10)}, RowGroupEstimate{3, 1}},
		{"no split offsets: one row group of the file's size", eightMiB, []table.FileScanTask{file(1 * mib), file(5 * mib)}, RowGroupEstimate{2, 1}},
		{"exactly the threshold", eightMiB, []table.FileScanTask{file(8*mib, 0, 4*mib)}, RowGroupEstimate{2, 2}},
		{"a byte under it", eightMiB, []table.FileScanTask{file(8*mib, 0, 4*mib-1)}, RowGroupEstimate{2, 1}},
		{"Flink's files cut by the row limit", rowLimit, []table.FileScanTask{rowsFile(4*72000, 32*mib, 4, 8*mib, 16*mib, 24*mib)}, RowGroupEstimate{4, 4}},
		{"the last row group short of the limit", rowLimit, []table.FileScanTask{rowsFile(3*72000+5, 32*mib, 4, 8*mib, 16*mib, 24*mib)}, RowGroupEstimate{4, 3}},
		{"below the row limit", rowLimit, []table.FileScanTask{rowsFile(71999, 8*mib, 4)}, RowGroupEstimate{1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			props := iceberg.Properties{table.PropertyFormatVersion: "2"}
			for k, v := range tc.props {
				props[k] = v
			}
			meta, err := table.NewMetadata(testSchema, iceberg.UnpartitionedSpec, table.UnsortedSortOrder, "s3://b/t", props)
			if err != nil {
				t.Fatal(err)
			}
			if got := EstimateCopies(meta, tc.tasks); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
