package erasure

import (
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/maintenance"
)

// BenchmarkErasure compares an erasure run with a full rewrite — what a
// user does today to purge deleted rows: iceberg-go's RewriteDataFiles
// of every data file, deletes applied — on identical tables of 16 appends
// of 20,000 rows (one data file each) whose three checkpoints removed 300
// rows, either from two of the files ("2-of-16") or from all of them
// ("16-of-16"). Erasure also expires the snapshots that reached the old
// files and deletes those files, which the full rewrite leaves for later;
// both read and write on local disk. Each iteration builds fresh tables
// and checks the visible rows after against those before, untimed.
//
//	go test -run '^$' -bench Erasure -benchtime 5x ./erasure
func BenchmarkErasure(b *testing.B) {
	for _, tc := range []struct {
		name string
		ids  func(checkpoint int) []int64
	}{
		// Rows 0-39,999 are the first two files'.
		{"2-of-16", func(c int) []int64 { return spread(c, 100, 40_000) }},
		{"16-of-16", func(c int) []int64 { return spread(c, 100, 320_000) }},
	} {
		build := func(b *testing.B) (*env, *table.Table) {
			b.StopTimer()
			defer b.StartTimer()
			home := b.TempDir()
			te, tbl := tableenv.NewWith(b, configs.Embedded(home), home, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
			e := newEnv(b, te)
			tbl = e.AppendCommits(tbl, 16, 20_000)
			for c := range 3 {
				tbl = e.PosDelete(tbl, tc.ids(c)...)
			}
			return e, tbl
		}
		b.Run(tc.name+"/erasure", func(b *testing.B) {
			var rewritten, written int64
			for range b.N {
				e, tbl := build(b)
				want := e.Rows(tbl, 0)
				out, err := e.runner.Run(e.Ctx, e.Target(), maintenance.Erasure, "bench", jobsNow(8*24*time.Hour))
				fig, _ := out.Figures.(*Figures)
				if err != nil || out.Status != "Successful" || fig.FilesRewritten == 0 {
					b.Fatalf("%v %s %+v", err, out.FailureMessage, fig)
				}
				rewritten, written = fig.BytesRewritten, fig.BytesWritten
				b.StopTimer()
				if got := e.Rows(e.Load(), 0); !got.Equal(want) {
					b.Fatalf("rows %v, want %v", got, want)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(rewritten), "B-read/op")
			b.ReportMetric(float64(written), "B-written/op")
		})
		b.Run(tc.name+"/full-rewrite", func(b *testing.B) {
			var read, written int64
			for range b.N {
				e, tbl := build(b)
				want := e.Rows(tbl, 0)
				sc, err := rebase.Scan(e.Ctx, tbl)
				if err != nil {
					b.Fatal(err)
				}
				g := table.CompactionTaskGroup{PartitionKey: "all", Tasks: sc.Tasks}
				for _, task := range sc.Tasks {
					g.TotalSizeBytes += task.File.FileSizeBytes()
				}
				res, err := tbl.RewriteDataFiles(e.Ctx, []table.CompactionTaskGroup{g}, table.RewriteDataFilesOptions{})
				if err != nil {
					b.Fatal(err)
				}
				read, written = res.BytesBefore, res.BytesAfter
				b.StopTimer()
				if got := e.Rows(e.Load(), 0); !got.Equal(want) {
					b.Fatalf("rows %v, want %v", got, want)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(read), "B-read/op")
			b.ReportMetric(float64(written), "B-written/op")
		})
	}
}

// spread is n ids below limit for checkpoint c, evenly apart.
func spread(c, n int, limit int64) []int64 {
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(i)*(limit/int64(n)) + int64(c)
	}
	return ids
}
