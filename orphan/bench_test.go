package orphan

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/sourcegraph/conc/pool"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/arn"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/child"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// BenchmarkRemovalScan compares icekeeper's unreferenced-file scan (a dry
// run: collect references, list, decide) with iceberg-go v0.7.0's
// PlanOrphanFiles on the same table, side by side, each in its own child
// process. The table location holds N objects, 90% referenced through
// manifests and 10% strays old enough to mark.
//
//	scripts/bench.sh -bench RemovalScan ./orphan
//
// (bench.sh starts the versitygw S3 server the s3 cases need.) The s3-20ms
// case reaches the same server through a proxy that holds every response
// back 20 ms, as a remote object store's round trip does.
// ICEKEEPER_BENCH_OBJECTS sets N for local disk (default 1,000,000);
// ICEKEEPER_BENCH_S3_OBJECTS for the S3 server (default 100,000).
func BenchmarkRemovalScan(b *testing.B) {
	b.Run("local", func(b *testing.B) {
		n := envInt("ICEKEEPER_BENCH_OBJECTS", 1_000_000)
		home := b.TempDir()
		bk := benchBucket(b, home, "file://"+filepath.Join(home, "warehouse"), nil)
		if err := buildRemovalTable(context.Background(), bk, n, localPut(home)); err != nil {
			b.Fatal(err)
		}
		compareRemoval(b, home, "", "", n)
	})
	for _, latency := range []time.Duration{0, 20 * time.Millisecond} {
		name := "s3"
		if latency > 0 {
			name = fmt.Sprintf("s3-%dms", latency.Milliseconds())
		}
		b.Run(name, func(b *testing.B) {
			n := envInt("ICEKEEPER_BENCH_S3_OBJECTS", 100_000)
			srv := servers.S3(b)
			home := b.TempDir()
			bk := benchBucket(b, home, "s3://"+srv.Bucket+"/warehouse", srv.Props())
			if err := buildRemovalTable(context.Background(), bk, n, s3Put(srv)); err != nil {
				b.Fatal(err)
			}
			endpoint := srv.Endpoint
			if latency > 0 {
				endpoint = srv.WithLatency(b, latency).Endpoint
			}
			compareRemoval(b, home, srv.Bucket, endpoint, n)
		})
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func compareRemoval(b *testing.B, home, s3Bucket, endpoint string, n int) {
	var ik, ig child.Result
	for i := 0; i < b.N; i++ {
		rik, rig, err := child.Pair(i, "TestRemovalBenchChild", home, s3Bucket, endpoint)
		if err != nil {
			b.Fatal(err)
		}
		if rik.Count != n/10 || rig.Count != n/10 {
			b.Fatalf("found %d (icekeeper) and %d (iceberg-go) unreferenced objects, want %d", rik.Count, rig.Count, n/10)
		}
		ik.Add(rik)
		ig.Add(rig)
	}
	N := float64(b.N)
	b.ReportMetric(ik.Ms/N, "icekeeper-ms")
	b.ReportMetric(ig.Ms/N, "iceberg-go-ms")
	b.ReportMetric(ik.PeakRSSMiB/N, "icekeeper-peak-RSS-MiB")
	b.ReportMetric(ig.PeakRSSMiB/N, "iceberg-go-peak-RSS-MiB")
	b.ReportMetric(ig.Ms/ik.Ms, "speedup")
	b.ReportMetric(ik.PeakRSSMiB/ig.PeakRSSMiB, "RSS-ratio")
}

// TestRemovalBenchChild is the child side of BenchmarkRemovalScan.
func TestRemovalBenchChild(t *testing.T) {
	args := child.Args()
	if args == nil {
		t.Skip("benchmark child only")
	}
	variant, home, s3Bucket, endpoint := args[0], args[1], args[2], args[3]
	ctx := context.Background()
	var props map[string]string
	warehouse := "file://" + filepath.Join(home, "warehouse")
	if s3Bucket != "" {
		props = servers.S3Server{Endpoint: endpoint, Key: os.Getenv(servers.EnvS3Key), Secret: os.Getenv(servers.EnvS3Secret)}.Props()
		warehouse = "s3://" + s3Bucket + "/warehouse"
	}
	bk := benchBucket(t, home, warehouse, props)
	id := bucket.TableID{Namespace: []string{"bench"}, Name: "t"}
	// Strays are old by storage time on local disk. On S3 their age cannot
	// be set, so icekeeper looks ten days ahead and iceberg-go (which takes
	// no clock) treats every unreferenced object as old enough.
	ahead, olderThan := time.Duration(0), 3*24*time.Hour
	if s3Bucket != "" {
		ahead, olderThan = 10*24*time.Hour, 0
	}
	start := time.Now()
	var found int
	switch variant {
	case child.Icekeeper:
		store, err := state.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "state.db"))
		if err != nil {
			t.Fatal(err)
		}
		job := &Job{Store: store}
		r := &jobs.Runner{Store: store, Jobs: jobs.Map(job.Definition())}
		out, err := r.Run(ctx, jobs.Target{Bucket: bk, Table: id}, maintenance.UnreferencedFileRemoval, "bench", jobs.Options{DryRun: true, Now: time.Now().Add(ahead)})
		if err != nil || out.Status != state.Successful {
			t.Fatalf("%+v %v", out, err)
		}
		found = out.Figures.(*Figures).Marked
	case child.IcebergGo:
		tbl, err := bk.LoadTable(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := tbl.PlanOrphanFiles(ctx, table.WithFilesOlderThan(olderThan))
		if err != nil {
			t.Fatal(err)
		}
		found = len(plan.Files())
	}
	child.Report(float64(time.Since(start).Microseconds())/1000, found)
}

func benchBucket(tb testing.TB, home, warehouse string, props map[string]string) *bucket.Bucket {
	cfg := configs.Embedded(home)
	cfg.Buckets[0].Catalog["warehouse"] = warehouse
	for k, v := range props {
		cfg.Buckets[0].Catalog[k] = v
	}
	a, _ := arn.Parse(configs.LocalBucketARN)
	cfg.Buckets[0].Parsed = a
	reg := cfg.Registry()
	tb.Cleanup(reg.Close)
	bk, _ := reg.Bucket("local")
	return bk
}

type putFunc func(ctx context.Context, location string, keys []string, age time.Duration) error

func localPut(home string) putFunc {
	return func(ctx context.Context, location string, keys []string, age time.Duration) error {
		dir := strings.TrimPrefix(location, "file://")
		mt := time.Now().Add(-age)
		made := map[string]bool{}
		for _, k := range keys {
			p := filepath.Join(dir, k)
			if d := filepath.Dir(p); !made[d] {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
				made[d] = true
			}
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				return err
			}
			if age > 0 {
				if err := os.Chtimes(p, mt, mt); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

func s3Put(srv servers.S3Server) putFunc {
	return func(ctx context.Context, location string, keys []string, _ time.Duration) error {
		prefix := strings.TrimPrefix(location, "s3://"+srv.Bucket+"/")
		p := pool.New().WithErrors().WithContext(ctx).WithMaxGoroutines(32)
		for _, k := range keys {
			p.Go(func(ctx context.Context) error {
				_, err := srv.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String(prefix + "/" + k), Body: bytes.NewReader(nil)})
				return err
			})
		}
		return p.Wait()
	}
}

// buildRemovalTable makes bench.t with n objects under its location: 90%
// data files registered in manifests (in 10 commits, as a writer would
// leave them) and 10% strays aged ten days, spread over 1,000 partition
// directories.
func buildRemovalTable(ctx context.Context, bk *bucket.Bucket, n int, put putFunc) error {
	cat, err := bk.Catalog(ctx)
	if err != nil {
		return err
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"bench"}, nil); err != nil {
		return err
	}
	tbl, err := cat.CreateTable(ctx, table.Identifier{"bench", "t"}, demo.Schema())
	if err != nil {
		return err
	}
	refs, strays := n*9/10, n/10
	key := func(kind string, i int) string { return fmt.Sprintf("data/part=%03d/%s-%07d.parquet", i%1000, kind, i) }
	const commits = 10
	for c := 0; c < commits; c++ {
		var keys []string
		var files []iceberg.DataFile
		for i := c * refs / commits; i < (c+1)*refs/commits; i++ {
			k := key("data", i)
			keys = append(keys, k)
			bld, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, tbl.Location()+"/"+k, iceberg.ParquetFile, nil, nil, nil, 1, 1)
			if err != nil {
				return err
			}
			files = append(files, bld.Build())
		}
		if err := put(ctx, tbl.Location(), keys, 0); err != nil {
			return err
		}
		tx := tbl.NewTransaction()
		if err := tx.AddDataFiles(ctx, files, nil); err != nil {
			return err
		}
		if tbl, err = tx.Commit(ctx); err != nil {
			return err
		}
	}
	var keys []string
	for i := 0; i < strays; i++ {
		keys = append(keys, key("stray", i))
	}
	return put(ctx, tbl.Location(), keys, 10*24*time.Hour)
}

