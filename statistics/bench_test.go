package statistics

import (
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// BenchmarkStatistics compares a statistics run after an append of 1% of
// a table's rows with a full computation of the same statistics on the
// same table, side by side in each iteration: a table of 50 appends of
// 4,000 rows (one data file each, 200,000 rows, seven columns: long,
// string, timestamp, decimal, date, binary, string) with statistics of
// its current snapshot; each iteration appends 2,000 rows (one file)
// untimed, times a run (it merges the new file into the previous
// sketches), takes the statistics out of the metadata untimed, and times
// a run again (it computes from every data file). The incremental side
// runs first in every iteration, because it needs the statistics the
// full side's run leaves for the next. Both are whole runs through the
// runner (plan, read, Puffin file, commit, run record) on local disk with
// the catalog in SQLite. files and bytes are the runs' own figures (data
// files opened, bytes read of them); ns/op is both runs together.
//
//	go test -run '^$' -bench Statistics -benchtime 5x ./statistics
func BenchmarkStatistics(b *testing.B) {
	b.StopTimer() // the table's making is not timed
	const files, rows = 50, 4_000
	e, tbl := newEnv(b)
	for range files {
		tbl = e.gen.append(b, e.Ctx, tbl, rows)
	}
	if fig := e.stats(); !fig.Full {
		b.Fatal("the first run was not a full computation")
	}
	run := func(full bool) (time.Duration, *Figures) {
		b.StartTimer()
		start := time.Now()
		out, err := e.runner.Run(e.Ctx, e.Target(), maintenance.Statistics, "bench", jobs.Options{Now: time.Now()})
		took := time.Since(start)
		b.StopTimer()
		if err != nil || out.Status != "Successful" {
			b.Fatalf("run: %v %s (%s)", err, out.Status, out.FailureMessage)
		}
		fig := out.Figures.(*Figures)
		if fig.Full != full {
			b.Fatalf("full %v, want %v (%s)", fig.Full, full, fig.Reason)
		}
		return took, fig
	}
	var inc, full struct {
		took         time.Duration
		files, bytes int64
	}
	for range b.N {
		e.gen.append(b, e.Ctx, e.Load(), files*rows/100)
		took, fig := run(false)
		inc.took, inc.files, inc.bytes = inc.took+took, inc.files+int64(fig.DataFilesRead), inc.bytes+fig.BytesRead
		e.dropStatistics(b)
		took, fig = run(true)
		full.took, full.files, full.bytes = full.took+took, full.files+int64(fig.DataFilesRead), full.bytes+fig.BytesRead
	}
	n := float64(b.N)
	b.ReportMetric(float64(inc.took.Milliseconds())/n, "inc-ms/op")
	b.ReportMetric(float64(full.took.Milliseconds())/n, "full-ms/op")
	b.ReportMetric(float64(inc.took)/float64(full.took), "time-ratio")
	b.ReportMetric(float64(inc.files)/n, "inc-files/op")
	b.ReportMetric(float64(full.files)/n, "full-files/op")
	b.ReportMetric(float64(inc.bytes)/n, "inc-bytes/op")
	b.ReportMetric(float64(full.bytes)/n, "full-bytes/op")
	b.ReportMetric(float64(inc.bytes)/float64(full.bytes), "bytes-ratio")
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

// BenchmarkStatisticsFullOnS3 times a full computation on S3 behind a
// proxy that holds every response back 20 ms, as a remote object store
// does: the table of BenchmarkStatistics, made on versitygw directly; each
// iteration takes the statistics out of the metadata untimed and times a
// run through the proxy. requests are the run's storage requests (its
// cost figures), files the data files it read.
//
//	scripts/bench.sh -bench StatisticsFullOnS3 -benchtime 3x ./statistics
func BenchmarkStatisticsFullOnS3(b *testing.B) {
	b.StopTimer()
	const files, rows = 50, 4_000
	e, target := slowEnv(b, files, rows)
	var took time.Duration
	var requests, read int64
	for range b.N {
		e.dropStatistics(b)
		fig, spent := e.timedRun(b, target, &took)
		if !fig.Full || fig.DataFilesRead != files {
			b.Fatalf("full %v, %d files read", fig.Full, fig.DataFilesRead)
		}
		read += int64(fig.DataFilesRead)
		requests += spent
	}
	n := float64(b.N)
	b.ReportMetric(float64(took.Milliseconds())/n, "full-ms/op")
	b.ReportMetric(float64(requests)/n, "requests/op")
	b.ReportMetric(float64(read)/n, "files/op")
}

// BenchmarkStatisticsBehindOnS3 times a run behind a streaming writer on
// S3 at 20 ms a round trip: the table of BenchmarkStatisticsFullOnS3 with
// statistics of its current snapshot; each iteration makes 30 appends of
// 100 rows untimed and times the run that brings the statistics up to
// date, reading the 30 new files.
//
//	scripts/bench.sh -bench StatisticsBehindOnS3 -benchtime 3x ./statistics
func BenchmarkStatisticsBehindOnS3(b *testing.B) {
	b.StopTimer()
	const appends = 30
	e, target := slowEnv(b, 50, 4_000)
	e.timedRun(b, target, new(time.Duration))
	var took time.Duration
	var requests int64
	for range b.N {
		for range appends {
			e.gen.append(b, e.Ctx, e.Load(), 100)
		}
		fig, spent := e.timedRun(b, target, &took)
		if fig.Full || fig.DataFilesRead != appends {
			b.Fatalf("full %v (%s), %d files read", fig.Full, fig.Reason, fig.DataFilesRead)
		}
		requests += spent
	}
	n := float64(b.N)
	b.ReportMetric(float64(took.Milliseconds())/n, "ms/op")
	b.ReportMetric(float64(requests)/n, "requests/op")
}

// slowEnv is a table of files appends of rows rows made on versitygw
// directly, and the target of the same table through a proxy holding
// every response 20 ms.
func slowEnv(b *testing.B, files, rows int) (*env, jobs.Target) {
	srv := servers.S3(b)
	home := b.TempDir()
	e, tbl := newEnvWith(b, tableenv.SQLOnS3(home, srv), home)
	for range files {
		tbl = e.gen.append(b, e.Ctx, tbl, rows)
	}
	slow := tableenv.SQLOnS3(home, srv.WithLatency(b, 20*time.Millisecond)).Registry()
	b.Cleanup(slow.Close)
	bk, err := slow.Bucket("local")
	if err != nil {
		b.Fatal(err)
	}
	return e, jobs.Target{Bucket: bk, Table: e.ID}
}

// timedRun runs statistics on target, adding its time to took, and
// returns its figures and storage requests.
func (e *env) timedRun(b *testing.B, target jobs.Target, took *time.Duration) (*Figures, int64) {
	b.StartTimer()
	start := time.Now()
	out, err := e.runner.Run(e.Ctx, target, maintenance.Statistics, "bench", jobs.Options{Now: time.Now()})
	*took += time.Since(start)
	b.StopTimer()
	if err != nil || out.Status != "Successful" {
		b.Fatalf("run: %v %s (%s)", err, out.Status, out.FailureMessage)
	}
	var requests int64
	if c := jobs.RunCost(out.Figures); c != nil {
		requests = c.Requests
	}
	return out.Figures.(*Figures), requests
}
