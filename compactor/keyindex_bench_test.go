package compactor

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
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

// indexSchema is the key index benchmark's table: a random 64-bit key
// and a value. Keys spread over the whole range put every data file's
// bounds around every key, as UUID keys do: without the index, a run
// reads every file's key column whatever it deletes.
var indexSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.Int64, Required: true})

// indexKey is row i's key: a bijection of i (SplitMix64's finaliser),
// so keys are distinct and spread, and recomputed from i.
func indexKey(i int64) int64 {
	z := uint64(i) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return int64(z ^ (z >> 31))
}

// indexFileRows is the rows of each data file of the benchmark's table.
const indexFileRows = 250_000

// BenchmarkEqualityConversionIndex measures conversion with the key
// index (Job.KeyIndex) against conversion without it, on one
// unpartitioned v2 table of 2,000,000 or 10,000,000 rows with random
// long keys (indexKey) in data files of 250,000 rows, written through
// iceberg-go. Each side has its own table, built alike, and runs two
// compactions, each in a child process (internal/testkit/child):
//
//   - run 1 after a checkpoint of 1,000 upserts (an equality delete on
//     id, then the new versions): with the index it reads every data
//     file's key column, as without, and indexes it;
//   - run 2 after 1,000 more upserts: with the index it reads the new
//     equality delete, the one data file not yet indexed (run 1's new
//     versions) and the index rows of the 1,000 keys.
//
// Files younger than an hour are left to the writer, so each run is
// conversion alone. Per side and run it reports the wall time of the
// child's compaction, its peak RSS, and bytes read: key column chunks
// and equality delete files, plus index rows with the index (hash, file
// and position at 8 bytes each, and the entry); and the index's size on
// disk after run 1. Untimed, the rows read by iceberg-go are checked to
// be the same before and after each run, and the same on both sides.
//
//	go test -run '^$' -bench 'EqualityConversionIndex/2M' -benchtime 1x -timeout 60m ./compactor
//	go test -run '^$' -bench 'EqualityConversionIndex/10M' -benchtime 1x -timeout 120m ./compactor
//
// ICEKEEPER_BENCH_KEYS=n measures n keys instead (a sub-benchmark of its
// own), ICEKEEPER_BENCH_UPSERTS=n upserts n keys before run 2 instead of
// 1,000; ICEKEEPER_BENCH_CPUPROFILE=file has each child write the CPU
// profile of its run to file.SIDE.*.
func BenchmarkEqualityConversionIndex(b *testing.B) {
	sizes := []int{2_000_000, 10_000_000}
	if n, err := strconv.Atoi(os.Getenv("ICEKEEPER_BENCH_KEYS")); err == nil && n > 0 {
		sizes = []int{n}
	}
	upserts := 1000
	if n, err := strconv.Atoi(os.Getenv("ICEKEEPER_BENCH_UPSERTS")); err == nil && n > 0 {
		upserts = n
	}
	for _, keys := range sizes {
		name := fmt.Sprintf("%dM-keys", keys/1_000_000)
		if keys%1_000_000 != 0 {
			name = fmt.Sprintf("%d-keys", keys)
		}
		b.Run(name, func(b *testing.B) {
			type run struct {
				res child.Result
				fig convertFigures
			}
			var sides [2][2]run // [today, index][run 1, run 2]
			var indexBytes int64
			for range b.N {
				var fps [2][2]tablecheck.Fingerprint
				for s, name := range []string{"today", "index"} {
					b.StopTimer()
					home := b.TempDir()
					e, tbl := newEnvWith(b, configs.Embedded(home), home, indexSchema, *iceberg.UnpartitionedSpec, "2")
					start := time.Now()
					tbl = fillIndexTable(e, tbl, keys)
					b.Logf("%s: %d rows written in %s", name, keys, time.Since(start).Round(time.Second))
					rng := rand.New(rand.NewPCG(3, 4))
					for r := range 2 {
						n := 1000
						if r == 1 {
							n = upserts
						}
						tbl = indexUpserts(e, tbl, keys, rng, n)
						want := e.Rows(tbl, 0)
						fps[s][r] = want
						b.StartTimer()
						res, err := child.Run("TestEqualityConversionIndexBenchChild", name, home)
						b.StopTimer()
						if err != nil {
							b.Fatal(err)
						}
						var fig convertFigures
						data, err := os.ReadFile(filepath.Join(home, "figures.json"))
						if err != nil {
							b.Fatal(err)
						}
						if err := json.Unmarshal(data, &fig); err != nil {
							b.Fatal(err)
						}
						tbl = e.Load()
						if got := e.Rows(tbl, 0); !got.Equal(want) {
							b.Fatalf("%s run %d: rows %v, want %v", name, r+1, got, want)
						}
						if fig.ConvertRowsMatched == 0 || fig.ConvertIndexOff != "" {
							b.Fatalf("%s run %d matched %d rows; index off: %q", name, r+1, fig.ConvertRowsMatched, fig.ConvertIndexOff)
						}
						sides[s][r].res.Add(res)
						sides[s][r].fig = fig
						if s == 1 && r == 0 {
							indexBytes += dbSize(b, filepath.Join(home, "child-state.db"))
						}
						b.Logf("%s run %d: %.0f ms, %.1f MiB peak RSS, %d bytes of key columns and deletes read, %d bytes of index read, %d files indexed, %d looked up, %d rows matched",
							name, r+1, res.Ms, res.PeakRSSMiB, fig.ConvertBytesRead, fig.ConvertIndexBytesRead, fig.ConvertFilesIndexed, fig.ConvertFilesLookedUp, fig.ConvertRowsMatched)
					}
				}
				for r := range 2 {
					if !fps[0][r].Equal(fps[1][r]) {
						b.Fatalf("before run %d the sides read %v and %v", r+1, fps[0][r], fps[1][r])
					}
				}
			}
			N := float64(b.N)
			for s, name := range []string{"today", "index"} {
				for r := range 2 {
					p := fmt.Sprintf("%s-%d-", name, r+1)
					x := sides[s][r]
					b.ReportMetric(x.res.Ms/N, p+"ms")
					b.ReportMetric(x.res.PeakRSSMiB/N, p+"peak-RSS-MiB")
					b.ReportMetric(float64(x.fig.ConvertBytesRead+x.fig.ConvertIndexBytesRead), p+"bytes-read")
				}
			}
			today, index := sides[0][1].fig, sides[1][1].fig
			b.ReportMetric(float64(index.ConvertBytesRead+index.ConvertIndexBytesRead)/float64(today.ConvertBytesRead), "run-2-read-ratio")
			b.ReportMetric(float64(indexBytes)/N, "index-disk-bytes")
		})
	}
}