// BenchmarkRemovalUnchanged measures what a removal run reads on an
// unchanged table of 300 snapshots on local disk (the embedded catalog
// and SQLite store), counting the manifest lists and manifests the kernel
// saw opened: the first run, which builds the reference index, then
// every further run (the benchmark's loop), which takes them from it; and
// a run whose index store is down, which reads everything as every run
// did before the index.
//
//	go test -run '^$' -bench RemovalUnchanged -benchtime 5x ./orphan
func BenchmarkRemovalUnchanged(b *testing.B) {
	d := testkit.NewDemoTable(b, demo.Options{Appends: 1})
	tbl, err := testkit.AppendCommits(d.Ctx, d.Load(), 298, 10, 1_000_000, rand.New(rand.NewPCG(3, 3)))
	if err != nil {
		b.Fatal(err)
	}
	opens := testkit.WatchOpens(b, strings.TrimPrefix(tbl.Location(), "file://")+"/metadata")
	run := func(job *Job) (*Figures, int, time.Duration) {
		b.Helper()
		opens.Take()
		start := time.Now()
		out := d.Run(job.Definition(), jobs.Options{Now: time.Now()})
		took := time.Since(start)
		if out.Status != state.Successful {
			b.Fatalf("%s %s", out.Status, out.FailureMessage)
		}
		o := opens.Take()
		return out.Figures.(*Figures), o.ManifestLists + o.Manifests, took
	}
	_, without, tookWithout := run(&Job{Store: testkit.FailingIndex{Store: d.Store}})
	first, read1, took1 := run(&Job{Store: d.Store})
	job := &Job{Store: d.Store}
	var read int
	var took time.Duration
	for b.Loop() {
		var n int
		var dt time.Duration
		_, n, dt = run(job)
		read += n
		took += dt
	}
	b.ReportMetric(float64(first.References.Snapshots), "snapshots")
	b.ReportMetric(float64(without), "reads/run-without-index")
	b.ReportMetric(float64(read1), "reads/first-run")
	b.ReportMetric(float64(read)/float64(b.N), "reads/unchanged-run")
	b.ReportMetric(float64(tookWithout.Milliseconds()), "ms/run-without-index")
	b.ReportMetric(float64(took1.Milliseconds()), "ms/first-run")
	b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "ms/unchanged-run")
}

