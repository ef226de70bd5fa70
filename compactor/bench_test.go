package compactor

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/cost"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/child"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// BenchmarkCompaction compares icekeeper's compaction with iceberg-go
// v0.7.0's compaction.Analyze + Table.RewriteDataFiles, side by side on
// identical copies of each input, each side in its own child process:
//
//   - small-files: 200 Parquet files of about 1 MB (int, long, timestamp,
//     double with nulls, a low-cardinality string, a random 50–200 character
//     string; zstd, iceberg-go's and Flink's default) toward 128 MB; the
//     same with snappy; the same on format version 3, where every row's
//     _row_id and _last_updated_sequence_number are kept;
//     small-files-114k is 300 files of about 114 KB, where what a file
//     costs besides its bytes shows;
//   - many-partitions: 3,200 tiny files over 16 partitions;
//   - flink-shaped: 8 files of about 32 MB, each 4 row groups of about
//     8 MB (a Flink job's output under write.target-file-size-bytes 32 MB
//     and write.parquet.row-group-size-bytes 8 MB), toward 512 MB: the
//     row groups are healthy, and icekeeper copies them; the same on
//     format version 3, where icekeeper adds the lineage columns to the
//     copies; and flink-row-limit, the same files made by the row limit
//     alone (the row-group size left at Iceberg's 128 MB), whose row
//     groups are full by rows;
//
// on local disk, on S3 (versitygw on loopback) and on S3 behind a proxy
// that holds every response back 20 ms, as a remote object store does.
//
//	scripts/bench.sh -bench Compaction ./compactor
func BenchmarkCompaction(b *testing.B) {
	files := 200
	if v, err := strconv.Atoi(os.Getenv("ICEKEEPER_BENCH_COMPACT_FILES")); err == nil && v > 0 {
		files = v
	}
	for _, in := range []struct {
		name        string
		storage     string // local, s3, s3-20ms
		appends     int
		partitioned bool
		rows        int
		codec       string
		flink       iceberg.Properties // flink-shaped: the properties making the appends' files and row groups Flink's
		v3          bool               // format version 3: row lineage
	}{
		{"local/small-files", "local", files, false, 4800, "zstd", nil, false},
		{"local/small-files-114k", "local", 300, false, 860, "zstd", nil, false},
		{"local/small-files-snappy", "local", files, false, 4800, "snappy", nil, false},
		{"local/small-files-v3", "local", files, false, 4800, "zstd", nil, true},
		{"local/many-partitions", "local", files, true, 40, "zstd", nil, false},
		{"local/flink-shaped", "local", 8, false, flinkRows, "zstd", flinkProps, false},
		{"local/flink-row-limit", "local", 8, false, flinkRows, "zstd", flinkRowLimitProps, false},
		{"local/flink-shaped-v3", "local", 8, false, flinkRows, "zstd", flinkProps, true},
		{"s3/small-files", "s3", files, false, 4800, "zstd", nil, false},
		{"s3/many-partitions", "s3", files, true, 40, "zstd", nil, false},
		{"s3-20ms/small-files", "s3-20ms", files, false, 4800, "zstd", nil, false},
		{"s3-20ms/many-partitions", "s3-20ms", files, true, 40, "zstd", nil, false},
		{"s3-20ms/flink-shaped", "s3-20ms", 8, false, flinkRows, "zstd", flinkProps, false},
		{"s3-20ms/small-files-v3", "s3-20ms", files, false, 4800, "zstd", nil, true},
		{"s3-20ms/flink-shaped-v3", "s3-20ms", 8, false, flinkRows, "zstd", flinkProps, true},
	} {
		b.Run(in.name, func(b *testing.B) {
			var ik, ig child.Result
			var inputBytes int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				home := b.TempDir()
				build, run := benchConfigs(b, home, in.storage)
				var err error
				props, targetMB := iceberg.Properties{}, "128"
				if in.flink != nil {
					props, targetMB = in.flink, "512"
				}
				if in.v3 {
					props = maps.Clone(props)
					props["format-version"] = "3"
				}
				if inputBytes, err = buildCompactionInput(build, in.appends, in.rows, in.partitioned, in.codec, props); err != nil {
					b.Fatal(err)
				}
				if err := writeConfig(filepath.Join(home, "catalog.json"), run); err != nil {
					b.Fatal(err)
				}
				// The state store's schema is made once on a machine, not at
				// each run: the child opens a store made here.
				store, err := state.Open(context.Background(), "sqlite://"+filepath.Join(home, "state.db"))
				if err != nil {
					b.Fatal(err)
				}
				store.Close()
				b.StartTimer()
				rik, rig, err := child.Pair(i, "TestCompactionBenchChild", home, targetMB)
				if err != nil {
					b.Fatal(err)
				}
				ik.Add(rik)
				ig.Add(rig)
			}
			N := float64(b.N)
			mb := float64(inputBytes) / (1 << 20)
			b.ReportMetric(mb, "input-MiB")
			b.ReportMetric(mb/(ik.Ms/N/1000), "icekeeper-MiB/s")
			b.ReportMetric(mb/(ig.Ms/N/1000), "iceberg-go-MiB/s")
			b.ReportMetric(ig.Ms/ik.Ms, "throughput-ratio")
			b.ReportMetric(ik.CPUMs/N/1000, "icekeeper-CPU-s")
			b.ReportMetric(ig.CPUMs/N/1000, "iceberg-go-CPU-s")
			b.ReportMetric(ig.CPUMs/ik.CPUMs, "CPU-ratio")
			b.ReportMetric(ik.PeakRSSMiB/N, "icekeeper-peak-RSS-MiB")
			b.ReportMetric(ig.PeakRSSMiB/N, "iceberg-go-peak-RSS-MiB")
			b.ReportMetric(float64(ik.Bytes)/N/(1<<20), "icekeeper-out-MiB")
			b.ReportMetric(float64(ig.Bytes)/N/(1<<20), "iceberg-go-out-MiB")
			b.ReportMetric(float64(ik.Count)/N, "icekeeper-out-files")
			b.ReportMetric(float64(ig.Count)/N, "iceberg-go-out-files")
			if os.Getenv("ICEKEEPER_BENCH_VERBOSE") != "" {
				// The MiB above round away the differences in output size
				// that matter.
				b.Logf("output bytes, all iterations: icekeeper %d, iceberg-go %d", ik.Bytes, ig.Bytes)
			}
			if ik.Requests > 0 {
				b.ReportMetric(float64(ik.Requests)/N, "icekeeper-requests")
				b.ReportMetric(float64(ig.Requests)/N, "iceberg-go-requests")
				b.ReportMetric(ik.USD/N, "icekeeper-request-USD")
				b.ReportMetric(ig.USD/N, "iceberg-go-request-USD")
			}
			b.ReportMetric(ik.S3TablesUSD/N, "S3-Tables-USD")
		})
	}
}

