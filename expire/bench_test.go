package expire

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit"
	"github.com/icekeeper/icekeeper/internal/testkit/child"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// BenchmarkExpireSnapshots10k measures a whole snapshot-management run on a
// table with 10,000 snapshots, 3 branches and 3 tags: icekeeper (load,
// decide, commit, record in the state store) against iceberg-go v0.7.0's
// own ExpireSnapshots + Commit on an identical copy, same settings (keep 1,
// 120 h), side by side in each iteration. Each side runs in a child process
// so that its peak RSS is its own.
//
//	scripts/bench.sh -bench ExpireSnapshots10k ./expire
func BenchmarkExpireSnapshots10k(b *testing.B) {
	const n = 10000
	var ikMs, goMs, ikRSS, goRSS float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		home := b.TempDir()
		if err := buildLongHistory(context.Background(), home, n); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		ik, ig, err := child.Pair(i, "TestBenchChild", home)
		if err != nil {
			b.Fatal(err)
		}
		if ik.Count < n-200 || ig.Count < n-200 {
			b.Fatalf("expired only %d (icekeeper) and %d (iceberg-go) snapshots", ik.Count, ig.Count)
		}
		ikMs, ikRSS = ikMs+ik.Ms, ikRSS+ik.PeakRSSMiB
		goMs, goRSS = goMs+ig.Ms, goRSS+ig.PeakRSSMiB
	}
	N := float64(b.N)
	b.ReportMetric(ikMs/N, "icekeeper-ms")
	b.ReportMetric(goMs/N, "iceberg-go-ms")
	b.ReportMetric(ikRSS/N, "icekeeper-peak-RSS-MiB")
	b.ReportMetric(goRSS/N, "iceberg-go-peak-RSS-MiB")
	b.ReportMetric(ikMs/goMs, "time-ratio")
	b.ReportMetric(ikRSS/goRSS, "RSS-ratio")
}

// TestBenchChild is the child side of the benchmark; it does nothing
// unless started by runChild.
func TestBenchChild(t *testing.T) {
	args := child.Args()
	if args == nil {
		t.Skip("benchmark child only")
	}
	variant, home := args[0], args[1]
	ctx := context.Background()
	reg := configs.Embedded(home).Registry()
	defer reg.Close()
	b, _ := reg.Bucket("local")
	id := bucket.TableID{Namespace: []string{"bench"}, Name: strings.ReplaceAll(variant, "-", "_")}
	start := time.Now()
	var expired int
	switch variant {
	case child.Icekeeper:
		store, err := state.Open(ctx, "sqlite://"+filepath.Join(home, "state.db"))
		if err != nil {
			t.Fatal(err)
		}
		r := &jobs.Runner{Store: store, Jobs: jobs.Map((&Job{}).Definition())}
		out, err := r.Run(ctx, jobs.Target{Bucket: b, Table: id}, maintenance.SnapshotManagement, "bench", jobs.Options{})
		if err != nil || out.Status != state.Successful {
			t.Fatalf("%+v %v", out, err)
		}
		expired = out.Figures.(*Figures).SnapshotsExpired
		store.Close()
	case child.IcebergGo:
		tbl, err := b.LoadTable(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		before := len(tbl.Metadata().Snapshots())
		tx := tbl.NewTransaction()
		if err := tx.ExpireSnapshots(table.WithOlderThan(120*time.Hour), table.WithRetainLast(1), table.WithPostCommit(false)); err != nil {
			t.Fatal(err)
		}
		after, err := tx.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		expired = before - len(after.Metadata().Snapshots())
	}
	child.Report(float64(time.Since(start).Microseconds())/1000, expired)
}

// buildLongHistory creates bench.icekeeper and bench.iceberg_go in the
// embedded catalog under home, each with the same n-snapshot history (one
// per hour going back, on main, plus 3 branches and 3 tags on old
// snapshots). Appending n times would take hours (every commit rewrites the
// growing metadata), so the history is synthesised around one real append:
// every snapshot shares its manifest list, which expiration never reads.
func buildLongHistory(ctx context.Context, home string, n int) error {
	reg := configs.Embedded(home).Registry()
	defer reg.Close()
	b, _ := reg.Bucket("local")
	cat, err := b.Catalog(ctx)
	if err != nil {
		return err
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"bench"}, nil); err != nil {
		return err
	}
	for _, name := range []string{"icekeeper", "iceberg_go"} {
		ident := table.Identifier{"bench", name}
		tbl, err := cat.CreateTable(ctx, ident, demo.Schema())
		if err != nil {
			return err
		}
		if tbl, err = testkit.AppendRandom(ctx, tbl, 10, 1_000_000, rand.New(rand.NewPCG(7, 7))); err != nil {
			return err
		}
		loc, err := synthesise(tbl, n)
		if err != nil {
			return err
		}
		if err := demo.Repoint(ctx, b, ident, tbl.MetadataLocation(), loc); err != nil {
			return err
		}
	}
	return nil
}

func synthesise(tbl *table.Table, n int) (string, error) {
	raw, err := json.Marshal(tbl.Metadata())
	if err != nil {
		return "", err
	}
	var meta map[string]any
	if err := json.Unmarshal(raw, &meta); err != nil {
		return "", err
	}
	real := meta["snapshots"].([]any)[0].(map[string]any)
	now := time.Now()
	snaps := make([]any, n)
	var log []any
	for i := 0; i < n; i++ {
		s := map[string]any{}
		for k, v := range real {
			s[k] = v
		}
		s["snapshot-id"] = int64(i + 1)
		s["sequence-number"] = int64(i + 1)
		s["timestamp-ms"] = now.Add(-time.Duration(n-i) * time.Hour).UnixMilli()
		delete(s, "parent-snapshot-id")
		if i > 0 {
			s["parent-snapshot-id"] = int64(i)
		}
		snaps[i] = s
		log = append(log, map[string]any{"snapshot-id": int64(i + 1), "timestamp-ms": s["timestamp-ms"]})
	}
	meta["snapshots"] = snaps
	meta["snapshot-log"] = log
	meta["last-sequence-number"] = int64(n)
	meta["current-snapshot-id"] = int64(n)
	refs := map[string]any{"main": map[string]any{"snapshot-id": int64(n), "type": "branch"}}
	for k := 1; k <= 3; k++ {
		refs[fmt.Sprintf("branch-%d", k)] = map[string]any{"snapshot-id": int64(k * 1000), "type": "branch", "min-snapshots-to-keep": 5}
		refs[fmt.Sprintf("tag-%d", k)] = map[string]any{"snapshot-id": int64(k*1000 + 500), "type": "tag"}
	}
	meta["refs"] = refs
	meta["last-updated-ms"] = now.UnixMilli()
	out, err := json.Marshal(meta)
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(strings.TrimPrefix(tbl.MetadataLocation(), "file://"))
	path := filepath.Join(dir, fmt.Sprintf("00099-%s.metadata.json", uuid.NewString()))
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return "", err
	}
	return "file://" + path, nil
}
