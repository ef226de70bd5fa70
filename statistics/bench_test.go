package statistics

import (
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// BenchmarkStatistics compares a statistics run after an append of 1% of
// a table's rows with a full computation of the same statistics, on a
// table of 50 appends of 4,000 rows (one data file each, 200,000 rows,
// seven columns: long, string, timestamp, decimal, date, binary, string).
// Both sides are whole runs through the runner (plan, read, Puffin file,
// commit, run record) on local disk with the catalog in SQLite. Each
// iteration first appends 2,000 rows (one file) untimed; the full side
// also takes the statistics out of the metadata untimed, so that its run
// starts from nothing. files-read/op and bytes-read/op are the run's own
// figures (data files opened, bytes read of them).
//
//	scripts/bench.sh -bench Statistics -benchtime 5x ./statistics
func BenchmarkStatistics(b *testing.B) {
	const files, rows = 50, 4_000
	e, tbl := newEnv(b)
	for range files {
		tbl = e.gen.append(b, e.Ctx, tbl, rows)
	}
	if fig := e.stats(); !fig.Full {
		b.Fatal("the first run was not a full computation")
	}
	for _, side := range []string{"after-1pct-append", "full"} {
		b.Run(side, func(b *testing.B) {
			var filesRead, bytesRead int64
			for range b.N {
				b.StopTimer()
				e.gen.append(b, e.Ctx, e.Load(), files*rows/100)
				if side == "full" {
					e.dropStatistics(b)
				}
				b.StartTimer()
				out, err := e.runner.Run(e.Ctx, e.Target(), maintenance.Statistics, "bench", jobs.Options{Now: time.Now()})
				if err != nil || out.Status != "Successful" {
					b.Fatalf("run: %v %s (%s)", err, out.Status, out.FailureMessage)
				}
				fig := out.Figures.(*Figures)
				if fig.Full != (side == "full") {
					b.Fatalf("%s: full %v (%s)", side, fig.Full, fig.Reason)
				}
				filesRead += int64(fig.DataFilesRead)
				bytesRead += fig.BytesRead
			}
			b.ReportMetric(float64(filesRead)/float64(b.N), "files-read/op")
			b.ReportMetric(float64(bytesRead)/float64(b.N), "bytes-read/op")
		})
	}
}

// dropStatistics takes every statistics file out of the table's metadata.
func (e *env) dropStatistics(tb testing.TB) {
	tb.Helper()
	tbl := e.Load()
	var updates []table.Update
	for f := range tbl.Metadata().Statistics() {
		updates = append(updates, table.NewRemoveStatisticsUpdate(f.SnapshotID))
	}
	cat, err := e.B.Catalog(e.Ctx)
	if err != nil {
		tb.Fatal(err)
	}
	if _, _, err := cat.CommitTable(e.Ctx, tbl.Identifier(), nil, updates); err != nil {
		tb.Fatal(err)
	}
}