// The flink-shaped input: rows per append and the table properties that
// make each append one file of 4 row groups of about 8 MB. iceberg-go's
// writer bounds row groups by rows, so the row limit makes the size; the
// size property is what a Flink job sets, and what the copy rule reads.
const flinkRows = 4 * 72_000

var flinkProps = iceberg.Properties{
	"write.parquet.row-group-limit":      "72000",
	"write.parquet.row-group-size-bytes": strconv.Itoa(8 << 20),
	"write.target-file-size-bytes":       strconv.Itoa(32 << 20),
}

// flinkRowLimitProps make the same files with the row limit alone: the
// row-group size is Iceberg's default 128 MB, so the 8 MB row groups are
// full by rows, not by bytes.
var flinkRowLimitProps = iceberg.Properties{
	"write.parquet.row-group-limit": "72000",
	"write.target-file-size-bytes":  strconv.Itoa(32 << 20),
}

// benchConfigs returns the configuration the input is built with and the
// one the sides run with: the embedded default on local disk, or a SQLite
// catalog over an S3 warehouse, reached directly to build and through the
// latency proxy to run.
func benchConfigs(b *testing.B, home, storage string) (build, run *configs.Config) {
	if storage == "local" {
		return configs.Embedded(home), configs.Embedded(home)
	}
	srv := servers.S3(b)
	build, run = tableenv.SQLOnS3(home, srv), tableenv.SQLOnS3(home, srv)
	if storage == "s3-20ms" {
		run = tableenv.SQLOnS3(home, srv.WithLatency(b, 20*time.Millisecond))
	}
	return build, run
}

