package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/maintenance"
)

// BenchmarkReplicas is compaction throughput against the number of
// `icekeeper serve` replicas sharing one PostgreSQL state store: 24
// tables of 40 small files each, in a PostgreSQL catalog on S3 that
// answers every request 20 ms late (toxiproxy), as remote object storage
// does. Each replica runs one job at a time, so the work is I/O-bound and
// spread only by the queue. Reports the tables compacted per second from
// the first run's start to the last one's end; run with -benchtime 1x.
func BenchmarkReplicas(b *testing.B) {
	bin := buildBinary(b)
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			for range b.N {
				benchReplicas(b, bin, n)
			}
		})
	}
}

func benchReplicas(b *testing.B, bin string, n int) {
	b.StopTimer()
	ctx := context.Background()
	direct := servers.S3(b)
	slow := direct.WithLatency(b, 20*time.Millisecond)
	catalogDSN, stateDSN := servers.Postgres(b), servers.Postgres(b)
	home := b.TempDir()
	// Tables are made directly, without the latency; the replicas see it.
	catalog := map[string]string{"type": "sql", "uri": catalogDSN, "warehouse": "s3://" + direct.Bucket + "/warehouse"}
	for k, v := range direct.Props() {
		catalog[k] = v
	}
	bk := catalogBucket(b, home, catalog)
	const tables = 24
	// Tables one after another (their namespace is made by the first);
	// their appends at once. A failure off this goroutine is b.Error.
	tbls := make([]*table.Table, tables)
	for i := range tables {
		tbls[i] = testkit.NewTable(b, bk, "demo", fmt.Sprintf("t%02d", i), demo.Schema())
	}
	var wg sync.WaitGroup
	for i, tbl := range tbls {
		wg.Go(func() {
			if _, err := testkit.AppendCommits(ctx, tbl, 40, 100, int64(i)*10000, rand.New(rand.NewPCG(uint64(i), 9))); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		return
	}
	for k, v := range slow.Props() {
		catalog[k] = v
	}
	store, err := state.Open(ctx, stateDSN)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()

	b.StartTimer()
	replicas, _ := startReplicas(b, bin, home, stateDSN, catalog, n, 1)
	defer stopReplicas(replicas)
	var first, last time.Time
	deadline := time.Now().Add(10 * time.Minute)
	for {
		done := 0
		first, last = time.Time{}, time.Time{}
		for i := range tables {
			runs, _ := store.Runs(ctx, state.TableKey{Bucket: configs.LocalBucketARN, Namespace: "demo", Name: fmt.Sprintf("t%02d", i)}, maintenance.Compaction, 1000)
			for _, r := range runs {
				if first.IsZero() || r.Started.Before(first) {
					first = r.Started
				}
			}
			// The oldest successful run is the one that compacted.
			for j := len(runs) - 1; j >= 0; j-- {
				if runs[j].Status == state.Successful {
					done++
					if runs[j].Finished.After(last) {
						last = runs[j].Finished
					}
					break
				}
			}
		}
		if done == tables {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d tables compacted in 10 minutes", done, tables)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(tables)/last.Sub(first).Seconds(), "tables/s")
	b.ReportMetric(last.Sub(first).Seconds(), "s")
}

// BenchmarkOneTable is the compaction of one table of 64 rewrite groups
// (newBigTable: a PostgreSQL catalog on S3 answering 20 ms late) against
// the replicas that rewrite its groups. The baseline is one replica that
// does not fan out and rewrites two groups at a time itself; with fan-out
// every replica rewrites two groups at a time (--group-parallelism 2).
// Reports the groups rewritten per second over the run; -benchtime 1x.
func BenchmarkOneTable(b *testing.B) {
	bin := buildBinary(b)
	cases := []struct {
		name     string
		replicas int
		fanOut   string
	}{{"no-fan-out", 1, "0"}, {"replicas=1", 1, "16"}, {"replicas=2", 2, "16"}, {"replicas=3", 3, "16"}}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				bt := newBigTable(b)
				store, err := state.Open(context.Background(), bt.stateDSN)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				replicas, _ := startReplicas(b, bin, bt.home, bt.stateDSN, bt.catalog, c.replicas, 1, "--fan-out-groups", c.fanOut, "--group-parallelism", "2")
				run := awaitCompaction(b, store, bigKey, 3*time.Minute)
				b.StopTimer()
				stopReplicas(replicas)
				store.Close()
				secs := run.Finished.Sub(run.Started).Seconds()
				b.ReportMetric(fanOutGroups/secs, "groups/s")
				b.ReportMetric(secs, "s")
			}
		})
	}
}

// awaitCompaction waits for the first successful compaction of k.
func awaitCompaction(tb testing.TB, store state.Store, k state.TableKey, within time.Duration) state.Run {
	tb.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		runs, _ := store.Runs(context.Background(), k, maintenance.Compaction, 1000)
		for j := len(runs) - 1; j >= 0; j-- {
			if runs[j].Status == state.Successful {
				return runs[j]
			}
		}
	}
	tb.Fatalf("%s not compacted in %v", k, within)
	return state.Run{}
}
