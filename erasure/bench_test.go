package erasure

import (
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/maintenance"
)

// BenchmarkErasure compares an erasure run with a full rewrite — what a
// user does today to purge deleted rows: iceberg-go's RewriteDataFiles
// of every data file, deletes applied — on identical tables of 16 appends
// of 20,000 rows (one data file each) whose three checkpoints removed 300
// rows, either from two of the files ("2-of-16") or from all of them
// ("16-of-16"). Erasure also expires the snapshots that reached the old
// files and deletes those files, which the full rewrite leaves for later.
// On local disk, and on the S3 server behind a request counter with the
// catalog in SQLite ("s3": requests/op counts the timed part's S3
// requests). Each iteration builds fresh tables and checks the visible
// rows after against those before, untimed.
//
//	scripts/bench.sh -bench Erasure -benchtime 5x ./erasure
func BenchmarkErasure(b *testing.B) {
	for _, store := range []string{"local", "s3"} {
		for _, tc := range []struct {
			name string
			ids  func(checkpoint int) []int64
		}{
			// Rows 0-39,999 are the first two files'.
			{"2-of-16", func(c int) []int64 { return spread(c, 100, 40_000) }},
			{"16-of-16", func(c int) []int64 { return spread(c, 100, 320_000) }},
		} {
			// build makes a fresh table, on a fresh S3 bucket behind a
			// request counter for "s3"; the counter starts from zero.
			build := func(b *testing.B) (*env, *table.Table, *servers.RequestCounter) {
				b.StopTimer()
				defer b.StartTimer()
				home := b.TempDir()
				cfg := configs.Embedded(home)
				var counter *servers.RequestCounter
				if store == "s3" {
					var srv servers.S3Server
					counter, srv = servers.S3(b).Counted(b)
					cfg = tableenv.SQLOnS3(home, srv)
				}
				te, tbl := tableenv.NewWith(b, cfg, home, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
				e := newEnv(b, te)
				tbl = e.AppendCommits(tbl, 16, 20_000)
				for c := range 3 {
					tbl = e.PosDelete(tbl, tc.ids(c)...)
				}
				if counter != nil {
					counter.Take()
				}
				return e, tbl, counter
			}
			// check compares the rows after with want, untimed, and
			// returns the requests the timed part made.
			check := func(b *testing.B, e *env, want tablecheck.Fingerprint, counter *servers.RequestCounter) int {
				b.StopTimer()
				defer b.StartTimer()
				n := 0
				if counter != nil {
					n = servers.Total(counter.Take())
				}
				if got := e.Rows(e.Load(), 0); !got.Equal(want) {
					b.Fatalf("rows %v, want %v", got, want)
				}
				return n
			}
			report := func(b *testing.B, read, written int64, requests int) {
				b.ReportMetric(float64(read), "B-read/op")
				b.ReportMetric(float64(written), "B-written/op")
				if store == "s3" {
					b.ReportMetric(float64(requests), "requests/op")
				}
			}
			b.Run(store+"/"+tc.name+"/erasure", func(b *testing.B) {
				var read, written int64
				var requests int
				for range b.N {
					e, tbl, counter := build(b)
					want := e.Rows(tbl, 0)
					if counter != nil {
						counter.Take()
					}
					out, err := e.runner.Run(e.Ctx, e.Target(), maintenance.Erasure, "bench", jobsNow(8*24*time.Hour))
					fig, _ := out.Figures.(*Figures)
					if err != nil || out.Status != "Successful" || fig.FilesRewritten == 0 {
						b.Fatalf("%v %s %+v", err, out.FailureMessage, fig)
					}
					read, written = fig.BytesRewritten, fig.BytesWritten
					requests = check(b, e, want, counter)
				}
				report(b, read, written, requests)
			})
			b.Run(store+"/"+tc.name+"/full-rewrite", func(b *testing.B) {
				var read, written int64
				var requests int
				for range b.N {
					e, tbl, counter := build(b)
					want := e.Rows(tbl, 0)
					if counter != nil {
						counter.Take()
					}
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
					requests = check(b, e, want, counter)
				}
				report(b, read, written, requests)
			})
		}
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