// fillIndexTable appends keys rows, row i with key indexKey(i) and value
// i, in data files of indexFileRows rows, one commit each.
func fillIndexTable(e *env, tbl *table.Table, keys int) *table.Table {
	e.T.Helper()
	for from := int64(0); from < int64(keys); from += indexFileRows {
		n := min(int64(indexFileRows), int64(keys)-from)
		ids, vals := make([]int64, n), make([]int64, n)
		for i := range n {
			ids[i], vals[i] = indexKey(from+i), from+i
		}
		tbl = appendIndexRows(e, tbl, ids, vals)
	}
	return tbl
}

// indexUpserts writes one checkpoint of n upserts of random rows of the
// first keys: an equality delete on id, then the new versions (value
// -1).
func indexUpserts(e *env, tbl *table.Table, keys int, rng *rand.Rand, n int) *table.Table {
	e.T.Helper()
	seen := map[int64]bool{}
	var ids, vals []int64
	for len(ids) < n {
		k := indexKey(rng.Int64N(int64(keys)))
		if !seen[k] {
			seen[k] = true
			ids, vals = append(ids, k), append(vals, -1)
		}
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		e.T.Fatal(err)
	}
	keySc := arrow.NewSchema([]arrow.Field{sc.Field(0)}, nil)
	bld := array.NewInt64Builder(memory.DefaultAllocator)
	bld.AppendValues(ids, nil)
	col := bld.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(keySc, []arrow.Array{col}, int64(len(ids)))
	defer rec.Release()
	tx := tbl.NewTransaction()
	if err := tx.CommitEqualityDeletes(e.Ctx, []int{1}, func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }, nil); err != nil {
		e.T.Fatal(err)
	}
	if tbl, err = tx.Commit(e.Ctx); err != nil {
		e.T.Fatal(err)
	}
	return appendIndexRows(e, tbl, ids, vals)
}

