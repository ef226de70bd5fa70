package compactor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/parquet-go/parquet-go"

	"github.com/icekeeper/icekeeper/compactor/merge"
	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
)

// BenchmarkRewritePaths measures the ways one group of 100 small, delete-
// free files (the small-files input) can be rewritten, to choose one:
//
//   - iceberg-go: ExecuteCompactionGroup, decode to Arrow and re-encode
//     (what icekeeper uses);
//
//   - parquet-go-copy: parquet-go's WriteRowGroup, which splices the input
//     column chunks verbatim — but keeps every input row group, so the
//     output has 100 row groups of under 1 MB instead of row groups sized
//     by the table's properties;
//
//   - parquet-go-reencode: parquet-go's CopyRows into one writer, which
//     makes properly sized row groups by decoding and re-encoding rows;
//
//   - merge: icekeeper's merge path (mergeGroup), column by column in
//     two lanes, with the footer metrics the manifest needs.
//
//     scripts/bench.sh -bench RewritePaths -benchtime 3x ./compactor
func BenchmarkRewritePaths(b *testing.B) {
	home := b.TempDir()
	if _, err := buildCompactionInput(configs.Embedded(home), 100, 4800, false, "zstd", nil); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	reg := configs.Embedded(home).Registry()
	defer reg.Close()
	bk, _ := reg.Bucket("local")
	tbl, err := bk.LoadTable(ctx, bucket.TableID{Namespace: []string{"bench"}, Name: "icekeeper"})
	if err != nil {
		b.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var in int64
	for _, t := range tasks {
		in += t.File.FileSizeBytes()
	}
	report := func(b *testing.B, rowGroups int) {
		b.ReportMetric(float64(in)/(1<<20)/(b.Elapsed().Seconds()/float64(b.N)), "MiB/s")
		b.ReportMetric(float64(rowGroups), "output-row-groups")
	}
	b.Run("iceberg-go", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := table.ExecuteCompactionGroup(ctx, tbl, table.CompactionTaskGroup{Tasks: tasks}, table.WithCompactionTargetFileSize(1<<30)); err != nil {
				b.Fatal(err)
			}
		}
		report(b, 1)
	})
	b.Run("merge", func(b *testing.B) {
		var rowGroups int
		for i := 0; i < b.N; i++ {
			r, _, err := (&merge.Merger{}).Group(ctx, tbl, tasks, 1<<30)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			for _, df := range r.NewDataFiles {
				rowGroups = len(openParquet(b, df).RowGroups())
				os.Remove(strings.TrimPrefix(df.FilePath(), "file://"))
			}
			b.StartTimer()
		}
		report(b, rowGroups)
	})
	splice := func(b *testing.B, reencode bool) {
		var rowGroups int
		for i := 0; i < b.N; i++ {
			out, err := os.Create(filepath.Join(b.TempDir(), "merged.parquet"))
			if err != nil {
				b.Fatal(err)
			}
			var w *parquet.Writer
			for _, t := range tasks {
				f, err := os.Open(strings.TrimPrefix(t.File.FilePath(), "file://"))
				if err != nil {
					b.Fatal(err)
				}
				st, _ := f.Stat()
				pf, err := parquet.OpenFile(f, st.Size())
				if err != nil {
					b.Fatal(err)
				}
				if w == nil {
					w = parquet.NewWriter(out, pf.Schema(), parquet.Compression(&parquet.Snappy))
				}
				for _, rg := range pf.RowGroups() {
					if reencode {
						rows := rg.Rows()
						_, err = parquet.CopyRows(w, rows)
						rows.Close()
					} else {
						_, err = w.WriteRowGroup(rg)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				f.Close()
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			st, _ := out.Stat()
			out.Seek(0, 0)
			pf, err := parquet.OpenFile(out, st.Size())
			if err != nil {
				b.Fatal(err)
			}
			rowGroups = len(pf.RowGroups())
			out.Close()
		}
		report(b, rowGroups)
	}
	b.Run("parquet-go-copy", func(b *testing.B) { splice(b, false) })
	b.Run("parquet-go-reencode", func(b *testing.B) { splice(b, true) })
}
