package compactor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/child"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/maintenance"
)

// BenchmarkEqualityConversion compares one compaction run on the issue's
// CDC table, scaled down, with equality-delete conversion and without it
// (the data rewrite then rewrites every file the deletes reach). v2 on
// local disk, row groups of 20,000 rows. Two inputs:
//
//   - 300-keys: 8 well-sized files of 60,000 rows (about 1 MB each), 3
//     checkpoints of 100 upserts (an equality delete on id and the new
//     versions);
//   - 100k-keys: 32 such files, 4 checkpoints
//     of 25,000 upserts.
//
// Each iteration builds a fresh table per side and runs each side's
// compaction in a child process (internal/testkit/child), so that peak RSS
// is the side's own; iterations alternate which side runs first. The rows
// are checked after, untimed. Per side it reports ms/op, peak RSS, the
// bytes the run read from data files (the key column chunks when
// converting, the whole input files when rewriting) and the bytes it
// allocated.
//
//	go test -run '^$' -bench EqualityConversion -benchtime 2x ./compactor
func BenchmarkEqualityConversion(b *testing.B) {
	for _, in := range []struct {
		name string
		cdc  cdcTable
	}{
		{"300-keys", cdcTable{appends: 8, bigRows: 60000, checkpoints: 3, upserts: 100}},
		{"100k-keys", cdcTable{appends: 32, bigRows: 60000, checkpoints: 4, upserts: 25000}},
	} {
		b.Run(in.name, func(b *testing.B) {
			var conv, rew child.Result
			for i := 0; i < b.N; i++ {
				order := []int{1, 0} // compaction.minEqualityDeleteFilesToConvert
				if i%2 == 1 {
					order = []int{0, 1}
				}
				for _, convert := range order {
					b.StopTimer()
					home := b.TempDir()
					e, tbl := newEnvWith(b, configs.Embedded(home), home, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
					tbl, _ = in.cdc.fill(e, tbl)
					want := e.Rows(tbl, 0)
					b.StartTimer()
					r, err := child.Run("TestEqualityConversionBenchChild", strconv.Itoa(convert), home)
					b.StopTimer()
					if err != nil {
						b.Fatal(err)
					}
					if convert > 0 {
						conv.Add(r)
					} else {
						rew.Add(r)
					}
					checkRows(b, e, want)
					b.StartTimer()
				}
			}
			N := float64(b.N)
			b.ReportMetric(conv.Ms/N, "convert-ms")
			b.ReportMetric(rew.Ms/N, "rewrite-ms")
			b.ReportMetric(rew.Ms/conv.Ms, "speedup")
			b.ReportMetric(conv.PeakRSSMiB/N, "convert-peak-RSS-MiB")
			b.ReportMetric(rew.PeakRSSMiB/N, "rewrite-peak-RSS-MiB")
			b.ReportMetric(float64(conv.Bytes)/N, "convert-bytes-read")
			b.ReportMetric(float64(rew.Bytes)/N, "rewrite-bytes-read")
			b.ReportMetric(float64(conv.AllocBytes)/N, "convert-B-alloc")
			b.ReportMetric(float64(rew.AllocBytes)/N, "rewrite-B-alloc")
		})
	}
}

// TestEqualityConversionBenchChild is the child side of
// BenchmarkEqualityConversion: one compaction run of the table under home,
// with conversion on (args[0] 1) or off (0).
func TestEqualityConversionBenchChild(t *testing.T) {
	args := child.Args()
	if args == nil {
		t.Skip("benchmark child only")
	}
	convert, err := strconv.Atoi(args[0])
	if err != nil {
		t.Fatal(err)
	}
	home := args[1]
	ctx := context.Background()
	cfg := configs.Embedded(home)
	cfg.Buckets[0].Maintenance.Compaction = &configs.CompactionConfig{CompactionSettings: maintenance.CompactionSettings{
		TargetFileSizeMB: maintenance.Int(1), Strategy: maintenance.StrategyBinpack}}
	reg := cfg.Registry()
	defer reg.Close()
	bk, _ := reg.Bucket("local")
	store, err := state.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e := &env{Env: &tableenv.Env{T: t, Ctx: ctx, B: bk, ID: bucket.TableID{Namespace: []string{"t"}, Name: "x"}, Store: store,
		Defaults: cfg.Buckets[0].Defaults(), Rng: rand.New(rand.NewPCG(1, 2)), Next: 1}}
	e.Defaults.Knobs.MinEqualityDeleteFilesToConvert = convert
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	out, fig := e.compact(&Job{})
	ms := float64(time.Since(start).Microseconds()) / 1000
	runtime.ReadMemStats(&after)
	if out.Status != state.Successful {
		t.Fatalf("%s %s\n%s", out.Status, out.FailureMessage, fig.Text())
	}
	if os.Getenv("ICEKEEPER_BENCH_VERBOSE") != "" {
		fmt.Fprintln(os.Stderr, fig.Text())
	}
	read := fig.InputBytes
	if convert > 0 {
		read = fig.ConvertBytesRead
	}
	child.ReportResult(child.Result{Ms: ms, Bytes: read, AllocBytes: int64(after.TotalAlloc - before.TotalAlloc)})
}

func checkRows(b *testing.B, e *env, want tablecheck.Fingerprint) {
	if got := e.Rows(e.Load(), 0); !got.Equal(want) {
		b.Fatalf("rows %v, want %v", got, want)
	}
	if n := count(e.liveDeletes(), iceberg.EntryContentEqDeletes); n != 0 {
		b.Fatalf("%d equality delete files left", n)
	}
}