func appendIndexRows(e *env, tbl *table.Table, ids, vals []int64) *table.Table {
	e.T.Helper()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		e.T.Fatal(err)
	}
	var cols []arrow.Array
	for _, v := range [][]int64{ids, vals} {
		bld := array.NewInt64Builder(memory.DefaultAllocator)
		bld.AppendValues(v, nil)
		cols = append(cols, bld.NewArray())
		bld.Release()
	}
	rec := array.NewRecordBatch(sc, cols, int64(len(ids)))
	for _, c := range cols {
		c.Release()
	}
	defer rec.Release()
	rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	if err != nil {
		e.T.Fatal(err)
	}
	defer rdr.Release()
	if tbl, err = tbl.Append(e.Ctx, rdr, nil); err != nil {
		e.T.Fatal(err)
	}
	return tbl
}

// dbSize is the bytes of a SQLite database and its write-ahead log.
func dbSize(b *testing.B, path string) int64 {
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// TestEqualityConversionIndexBenchChild is the child side of
// BenchmarkEqualityConversionIndex: one compaction run of the table
// under args[1], with the key index in the state store beside it
// (args[0] "index") or without (args[0] "today"), writing its
// conversion figures to figures.json there.
func TestEqualityConversionIndexBenchChild(t *testing.T) {
	args := child.Args()
	if args == nil {
		t.Skip("benchmark child only")
	}
	home := args[1]
	ctx := context.Background()
	cfg := configs.Embedded(home)
	cfg.Buckets[0].Maintenance[maintenance.Compaction] = maintenance.Config{Settings: &maintenance.CompactionSettings{
		TargetFileSizeMB: maintenance.Int(512), Strategy: maintenance.StrategyBinpack}}
	reg := cfg.Registry()
	defer reg.Close()
	bk, _ := reg.Bucket("local")
	store, err := state.Open(ctx, "sqlite://"+filepath.Join(home, "child-state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e := &env{Env: &tableenv.Env{T: t, Ctx: ctx, B: bk, ID: bucket.TableID{Namespace: []string{"t"}, Name: "x"}, Store: store,
		Defaults: cfg.Buckets[0].Defaults()}}
	e.Defaults.Knobs.MinEqualityDeleteFilesToConvert = 1
	e.Defaults.Knobs.MinFileAgeMinutes = 60
	job := &Job{}
	if args[0] == "index" {
		job.KeyIndex = store
		e.Defaults.Knobs.ConvertKeyIndex = true
	}
	if p := os.Getenv("ICEKEEPER_BENCH_CPUPROFILE"); p != "" {
		f, err := os.CreateTemp(filepath.Dir(p), filepath.Base(p)+"."+args[0]+".*")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	out, fig := e.compact(job)
	ms := float64(time.Since(start).Microseconds()) / 1000
	pprof.StopCPUProfile()
	runtime.ReadMemStats(&after)
	if out.Status != state.Successful {
		t.Fatalf("%s %s\n%s", out.Status, out.FailureMessage, fig.Text())
	}
	data, err := json.Marshal(fig.convertFigures)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "figures.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("ICEKEEPER_BENCH_VERBOSE") != "" {
		fmt.Fprintln(os.Stderr, fig.Text())
	}
	child.ReportResult(child.Result{Ms: ms, Count: fig.ConvertFilesIndexed, Bytes: fig.ConvertBytesRead + fig.ConvertIndexBytesRead,
		AllocBytes: int64(after.TotalAlloc - before.TotalAlloc)})
}
