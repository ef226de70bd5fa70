package orphan

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// BenchmarkRemovalBucket measures what the check of a bucket's other
// tables costs one table's removal run, on a bucket of N tables (two
// appends each) on local disk with the embedded SQLite catalog:
//
//   - cold: a fresh state store, so every other table's manifest lists and
//     manifests are read (and indexed);
//   - daemon: the same job's next run, which remembers what each unchanged
//     table references outside its own prefixes;
//   - one-shot: a fresh job on the same store (`icekeeper run`), which
//     takes the other tables' references from the reference index.
//
// It reports each run's time and the files the kernel saw opened in the
// other tables' metadata directories (metadata files, manifest lists and
// manifests).
//
//	ICEKEEPER_BENCH_TABLES=1000 go test -run '^$' -bench RemovalBucket -benchtime 3x ./orphan
func BenchmarkRemovalBucket(b *testing.B) {
	n := envInt("ICEKEEPER_BENCH_TABLES", 1000)
	home := b.TempDir()
	bk := benchBucket(b, home, "file://"+filepath.Join(home, "warehouse"), nil)
	tables := fillBucket(b, bk, n)
	var dirs []string
	for _, tbl := range tables[1:] {
		dirs = append(dirs, strings.TrimPrefix(strings.TrimSuffix(tbl.Location(), "/"), "file://")+"/metadata")
	}
	opens := testkit.WatchOpens(b, dirs[0], dirs[1:]...)
	ctx := context.Background()
	target := jobs.Target{Bucket: bk, Table: tablesID(tables[0])}
	run := func(job *Job, store state.Store) (float64, *Figures, testkit.OpenCounts) {
		b.Helper()
		r := &jobs.Runner{Store: store, Jobs: jobs.Map(job.Definition())}
		opens.Take()
		start := time.Now()
		out, err := r.Run(ctx, target, maintenance.UnreferencedFileRemoval, "bench", jobs.Options{DryRun: false, Now: time.Now()})
		if err != nil || out.Status != state.Successful {
			b.Fatalf("%+v %v", out, err)
		}
		return float64(time.Since(start).Microseconds()) / 1000, out.Figures.(*Figures), opens.Take()
	}
	var cold, daemon, oneShot float64
	var coldOpens, daemonOpens, oneShotOpens testkit.OpenCounts
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		store, err := state.Open(ctx, "sqlite://"+filepath.Join(b.TempDir(), "state.db"))
		if err != nil {
			b.Fatal(err)
		}
		job := &Job{Store: store}
		ms, fig, o := run(job, store)
		if fig.Bucket.Tables != n-1 {
			b.Fatalf("checked %d other tables, want %d", fig.Bucket.Tables, n-1)
		}
		cold += ms
		coldOpens = add(coldOpens, o)
		ms, fig, o = run(job, store)
		if fig.Bucket.ManifestsRead != 0 || o.ManifestLists+o.Manifests != 0 {
			b.Fatalf("the daemon's second run read %d manifests (opened %+v)", fig.Bucket.ManifestsRead, o)
		}
		daemon += ms
		daemonOpens = add(daemonOpens, o)
		ms, fig, o = run(&Job{Store: store}, store)
		if fig.Bucket.ManifestsRead != 0 {
			b.Fatalf("a one-shot run on an indexed bucket read %d manifests", fig.Bucket.ManifestsRead)
		}
		oneShot += ms
		oneShotOpens = add(oneShotOpens, o)
		store.Close()
	}
	N := float64(b.N)
	b.ReportMetric(cold/N, "cold-ms")
	b.ReportMetric(daemon/N, "daemon-ms")
	b.ReportMetric(oneShot/N, "one-shot-ms")
	b.ReportMetric(float64(coldOpens.ManifestLists+coldOpens.Manifests)/N, "cold-manifests-opened")
	b.ReportMetric(float64(daemonOpens.ManifestLists+daemonOpens.Manifests)/N, "daemon-manifests-opened")
	b.ReportMetric(float64(oneShotOpens.ManifestLists+oneShotOpens.Manifests)/N, "one-shot-manifests-opened")
	b.ReportMetric(float64(daemonOpens.Metadata)/N, "daemon-metadata-files-opened")
	b.ReportMetric(cold/daemon, "daemon-speedup")
}

func add(a, b testkit.OpenCounts) testkit.OpenCounts {
	return testkit.OpenCounts{Metadata: a.Metadata + b.Metadata, ManifestLists: a.ManifestLists + b.ManifestLists,
		Manifests: a.Manifests + b.Manifests, Other: a.Other + b.Other}
}

func tablesID(tbl *table.Table) bucket.TableID {
	id := tbl.Identifier()
	return bucket.TableID{Namespace: id[:len(id)-1], Name: id[len(id)-1]}
}
