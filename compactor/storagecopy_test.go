package compactor

import (
	"strconv"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/cost"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/maintenance"
)

// healthyRows is the row limit of the inputs' row groups in the storage
// copy tests: full by rows, each row group is copied, and at this many
// rows of the base schema it is over S3's 5 MiB smallest part.
const healthyRows = 400_000

// healthyTable fills tbl with files of two full row groups each, under a
// target of 512 MB.
func healthyTable(e *env, tbl *table.Table, files int) *table.Table {
	e.T.Helper()
	e.Defaults.Configs[maintenance.Compaction].Compaction().TargetFileSizeMB = maintenance.Int(512)
	tbl = e.setProps(tbl, iceberg.Properties{"write.parquet.row-group-limit": strconv.Itoa(healthyRows),
		"write.parquet.row-group-size-bytes": strconv.Itoa(8 << 20)})
	for range files {
		tbl = e.Append(tbl, 2*healthyRows)
	}
	return tbl
}

// throughBytes is what a run's requests moved through icekeeper, as its
// meter counted them.
func throughBytes(c *cost.Figures) int64 { return c.BytesRead + c.BytesWritten }

// On S3, a compaction of healthy row groups has the store copy them
// (UploadPartCopy): at most 5% of the compacted bytes pass through
// icekeeper, read or uploaded, where the old path moves each byte at
// least twice; rows are exact and iceberg-go reads the output
// (checkCompaction), and the row check proved it before the commit.
func TestStorageCopiesOnS3(t *testing.T) {
	for _, old := range []bool{false, true} {
		t.Run(map[bool]string{false: "part copies", true: "read and upload"}[old], func(t *testing.T) {
			e, tbl := newS3Env(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
			healthyTable(e, tbl, 3)
			fig := e.checkCompaction(&Job{MinInputFiles: 2, NoStorageCopies: old})
			through := throughBytes(fig.Cost)
			share := float64(through) / float64(fig.InputBytes)
			t.Logf("%d row groups copied, %d re-encoded; %d of %d input bytes through icekeeper (%.1f%%); %s",
				fig.RowGroupsCopied, fig.RowGroupsReencoded, through, fig.InputBytes, 100*share, fig.Cost.Text())
			if fig.RowGroupsCopied != 6 || fig.RowGroupsReencoded != 0 {
				t.Fatalf("%d row groups copied, %d re-encoded; want 6, 0", fig.RowGroupsCopied, fig.RowGroupsReencoded)
			}
			if !old && share > 0.05 {
				t.Errorf("%.1f%% of the compacted bytes passed through icekeeper, want at most 5%%", 100*share)
			}
			if old && share < 2 {
				t.Errorf("the old path moved %.1f%% of the bytes, expected reading, uploading and reading back each", 100*share)
			}
		})
	}
}