// tableOf names each side's copy of the input.
func tableOf(side string) string { return strings.ReplaceAll(side, "-", "_") }

// writeConfig writes the catalog properties the children open.
func writeConfig(path string, cfg *configs.Config) error {
	data, err := json.Marshal(cfg.Buckets[0].Catalog)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// TestCompactionBenchChild is the child side of BenchmarkCompaction.
func TestCompactionBenchChild(t *testing.T) {
	args := child.Args()
	if args == nil {
		t.Skip("benchmark child only")
	}
	variant, home := args[0], args[1]
	targetMB, err := strconv.Atoi(args[2])
	if err != nil {
		t.Fatal(err)
	}
	target := int64(targetMB) << 20
	ctx := context.Background()
	cfg := configs.Embedded(home)
	data, err := os.ReadFile(filepath.Join(home, "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &cfg.Buckets[0].Catalog); err != nil {
		t.Fatal(err)
	}
	// ICEKEEPER_BENCH_UNSIGNED_PAYLOAD: both sides' uploads unsigned
	// (s3UnsignedPayload), for what the SHA-256 of signed bodies costs.
	cfg.Buckets[0].S3UnsignedPayload = os.Getenv("ICEKEEPER_BENCH_UNSIGNED_PAYLOAD") != ""
	reg := cfg.Registry()
	defer reg.Close()
	b, _ := reg.Bucket("local")
	id := bucket.TableID{Namespace: []string{"bench"}, Name: tableOf(variant)}
	start := time.Now()
	var files int
	var bytes int64
	// What each side's requests cost: icekeeper's run meters its own;
	// iceberg-go's run is metered through the same table IO and clients.
	var spent cost.Figures
	switch variant {
	case child.Icekeeper:
		store, err := state.Open(ctx, "sqlite://"+filepath.Join(home, "state.db"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Buckets[0].Maintenance[maintenance.Compaction] = maintenance.Config{Settings: &maintenance.CompactionSettings{TargetFileSizeMB: maintenance.Int(targetMB), Strategy: maintenance.StrategyBinpack}}
		// ICEKEEPER_BENCH_SKIP_ROW_CHECK measures the run without its row
		// check, for the check's cost beside the same baseline.
		job := &Job{SkipRowCheck: os.Getenv("ICEKEEPER_BENCH_SKIP_ROW_CHECK") != ""}
		r := &jobs.Runner{Store: store, Resolver: &jobs.Resolver{Store: store, Defaults: cfg.Defaults()}, Jobs: jobs.Map(job.Definition())}
		out, err := r.Run(ctx, jobs.Target{Bucket: b, Table: id}, maintenance.Compaction, "bench", jobs.Options{})
		if err != nil || out.Status != state.Successful {
			t.Fatalf("%+v %v", out, err)
		}
		fig := out.Figures.(*Figures)
		files, bytes = fig.OutputFiles, fig.OutputBytes
		if os.Getenv("ICEKEEPER_BENCH_VERBOSE") != "" {
			fmt.Fprintln(os.Stderr, fig.Text())
		}
		if c := jobs.RunCost(out.Figures); c != nil {
			spent = *c
		}
	case child.IcebergGo:
		meter := &cost.Meter{}
		ctx := cost.With(b.WithTableIO(ctx), meter)
		tbl, err := b.LoadTable(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		cfg := compaction.DefaultConfig()
		cfg.TargetFileSizeBytes, cfg.MinFileSizeBytes, cfg.MaxFileSizeBytes = target, target*3/4, target*9/5
		plan, err := compaction.Analyze(ctx, tbl, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var groups []table.CompactionTaskGroup
		for _, g := range plan.Groups {
			groups = append(groups, table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes})
		}
		res, err := tbl.RewriteDataFiles(ctx, groups, table.RewriteDataFilesOptions{GroupOptions: []table.CompactionGroupOption{table.WithCompactionTargetFileSize(target)}})
		if err != nil {
			t.Fatal(err)
		}
		files, bytes = res.AddedDataFiles, res.BytesAfter
		spent = meter.Figures(cost.DefaultPrices(), cost.Work{})
	}
	child.ReportResult(child.Result{Ms: float64(time.Since(start).Microseconds()) / 1000, Count: files, Bytes: bytes,
		Requests: spent.Requests, USD: spent.USD, S3TablesUSD: spent.S3TablesUSD})
}

var benchArrow = arrow.NewSchema([]arrow.Field{
	{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "l", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "d", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "text", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "p", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
}, nil)

// buildCompactionInput creates bench.icekeeper and bench.iceberg_go with
// identical contents (same seed) and returns one copy's data bytes.
func buildCompactionInput(cfg *configs.Config, appends, rows int, partitioned bool, codec string, extra iceberg.Properties) (int64, error) {
	reg := cfg.Registry()
	defer reg.Close()
	b, _ := reg.Bucket("local")
	return buildBenchTables(context.Background(), b, []string{tableOf(child.Icekeeper), tableOf(child.IcebergGo)}, appends, rows, partitioned, codec, extra)
}

// buildBenchTables creates the tables bench.NAME in b, each filled with the
// same appends (same seed), and returns one copy's data bytes.
func buildBenchTables(ctx context.Context, b *bucket.Bucket, names []string, appends, rows int, partitioned bool, codec string, extra iceberg.Properties) (int64, error) {
	cat, err := b.Catalog(ctx)
	if err != nil {
		return 0, err
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"bench"}, nil); err != nil {
		return 0, err
	}
	sc := benchSchema()
	spec := *iceberg.UnpartitionedSpec
	if partitioned {
		spec = iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{7}, FieldID: 1000, Name: "p", Transform: iceberg.IdentityTransform{}})
	}
	var total int64
	props := iceberg.Properties{"write.parquet.compression-codec": codec, "commit.manifest-merge.enabled": "false"}
	maps.Copy(props, extra)
	for _, name := range names {
		tbl, err := cat.CreateTable(ctx, table.Identifier{"bench", name}, sc, catalog.WithPartitionSpec(&spec), catalog.WithProperties(props))
		if err != nil {
			return 0, err
		}
		rng := rand.New(rand.NewPCG(3, 4))
		for a := 0; a < appends; a++ {
			rec := benchRecord(rng, rows, partitioned)
			rdr, _ := array.NewRecordReader(benchArrow, []arrow.RecordBatch{rec})
			tbl, err = tbl.Append(ctx, rdr, nil)
			rdr.Release()
			rec.Release()
			if err != nil {
				return 0, err
			}
		}
		var n int64
		fmt.Sscan(tbl.CurrentSnapshot().Summary.Properties["total-files-size"], &n)
		total = n
	}
	return total, nil
}

// benchSchema is a streaming writer's typical table: numbers, a timestamp,
// a low-cardinality string and a random text column that holds most of the
// bytes.
func benchSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "i", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 2, Name: "l", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 3, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 4, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 5, Name: "kind", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 6, Name: "text", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 7, Name: "p", Type: iceberg.PrimitiveTypes.Int32},
	)
}

