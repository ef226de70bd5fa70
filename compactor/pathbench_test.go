package compactor

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"

	"github.com/icekeeper/icekeeper/compactor/merge"
	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/testkit/child"
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
//     two lanes, with the footer metrics the manifest needs;
//
//   - zstd-alone: the physical limit of any re-encoding path, zstd's
//     encoder alone (klauspost/compress, with the merge path's settings)
//     on the same rows written uncompressed, in 1 MiB pages, on one core.
//
// Besides MiB/s of input, each reports uncompressed MiB per CPU second
// (uncompressed-MiB/s/core: the process's user and system time while it
// ran), so that the distance to zstd's own speed is visible.
//
//	scripts/bench.sh -bench RewritePaths -benchtime 3x ./compactor
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
	// The same rows, uncompressed: what the encoder has to compress.
	raw := uncompressedInput(b)
	var rawBytes int64
	for _, p := range raw {
		rawBytes += int64(len(p))
	}
	var cpu0 time.Duration
	start := func(b *testing.B) { b.ResetTimer(); cpu0 = cpuTime() }
	report := func(b *testing.B, rowGroups int) {
		cpu := (cpuTime() - cpu0).Seconds() / float64(b.N)
		b.ReportMetric(float64(in)/(1<<20)/(b.Elapsed().Seconds()/float64(b.N)), "MiB/s")
		b.ReportMetric(float64(rawBytes)/(1<<20)/cpu, "uncompressed-MiB/s/core")
		b.ReportMetric(float64(rowGroups), "output-row-groups")
	}
	b.Run("zstd-alone", func(b *testing.B) {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1),
			zstd.WithZeroFrames(true), zstd.WithEncoderCRC(false), zstd.WithAllLitEntropyCompression(true))
		if err != nil {
			b.Fatal(err)
		}
		var dst []byte
		start(b)
		for i := 0; i < b.N; i++ {
			for _, p := range raw {
				dst = enc.EncodeAll(p, dst[:0])
			}
		}
		report(b, 0)
	})
	b.Run("iceberg-go", func(b *testing.B) {
		start(b)
		for i := 0; i < b.N; i++ {
			if _, err := table.ExecuteCompactionGroup(ctx, tbl, table.CompactionTaskGroup{Tasks: tasks}, table.WithCompactionTargetFileSize(1<<30)); err != nil {
				b.Fatal(err)
			}
		}
		report(b, 1)
	})
	b.Run("merge", func(b *testing.B) {
		var rowGroups int
		start(b)
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
		start(b)
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

// uncompressedInput writes the rows of BenchmarkRewritePaths's input
// (same seed) uncompressed and returns the files' bytes in 1 MiB pieces,
// Parquet's default page size.
func uncompressedInput(b *testing.B) [][]byte {
	home := b.TempDir()
	if _, err := buildCompactionInput(configs.Embedded(home), 100, 4800, false, "uncompressed", nil); err != nil {
		b.Fatal(err)
	}
	var pages [][]byte
	err := filepath.WalkDir(home, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(path, ".parquet") || !strings.Contains(path, "/"+tableOf(child.Icekeeper)+"/data/") {
			return err
		}
		data, err := os.ReadFile(path)
		for len(data) > 0 {
			n := min(len(data), 1<<20)
			pages = append(pages, data[:n])
			data = data[n:]
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return pages
}

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