// BenchmarkRemovalUnchangedS3 counts the S3 requests of removal runs on an
// unchanged table of 200 snapshots (SQL catalog on PostgreSQL, data on the
// test S3 server, reached through a counting proxy): a run without the
// index (its store down), the first run with it, and the unchanged runs
// after it (the loop).
//
//	go test -run '^$' -bench RemovalUnchangedS3 -benchtime 5x ./orphan
func BenchmarkRemovalUnchangedS3(b *testing.B) {
	ctx := context.Background()
	counter, proxied := servers.S3(b).Counted(b)
	reg := sqlS3Config(b, proxied).Registry()
	b.Cleanup(reg.Close)
	bk, _ := reg.Bucket("lake")
	tbl := testkit.NewTable(b, bk, "db", "events", demo.Schema())
	if _, err := testkit.AppendCommits(ctx, tbl, 200, 10, 1_000_000, rand.New(rand.NewPCG(3, 3))); err != nil {
		b.Fatal(err)
	}
	store, err := state.Open(ctx, "sqlite://"+filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	target := jobs.Target{Bucket: bk, Table: bucket.TableID{Namespace: []string{"db"}, Name: "events"}}
	run := func(job *Job) map[string]int {
		b.Helper()
		runner := &jobs.Runner{Store: store, Jobs: jobs.Map(job.Definition())}
		counter.Take()
		out, err := runner.Run(ctx, target, maintenance.UnreferencedFileRemoval, "test", jobs.Options{Now: time.Now()})
		if err != nil || out.Status != state.Successful {
			b.Fatalf("%v %s %s", err, out.Status, out.FailureMessage)
		}
		return counter.Take()
	}
	without := run(&Job{Store: testkit.FailingIndex{Store: store}})
	first := run(&Job{Store: store})
	job := &Job{Store: store}
	var after map[string]int
	for b.Loop() {
		after = run(job)
	}
	b.Logf("requests without the index %v, first run %v, unchanged run %v", without, first, after)
	b.ReportMetric(float64(servers.Total(without)), "requests/run-without-index")
	b.ReportMetric(float64(servers.Total(first)), "requests/first-run")
	b.ReportMetric(float64(servers.Total(after)), "requests/unchanged-run")
}