var kinds = []string{"view", "click", "purchase", "signup", "logout", "error", "bot", "share"}

func benchRecord(rng *rand.Rand, rows int, partitioned bool) arrow.RecordBatch {
	bld := array.NewRecordBuilder(memory.DefaultAllocator, benchArrow)
	defer bld.Release()
	parts := 1
	if partitioned {
		parts = 16
	}
	text := make([]byte, 200)
	for p := 0; p < parts; p++ {
		for r := 0; r < rows; r++ {
			bld.Field(0).(*array.Int32Builder).Append(rng.Int32())
			bld.Field(1).(*array.Int64Builder).Append(rng.Int64())
			bld.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + rng.Int64N(86_400_000_000)))
			if rng.IntN(10) == 0 {
				bld.Field(3).AppendNull()
			} else {
				bld.Field(3).(*array.Float64Builder).Append(rng.Float64() * 1000)
			}
			bld.Field(4).(*array.StringBuilder).Append(kinds[rng.IntN(len(kinds))])
			n := 50 + rng.IntN(151)
			for i := 0; i < n; i++ {
				text[i] = byte(' ' + rng.IntN(95))
			}
			bld.Field(5).(*array.StringBuilder).Append(string(text[:n]))
			bld.Field(6).(*array.Int32Builder).Append(int32(p))
		}
	}
	return bld.NewRecordBatch()
}
