package compactor

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// Compacted files are no larger than their inputs (5% at most, for the
// row groups and footers merging adds) nor than iceberg-go's rewrite of
// the same group (3% at most), for every codec a table can name. The
// inputs are written by iceberg-go, as a Go streaming writer's are, with a
// random text column that holds most of the bytes: the column where an
// encoder without literal entropy coding stores zstd blocks raw.
func TestOutputSize(t *testing.T) {
	testkit.SkipUnderRace(t)
	for _, tc := range []struct {
		name  string
		props iceberg.Properties
		path  string
	}{
		{"zstd", iceberg.Properties{"write.parquet.compression-codec": "zstd"}, planner.PathMerge},
		{"zstd level 1", iceberg.Properties{"write.parquet.compression-codec": "zstd", "write.parquet.compression-level": "1"}, planner.PathMerge},
		{"zstd level 9", iceberg.Properties{"write.parquet.compression-codec": "zstd", "write.parquet.compression-level": "9"}, planner.PathMerge},
		{"gzip", iceberg.Properties{"write.parquet.compression-codec": "gzip"}, planner.PathMerge},
		{"gzip level 9", iceberg.Properties{"write.parquet.compression-codec": "gzip", "write.parquet.compression-level": "9"}, planner.PathMerge},
		{"snappy", iceberg.Properties{"write.parquet.compression-codec": "snappy"}, planner.PathMerge},
		{"uncompressed", iceberg.Properties{"write.parquet.compression-codec": "uncompressed"}, planner.PathMerge},
		// parquet-go cannot read arrow-go's LZ4_RAW pages: iceberg-go's path.
		{"lz4raw", iceberg.Properties{"write.parquet.compression-codec": "lz4raw"}, planner.PathIceberg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, tbl := newEnv(t, benchSchema(), *iceberg.UnpartitionedSpec, "2")
			e.Defaults.Configs[maintenance.Compaction].Compaction().TargetFileSizeMB = maintenance.Int(64)
			tbl = e.setProps(tbl, tc.props)
			rng := rand.New(rand.NewPCG(5, 6))
			for i := 0; i < 12; i++ {
				rec := benchRecord(rng, 1500, false)
				rdr, _ := array.NewRecordReader(benchArrow, []arrow.RecordBatch{rec})
				var err error
				tbl, err = tbl.Append(e.Ctx, rdr, nil)
				rdr.Release()
				rec.Release()
				if err != nil {
					t.Fatal(err)
				}
			}
			in := e.dataFiles()
			var inBytes int64
			for _, df := range in {
				inBytes += df.FileSizeBytes()
			}

			// iceberg-go's rewrite of the same group, written but not
			// committed.
			tasks, err := tbl.Scan().PlanFiles(e.Ctx)
			if err != nil {
				t.Fatal(err)
			}
			res, err := table.ExecuteCompactionGroup(e.Ctx, tbl, table.CompactionTaskGroup{Tasks: rebase.WholeFiles(tasks)}, table.WithCompactionTargetFileSize(64<<20))
			if err != nil {
				t.Fatal(err)
			}
			var igBytes int64
			fs := mustFS(t, e, tbl)
			for _, df := range res.NewDataFiles {
				igBytes += df.FileSizeBytes()
				if err := fs.(interface{ Remove(string) error }).Remove(df.FilePath()); err != nil {
					t.Fatal(err)
				}
			}

			fig := e.checkCompaction(&Job{MinInputFiles: 2})
			if g := fig.Plan.Groups[0]; g.Path != tc.path || (fig.GroupsMerged == 1) != (tc.path == planner.PathMerge) {
				t.Fatalf("the group took path %s (%s), %d merged; want %s", g.Path, g.PathReason, fig.GroupsMerged, tc.path)
			}
			out := float64(fig.OutputBytes)
			t.Logf("%d files, %d bytes -> icekeeper %d bytes (%.3f of input, %.3f of iceberg-go's %d)",
				len(in), inBytes, fig.OutputBytes, out/float64(inBytes), out/float64(igBytes), igBytes)
			if out > 1.05*float64(inBytes) {
				t.Errorf("output %d bytes is %.1f%% above the input's %d", fig.OutputBytes, 100*(out/float64(inBytes)-1), inBytes)
			}
			if out > 1.03*float64(igBytes) {
				t.Errorf("output %d bytes is %.1f%% above iceberg-go's %d", fig.OutputBytes, 100*(out/float64(igBytes)-1), igBytes)
			}
		})
	}
}
