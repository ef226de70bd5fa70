package compactor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

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
//     of 25,000 upserts;
//   - 300-keys-2.3M-rows: the row count, 8 files of 288,000 rows
//     (2,304,000 in all; about 5 MB a file with this schema, not the
//     issue's 32 MB) compacted toward 5 MB, so that they are well sized,
//     3 checkpoints of 100 upserts;
//   - issue-table: the table itself, with a payload column of
//     50–200 random characters: 8 files of 288,000 rows written as a
//     Flink job writes them (flinkProps: 32 MB files of 4 row groups of
//     about 8 MB) compacted toward 32 MB, 3 checkpoints of 100 upserts.
//
// Each iteration builds a fresh table per side and runs each side's
// compaction in a child process (internal/testkit/child), so that peak RSS
// is the side's own; iterations alternate which side runs first. After
// each side, untimed: the rows are exact now and at the snapshot before
// the run, no equality delete is left, and conversion left the
// well-sized files where they were. Per side it reports ms/op, peak RSS, the
// bytes the run read from data files (the key column chunks when
// converting, the whole input files when rewriting) and the bytes it
// allocated.
//
//	go test -run '^$' -bench EqualityConversion -benchtime 2x ./compactor
//
// ICEKEEPER_BENCH_CPUPROFILE=file has each child write the CPU profile
// of its run to file.1 (converting) or file.0 (rewriting).
func BenchmarkEqualityConversion(b *testing.B) {
	for _, in := range []struct {
		name     string
		cdc      cdcTable
		targetMB int
		schema   *iceberg.Schema
	}{
		{"300-keys", cdcTable{appends: 8, bigRows: 60000, checkpoints: 3, upserts: 100}, 1, tableenv.BaseSchema},
		{"100k-keys", cdcTable{appends: 32, bigRows: 60000, checkpoints: 4, upserts: 25000}, 1, tableenv.BaseSchema},
		{"300-keys-2.3M-rows", cdcTable{appends: 8, bigRows: 288000, checkpoints: 3, upserts: 100}, 5, tableenv.BaseSchema},
		{"issue-table", cdcTable{appends: 8, bigRows: flinkRows, checkpoints: 3, upserts: 100, props: flinkProps}, 32, payloadSchema},
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
					e, tbl := newEnvWith(b, configs.Embedded(home), home, in.schema, *iceberg.UnpartitionedSpec, "2")
					tbl, big := in.cdc.fill(e, tbl)
					snap := tbl.CurrentSnapshot().SnapshotID
					if i == 0 && convert > 0 {
						b.Logf("%d well-sized files of %.1f MiB on average", len(big), float64(sizeOf(e, tbl, big))/float64(len(big))/(1<<20))
					}
					want := e.Rows(tbl, 0)
					if err := os.WriteFile(filepath.Join(home, benchTargetFile), []byte(strconv.Itoa(in.targetMB)), 0o644); err != nil {
						b.Fatal(err)
					}
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
					if got := e.Rows(e.Load(), snap); !got.Equal(want) {
						b.Fatalf("the snapshot before the run reads %v, want %v", got, want)
					}
					if convert > 0 {
						live := liveDataPaths(e, e.Load())
						for _, p := range big {
							if !slices.Contains(live, p) {
								b.Fatalf("conversion rewrote well-sized file %s", p)
							}
						}
					}
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

// BenchmarkEqualityConversionChunks measures conversion's memory on one
// partition with 2,000,000 upserted keys: 40 well-sized files of 60,000
// rows (2,400,000 rows), then 4 checkpoints of 500,000 upserts, v2 on
// local disk. The new versions are left to the writer (a minimum file age
// of an hour), so the run is conversion alone: no data rewrite. Two
// sides, each one compaction run in a child process on its own fresh
// table: keys held in chunks of 250,000, and all at once (one chunk, as
// before chunking); iterations alternate which side runs first. Per side
// it reports ms/op, peak RSS, chunks and bytes read; the rows are checked
// after each side, untimed.
//
//	go test -run '^$' -bench EqualityConversionChunks -benchtime 1x -timeout 60m ./compactor
//
// ICEKEEPER_BENCH_KEYS=n upserts n keys instead, over n×1.2 rows in files
// of 60,000 rows, and ICEKEEPER_BENCH_SIDE=chunked (or whole) runs that
// side alone; a side's table takes minutes to build per 2,000,000 keys.
// ICEKEEPER_BENCH_CHUNK=n sets the chunked side's bound.
func BenchmarkEqualityConversionChunks(b *testing.B) {
	keys, chunk := 2_000_000, int64(250_000)
	if n, err := strconv.Atoi(os.Getenv("ICEKEEPER_BENCH_KEYS")); err == nil && n > 0 {
		keys = n
	}
	if n, err := strconv.ParseInt(os.Getenv("ICEKEEPER_BENCH_CHUNK"), 10, 64); err == nil && n > 0 {
		chunk = n
	}
	cdc := cdcTable{appends: keys * 6 / 5 / 60000, bigRows: 60000, checkpoints: 4, upserts: keys / 4}
	type side struct {
		name  string
		chunk int64
	}
	sides := []side{{"chunked", chunk}, {"whole", 1 << 40}}
	if only := os.Getenv("ICEKEEPER_BENCH_SIDE"); only != "" {
		sides = slices.DeleteFunc(sides, func(s side) bool { return s.name != only })
	}
	res := make([]child.Result, len(sides))
	for i := 0; i < b.N; i++ {
		for k := range sides {
			s := (k + i) % len(sides)
			b.StopTimer()
			home := b.TempDir()
			e, tbl := newEnvWith(b, configs.Embedded(home), home, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
			start := time.Now()
			tbl, _ = cdc.fill(e, tbl)
			b.Logf("table built in %s", time.Since(start).Round(time.Second))
			want := e.Rows(tbl, 0)
			b.StartTimer()
			r, err := child.Run("TestEqualityConversionBenchChild", "1", home, strconv.FormatInt(sides[s].chunk, 10))
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			res[s].Add(r)
			checkRows(b, e, want)
			b.StartTimer()
		}
	}
	N := float64(b.N)
	for k, s := range sides {
		b.ReportMetric(res[k].Ms/N, s.name+"-ms")
		b.ReportMetric(res[k].PeakRSSMiB/N, s.name+"-peak-RSS-MiB")
		b.ReportMetric(float64(res[k].Count)/N, s.name+"-chunks")
		b.ReportMetric(float64(res[k].Bytes)/N, s.name+"-bytes-read")
		b.ReportMetric(float64(res[k].AllocBytes)/N, s.name+"-B-alloc")
	}
}

// payloadSchema is tableenv.BaseSchema with a row body: a string of 50–200
// random characters (testkit.RandomRecord), so that files and row groups
// reach a streaming writer's sizes at its row counts.
var payloadSchema = iceberg.NewSchema(0, append(tableenv.BaseSchema.Fields(),
	iceberg.NestedField{ID: 7, Name: "payload", Type: iceberg.PrimitiveTypes.String})...)

// benchTargetFile, in a benchmark's home, holds the compaction target in
// MB its child runs with (absent: 1).
const benchTargetFile = "target-mb"

// TestEqualityConversionBenchChild is the child side of
// BenchmarkEqualityConversion and BenchmarkEqualityConversionChunks: one
// compaction run of the table under home, with conversion on (args[0] 1)
// or off (0). With args[2], conversion holds at most that many keys at
// once, and files younger than an hour are left to the writer.
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
	targetMB := 1
	if data, err := os.ReadFile(filepath.Join(home, benchTargetFile)); err == nil {
		if targetMB, err = strconv.Atoi(string(data)); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Buckets[0].Maintenance[maintenance.Compaction] = maintenance.Config{Settings: &maintenance.CompactionSettings{
		TargetFileSizeMB: maintenance.Int(targetMB), Strategy: maintenance.StrategyBinpack}}
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
	job := &Job{}
	if len(args) > 2 {
		if job.ConvertChunkKeys, err = strconv.ParseInt(args[2], 10, 64); err != nil {
			t.Fatal(err)
		}
		e.Defaults.Knobs.MinFileAgeMinutes = 60
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if p := os.Getenv("ICEKEEPER_BENCH_CPUPROFILE"); p != "" {
		f, err := os.Create(p + "." + args[0])
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	out, fig := e.compact(job)
	ms := float64(time.Since(start).Microseconds()) / 1000
	pprof.StopCPUProfile()
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
	child.ReportResult(child.Result{Ms: ms, Count: fig.ConvertChunks, Bytes: read, AllocBytes: int64(after.TotalAlloc - before.TotalAlloc)})
}

// sizeOf sums the sizes of the current snapshot's data files in paths.
func sizeOf(e *env, tbl *table.Table, paths []string) int64 {
	e.T.Helper()
	tasks, err := tbl.Scan().PlanFiles(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	var n int64
	for _, t := range tasks {
		if slices.Contains(paths, t.File.FilePath()) {
			n += t.File.FileSizeBytes()
		}
	}
	return n
}

func checkRows(b *testing.B, e *env, want tablecheck.Fingerprint) {
	if got := e.Rows(e.Load(), 0); !got.Equal(want) {
		b.Fatalf("rows %v, want %v", got, want)
	}
	if n := count(e.liveDeletes(), iceberg.EntryContentEqDeletes); n != 0 {
		b.Fatalf("%d equality delete files left", n)
	}
}
