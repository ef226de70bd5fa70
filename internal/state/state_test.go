package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/maintenance"
)

// Every backend runs the same suite.
func TestSQLite(t *testing.T) {
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "nested", "state.db")
	suite(t, func(t *testing.T) Store { return open(t, dsn) })
	cached := "sqlite://" + filepath.Join(t.TempDir(), "cached.db")
	cacheSuite(t, func(t *testing.T) Store { return open(t, cached) })
}

func TestPostgres(t *testing.T) {
	dsn := servers.Postgres(t)
	suite(t, func(t *testing.T) Store { return open(t, dsn) })
	cached := servers.Postgres(t)
	cacheSuite(t, func(t *testing.T) Store { return open(t, cached) })
}

func open(t *testing.T, dsn string) Store {
	t.Helper()
	s, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func suite(t *testing.T, newStore func(t *testing.T) Store) {
	t.Run("Config", func(t *testing.T) { testConfig(t, newStore(t)) })
	t.Run("Runs", func(t *testing.T) { testRuns(t, newStore(t)) })
	t.Run("Evaluation", func(t *testing.T) { testEvaluation(t, newStore(t)) })
	t.Run("Marks", func(t *testing.T) { testMarks(t, newStore(t)) })
	t.Run("ErasureBlocks", func(t *testing.T) { testErasureBlocks(t, newStore(t)) })
	t.Run("RefIndex", func(t *testing.T) { testRefIndex(t, newStore(t)) })
	t.Run("KeyIndex", func(t *testing.T) { testKeyIndex(t, newStore(t)) })
	t.Run("Leases", func(t *testing.T) { testLeases(t, newStore(t)) })
	t.Run("LeaseRace", func(t *testing.T) { testLeaseRace(t, newStore(t), newStore(t)) })
	t.Run("Queue", func(t *testing.T) { testQueue(t, newStore(t)) })
	t.Run("Ledger", func(t *testing.T) { testLedger(t, newStore(t), newStore(t)) })
	t.Run("HealthHistory", func(t *testing.T) { testHealthHistory(t, newStore(t), newStore(t)) })
	t.Run("HealthHistoryCap", func(t *testing.T) { testHealthHistoryCap(t, newStore(t)) })
	t.Run("DailySums", func(t *testing.T) { testDailySums(t, newStore(t)) })
	t.Run("HealthUpgrade", func(t *testing.T) { testHealthUpgrade(t, newStore) })
	t.Run("Tables", func(t *testing.T) { testTables(t, newStore(t)) })
	t.Run("TablesUpgrade", func(t *testing.T) { testTablesUpgrade(t, newStore) })
	t.Run("Reopen", func(t *testing.T) {
		// Migrations are idempotent: a second Open of the same store
		// applies nothing and keeps the data.
		s := newStore(t)
		k := TableKey{"arn:b", "reopen", "t"}
		if err := s.PutTableConfig(context.Background(), k, maintenance.Compaction, maintenance.Config{Status: maintenance.Disabled}); err != nil {
			t.Fatal(err)
		}
		got, err := newStore(t).TableConfig(context.Background(), k)
		if err != nil || got[maintenance.Compaction].Status != maintenance.Disabled {
			t.Fatalf("after reopen: %v %v", got, err)
		}
	})
}

// cacheSuite runs on a store of its own: a cache over it answers as the
// store does, and takes in other processes' writes on refresh.
func cacheSuite(t *testing.T, newStore func(t *testing.T) Store) {
	cached := func(t *testing.T) Store {
		c, err := NewCache(context.Background(), newStore(t))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	t.Run("Cached/Config", func(t *testing.T) { testConfig(t, cached(t)) })
	t.Run("Cached/Runs", func(t *testing.T) { testRuns(t, cached(t)) })
	t.Run("Cached/Refresh", func(t *testing.T) { testCacheRefresh(t, newStore(t), newStore(t)) })
	t.Run("Cached/Tables", func(t *testing.T) { testCachedTables(t, cached(t), newStore) })
}

var tbl = TableKey{Bucket: "arn:aws:s3tables:local:000000000000:bucket/local", Namespace: "demo", Name: "events"}

func testConfig(t *testing.T, s Store) {
	ctx := context.Background()
	got, err := s.TableConfig(ctx, tbl)
	if err != nil || len(got) != 0 {
		t.Fatalf("empty store: %v %v", got, err)
	}
	c := maintenance.Config{Status: maintenance.Enabled, Settings: &maintenance.CompactionSettings{TargetFileSizeMB: maintenance.Int(256)}}
	if err := s.PutTableConfig(ctx, tbl, maintenance.Compaction, c); err != nil {
		t.Fatal(err)
	}
	c.Compaction().TargetFileSizeMB = maintenance.Int(128) // overwrite
	if err := s.PutTableConfig(ctx, tbl, maintenance.Compaction, c); err != nil {
		t.Fatal(err)
	}
	got, err = s.TableConfig(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if g := got[maintenance.Compaction]; g.Status != maintenance.Enabled || *g.Compaction().TargetFileSizeMB != 128 {
		t.Fatalf("table config = %+v", g)
	}
	other := TableKey{tbl.Bucket, "demo", "other"}
	if got, _ := s.TableConfig(ctx, other); len(got) != 0 {
		t.Fatalf("config leaked to another table: %v", got)
	}
	b := maintenance.Config{Status: maintenance.Disabled, Settings: &maintenance.RemovalSettings{UnreferencedDays: maintenance.Int(5)}}
	if err := s.PutBucketConfig(ctx, tbl.Bucket, maintenance.UnreferencedFileRemoval, b); err != nil {
		t.Fatal(err)
	}
	bc, err := s.BucketConfig(ctx, tbl.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if g := bc[maintenance.UnreferencedFileRemoval]; g.Status != maintenance.Disabled || *g.Removal().UnreferencedDays != 5 || g.Removal().NonCurrentDays != nil {
		t.Fatalf("bucket config = %+v", g)
	}
}

func testRuns(t *testing.T, s Store) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if last, err := s.LastRuns(ctx, tbl); err != nil || len(last) != 0 {
		t.Fatalf("no runs yet: %v %v", last, err)
	}
	var ids []int64
	for i, st := range []RunStatus{Successful, Failed, Successful} {
		r := Run{Table: tbl, Type: maintenance.Compaction, Trigger: "cli", Started: t0.Add(time.Duration(i) * time.Hour)}
		id, err := s.StartRun(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		r.ID, r.Status, r.Finished = id, st, r.Started.Add(time.Minute)
		if st == Failed {
			r.FailureMessage = "boom"
		}
		r.Metrics = json.RawMessage(`{"filesIn":` + string(rune('1'+i)) + `}`)
		if err := s.FinishRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// A run still in progress is not the "last run".
	if _, err := s.StartRun(ctx, Run{Table: tbl, Type: maintenance.Compaction, Trigger: "schedule", Started: t0.Add(10 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartRun(ctx, Run{Table: tbl, Type: maintenance.SnapshotManagement, Trigger: "schedule", Started: t0}); err != nil {
		t.Fatal(err)
	}
	last, err := s.LastRuns(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := last[maintenance.Compaction]
	if !ok || c.ID != ids[2] || c.Status != Successful || !c.Started.Equal(t0.Add(2*time.Hour)) || !c.Finished.Equal(t0.Add(2*time.Hour+time.Minute)) || string(c.Metrics) != `{"filesIn":3}` {
		t.Fatalf("last compaction = %+v", c)
	}
	if _, ok := last[maintenance.SnapshotManagement]; ok {
		t.Fatal("a running run was reported as last run")
	}
	runs, err := s.Runs(ctx, tbl, maintenance.Compaction, 3)
	if err != nil || len(runs) != 3 {
		t.Fatalf("runs = %v %v", runs, err)
	}
	if runs[0].Status != Running || runs[2].FailureMessage != "boom" || runs[1].ID != ids[2] {
		t.Fatalf("runs not newest first: %+v", runs)
	}
	if err := s.FinishRun(ctx, Run{ID: 1 << 40, Status: Failed}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("finishing an unknown run: %v", err)
	}
}

// testEvaluation: a run's evaluation is kept with it, read back exactly,
// and found for the latest successful run of the job type only.
func testEvaluation(t *testing.T, s Store) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, ok, err := s.LastEvaluation(ctx, tbl, maintenance.Compaction); ok || err != nil {
		t.Fatalf("no runs yet: %v %v", ok, err)
	}
	finish := func(st RunStatus, ev *Evaluation, typ maintenance.JobType) int64 {
		t.Helper()
		r := Run{Table: tbl, Type: typ, Trigger: "cli", Started: t0}
		id, err := s.StartRun(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		r.ID, r.Status, r.Finished, r.Evaluation = id, st, t0.Add(time.Minute), ev
		if err := s.FinishRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		return id
	}
	want := Evaluation{At: t0, SnapshotID: -1 << 62, MetadataLocation: "s3://b/t/metadata/00001-x.metadata.json",
		SettingsHash: "abc", ValidUntil: t0.Add(90 * time.Minute), RunID: 41}
	finish(Successful, &want, maintenance.Compaction)
	finish(Successful, nil, maintenance.Compaction)
	if _, ok, err := s.LastEvaluation(ctx, tbl, maintenance.Compaction); ok || err != nil {
		t.Fatalf("the latest success left no verdict, yet one was found: %v %v", ok, err)
	}
	finish(Successful, &want, maintenance.Compaction)
	finish(Failed, &Evaluation{SnapshotID: 7, SettingsHash: "failed"}, maintenance.Compaction)
	finish(Successful, &Evaluation{SnapshotID: 8, SettingsHash: "other type"}, maintenance.SnapshotManagement)
	got, ok, err := s.LastEvaluation(ctx, tbl, maintenance.Compaction)
	if err != nil || !ok || got != want {
		t.Fatalf("last evaluation = %+v %v %v, want %+v", got, ok, err, want)
	}
	runs, err := s.Runs(ctx, tbl, maintenance.Compaction, 4)
	if err != nil || len(runs) != 4 || runs[0].Evaluation == nil || runs[2].Evaluation != nil || *runs[3].Evaluation != want {
		t.Fatalf("runs carry their evaluations: %+v %v", runs, err)
	}
}

// A block is kept per table and path: putting it again updates its
// holder and deadline but keeps when it was first seen; another table's
// blocks are its own; deleting removes only the paths named.
func testErasureBlocks(t *testing.T, s Store) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	other := TableKey{tbl.Bucket, "demo", "other"}
	holder := TableKey{tbl.Bucket, "snap", "copy"}
	if got, err := s.ErasureBlocks(ctx, tbl); err != nil || len(got) != 0 {
		t.Fatalf("empty store: %v %v", got, err)
	}
	blocks := []ErasureBlock{
		{Table: tbl, Path: "s3://b/t/data/b.parquet", Holder: holder, Removed: now.Add(-24 * time.Hour), Due: now.Add(24 * time.Hour), FirstSeen: now},
		{Table: tbl, Path: "s3://b/t/data/a.parquet", Holder: holder, Due: now, FirstSeen: now},
		{Table: other, Path: "s3://b/o/data/a.parquet", Holder: holder, Due: now, FirstSeen: now},
	}
	if err := s.PutErasureBlocks(ctx, blocks); err != nil {
		t.Fatal(err)
	}
	if err := s.PutErasureBlocks(ctx, nil); err != nil {
		t.Fatalf("no blocks: %v", err)
	}
	// A later run finds b held by another table: the holder and due time
	// follow, the first sighting stays.
	again := blocks[0]
	again.Holder, again.Due, again.FirstSeen = TableKey{tbl.Bucket, "snap", "copy2"}, now.Add(48*time.Hour), now.Add(24*time.Hour)
	if err := s.PutErasureBlocks(ctx, []ErasureBlock{again}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ErasureBlocks(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Path != "s3://b/t/data/a.parquet" || got[0].Holder != holder || !got[0].Due.Equal(now) || got[0].Table != tbl ||
		got[1].Holder.Name != "copy2" || !got[1].Due.Equal(now.Add(48*time.Hour)) || !got[1].FirstSeen.Equal(now) || !got[1].Removed.Equal(now.Add(-24*time.Hour)) ||
		!got[0].Removed.IsZero() {
		t.Fatalf("blocks = %+v", got)
	}
	n, err := s.DeleteErasureBlocks(ctx, tbl, []string{"s3://b/t/data/a.parquet", "s3://b/t/data/missing"})
	if err != nil || n != 1 {
		t.Fatalf("delete one = %d %v", n, err)
	}
	if n, err := s.DeleteErasureBlocks(ctx, tbl, nil); err != nil || n != 0 {
		t.Fatalf("deleting no paths deleted %d: %v", n, err)
	}
	if got, err := s.ErasureBlocks(ctx, tbl); err != nil || len(got) != 1 || got[0].Path != "s3://b/t/data/b.parquet" {
		t.Fatalf("after delete: %+v %v", got, err)
	}
	if got, err := s.ErasureBlocks(ctx, other); err != nil || len(got) != 1 || got[0].Path != "s3://b/o/data/a.parquet" {
		t.Fatalf("the other table's blocks: %+v %v", got, err)
	}
}

func testMarks(t *testing.T, s Store) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	marks := []Mark{
		{Table: tbl, Path: "s3://b/t/data/b.parquet", Size: 10, LastModified: now.Add(-96 * time.Hour), MarkedAt: now, RunID: 7},
		{Table: tbl, Path: "s3://b/t/data/a.parquet", Size: 20, LastModified: now.Add(-80 * time.Hour), MarkedAt: now, RunID: 7},
		{Table: TableKey{tbl.Bucket, "demo", "other"}, Path: "s3://b/o/x", Size: 1, MarkedAt: now, RunID: 7},
	}
	if err := s.PutMarks(ctx, marks); err != nil {
		t.Fatal(err)
	}
	// Re-marking the same path replaces, not duplicates.
	marks[0].RunID = 8
	if err := s.PutMarks(ctx, marks[:1]); err != nil {
		t.Fatal(err)
	}
	got, err := s.Marks(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Path != "s3://b/t/data/a.parquet" || got[1].RunID != 8 || got[0].Size != 20 || !got[0].LastModified.Equal(now.Add(-80*time.Hour)) {
		t.Fatalf("marks = %+v", got)
	}
	n, err := s.DeleteMarks(ctx, tbl, []string{"s3://b/t/data/a.parquet", "s3://b/t/data/missing"})
	if err != nil || n != 1 {
		t.Fatalf("delete one = %d %v", n, err)
	}
	if n, err := s.DeleteMarks(ctx, tbl, nil); err != nil || n != 0 {
		t.Fatalf("deleting no paths deleted %d: %v", n, err)
	}
	if err := s.PutMarks(ctx, []Mark{{Table: tbl, Path: "s3://b/t/data/c.parquet", MarkedAt: now}}); err != nil {
		t.Fatal(err)
	}
	at := now.Add(time.Hour)
	if n, err := s.ProtectMarks(ctx, tbl, []string{"s3://b/t/data/c.parquet", "s3://b/t/data/missing"}, at); err != nil || n != 1 {
		t.Fatalf("protect one = %d %v", n, err)
	}
	// Protecting all takes the rest, and leaves a protection's time alone.
	if n, err := s.ProtectMarks(ctx, tbl, nil, at.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("protect all = %d %v", n, err)
	}
	got, err = s.Marks(ctx, tbl)
	if err != nil || len(got) != 2 || !got[0].ProtectedAt.Equal(at.Add(time.Hour)) || !got[1].ProtectedAt.Equal(at) || !got[1].Protected() {
		t.Fatalf("protected marks = %+v %v", got, err)
	}
	// Re-marking keeps a protection.
	if err := s.PutMarks(ctx, got[1:]); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Marks(ctx, tbl); !got[1].Protected() {
		t.Fatalf("PutMarks dropped a protection: %+v", got)
	}
	// Protected marks are not a backlog; the other table's one mark is.
	if st, err := s.MarkStats(ctx); err != nil || len(st) != 1 || st[TableKey{tbl.Bucket, "demo", "other"}].Count != 1 || !st[TableKey{tbl.Bucket, "demo", "other"}].Oldest.Equal(now) {
		t.Fatalf("mark stats = %+v %v", st, err)
	}
	if other, _ := s.Marks(ctx, TableKey{tbl.Bucket, "demo", "other"}); len(other) != 1 {
		t.Fatalf("other table's marks were touched: %v", other)
	}
}

func testLeases(t *testing.T, s Store) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	ok, err := s.AcquireLease(ctx, "t1", "a", now, time.Minute)
	if err != nil || !ok {
		t.Fatalf("first acquire: %v %v", ok, err)
	}
	if ok, _ := s.AcquireLease(ctx, "t1", "b", now.Add(30*time.Second), time.Minute); ok {
		t.Fatal("b took a live lease")
	}
	if ok, _ := s.AcquireLease(ctx, "t1", "a", now.Add(30*time.Second), time.Minute); !ok {
		t.Fatal("a could not renew its lease")
	}
	if ok, _ := s.AcquireLease(ctx, "t1", "b", now.Add(80*time.Second), time.Minute); ok {
		t.Fatal("b took a renewed lease")
	}
	if h, err := s.LeaseHolder(ctx, "t1", now.Add(89*time.Second)); err != nil || h != "a" {
		t.Fatalf("holder of a live lease: %q %v", h, err)
	}
	if h, err := s.LeaseHolder(ctx, "t1", now.Add(91*time.Second)); err != nil || h != "" {
		t.Fatalf("holder of an expired lease: %q %v", h, err)
	}
	if ok, _ := s.AcquireLease(ctx, "t1", "b", now.Add(91*time.Second), time.Minute); !ok {
		t.Fatal("b could not take over an expired lease")
	}
	if err := s.ReleaseLease(ctx, "t1", "a"); err != nil { // not a's any more
		t.Fatal(err)
	}
	if ok, _ := s.AcquireLease(ctx, "t1", "a", now.Add(92*time.Second), time.Minute); ok {
		t.Fatal("a's stale release freed b's lease")
	}
	if err := s.ReleaseLease(ctx, "t1", "b"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.AcquireLease(ctx, "t1", "a", now.Add(93*time.Second), time.Minute); !ok {
		t.Fatal("a could not take a released lease")
	}
	if _, err := s.AcquireLease(ctx, "t1", "a", now, 0); err == nil {
		t.Fatal("zero ttl accepted")
	}
}

// Two store handles (as two replicas would have) race for one expired lease
// many times; exactly one must win each round.
func testLeaseRace(t *testing.T, a, b Store) {
	ctx := context.Background()
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for round := 0; round < 30; round++ {
		now := base.Add(time.Duration(round) * time.Hour) // every earlier lease has expired
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i, s := range []Store{a, b, a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := s.AcquireLease(ctx, "race", string(rune('a'+i)), now, time.Minute)
				if err != nil {
					t.Error(err)
				}
				if ok {
					wins.Add(1)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d holders won the lease", round, wins.Load())
		}
	}
}

func testQueue(t *testing.T, s Store) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	a := TableKey{"arn:b", "ns", "a"}
	// River's tables are there (its migrations ran with the store's), and
	// empty.
	if n, err := s.QueueDepth(ctx); err != nil || n != 0 {
		t.Fatalf("depth of a new queue: %d %v", n, err)
	}
	if lf, err := s.LastFire(ctx, maintenance.Compaction); err != nil || !lf.IsZero() {
		t.Fatalf("last fire before any: %v %v", lf, err)
	}
	if err := s.SetLastFire(ctx, maintenance.Compaction, now); err != nil {
		t.Fatal(err)
	}
	if lf, _ := s.LastFire(ctx, maintenance.Compaction); !lf.Equal(now) {
		t.Fatalf("last fire %v", lf)
	}
	// Abandoned runs.
	id, _ := s.StartRun(ctx, Run{Table: a, Type: maintenance.Compaction, Trigger: "schedule", Started: now})
	if n, err := s.FailRunning(ctx, a, maintenance.Compaction, "worker died", now.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("fail running: %d %v", n, err)
	}
	runs, _ := s.Runs(ctx, a, maintenance.Compaction, 1)
	if runs[0].ID != id || runs[0].Status != Failed || runs[0].FailureMessage != "worker died" {
		t.Fatalf("abandoned run %+v", runs[0])
	}
	// Runs whose outcome was never recorded: listed by age, failed one
	// by one, their figures kept; a finished run is left as it is.
	old, _ := s.StartRun(ctx, Run{Table: a, Type: maintenance.SnapshotManagement, Trigger: "schedule", Started: now})
	young, _ := s.StartRun(ctx, Run{Table: a, Type: maintenance.Compaction, Trigger: "schedule", Started: now.Add(time.Hour)})
	of := func(runs []Run) []Run { // the store is shared with other parts of the suite
		var out []Run
		for _, r := range runs {
			if r.Table == a {
				out = append(out, r)
			}
		}
		return out
	}
	stale, err := s.RunningRuns(ctx, now.Add(time.Minute))
	stale = of(stale)
	if err != nil || len(stale) != 1 || stale[0].ID != old || stale[0].Trigger != "schedule" || stale[0].Table != a {
		t.Fatalf("running runs: %+v %v", stale, err)
	}
	if _, err := s.(*sqlStore).exec(ctx, `UPDATE runs SET metrics = ? WHERE id = ?`, `{"n":1}`, old); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.FailRun(ctx, stale[0], "outcome not recorded", now.Add(2*time.Hour)); err != nil || !ok {
		t.Fatalf("fail run: %v %v", ok, err)
	}
	if ok, err := s.FailRun(ctx, stale[0], "again", now.Add(3*time.Hour)); err != nil || ok {
		t.Fatalf("fail run twice: %v %v", ok, err)
	}
	runs, _ = s.Runs(ctx, a, maintenance.SnapshotManagement, 1)
	if r := runs[0]; r.Status != Failed || r.FailureMessage != "outcome not recorded" || string(r.Metrics) != `{"n":1}` || !r.Finished.Equal(now.Add(2*time.Hour)) {
		t.Fatalf("swept run %+v", r)
	}
	if stale, _ := s.RunningRuns(ctx, now.Add(2*time.Hour)); len(of(stale)) != 1 || of(stale)[0].ID != young {
		t.Fatalf("running runs after the sweep: %+v", stale)
	}
}

// other's cache shows after its next refresh, and not before.
func testCacheRefresh(t *testing.T, mine, other Store) {
	ctx := context.Background()
	c, err := NewCache(ctx, mine)
	if err != nil {
		t.Fatal(err)
	}
	k := TableKey{"arn:b", "cache", "t"}
	off := maintenance.Config{Status: maintenance.Disabled}
	if err := other.PutTableConfig(ctx, k, maintenance.Compaction, off); err != nil {
		t.Fatal(err)
	}
	if err := other.PutBucketConfig(ctx, "arn:b", maintenance.UnreferencedFileRemoval, off); err != nil {
		t.Fatal(err)
	}
	id, err := other.StartRun(ctx, Run{Table: k, Type: maintenance.SnapshotManagement, Trigger: "cli", Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.FinishRun(ctx, Run{ID: id, Table: k, Type: maintenance.SnapshotManagement, Status: Successful, Finished: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.TableConfig(ctx, k); len(got) != 0 {
		t.Fatalf("another process's write was seen before a refresh: %v", got)
	}
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	tc, _ := c.TableConfig(ctx, k)
	bc, _ := c.BucketConfig(ctx, "arn:b")
	last, _ := c.LastRuns(ctx, k)
	if tc[maintenance.Compaction].Status != maintenance.Disabled || bc[maintenance.UnreferencedFileRemoval].Status != maintenance.Disabled || last[maintenance.SnapshotManagement].ID != id {
		t.Fatalf("after refresh: table %v, bucket %v, last runs %v", tc, bc, last)
	}
	succ := successesOf(t, c, k)
	if len(succ) != 1 || succ[0].ID != id {
		t.Fatalf("last successes = %+v", succ)
	}

	// A failed run after a success: the latest run changes, the latest
	// success stays; a worker's abandoned run, failed by takeover, shows.
	id2, _ := c.StartRun(ctx, Run{Table: k, Type: maintenance.SnapshotManagement, Trigger: "schedule", Started: time.Now()})
	if n, err := c.FailRunning(ctx, k, maintenance.SnapshotManagement, "worker died", time.Now()); err != nil || n != 1 {
		t.Fatalf("fail running = %d %v", n, err)
	}
	last, _ = c.LastRuns(ctx, k)
	succ = successesOf(t, c, k)
	if last[maintenance.SnapshotManagement].ID != id2 || last[maintenance.SnapshotManagement].FailureMessage != "worker died" || len(succ) != 1 || succ[0].ID != id {
		t.Fatalf("after takeover: last %+v, successes %+v", last, succ)
	}

	// A run swept as abandoned shows at once.
	id3, _ := c.StartRun(ctx, Run{Table: k, Type: maintenance.SnapshotManagement, Trigger: "schedule", Started: time.Now()})
	if ok, err := c.FailRun(ctx, Run{ID: id3, Table: k, Type: maintenance.SnapshotManagement}, "outcome not recorded", time.Now()); err != nil || !ok {
		t.Fatalf("fail run = %v %v", ok, err)
	}
	if last, _ = c.LastRuns(ctx, k); last[maintenance.SnapshotManagement].ID != id3 || last[maintenance.SnapshotManagement].FailureMessage != "outcome not recorded" {
		t.Fatalf("after the sweep: last %+v", last)
	}

	// A reader may change what it was given without changing the cache.
	tc[maintenance.Compaction] = maintenance.Config{Status: maintenance.Enabled}
	if again, _ := c.TableConfig(ctx, k); again[maintenance.Compaction].Status != maintenance.Disabled {
		t.Fatal("a caller's map aliases the cache")
	}
	// Its own writes are seen at once, and survive a refresh.
	on := maintenance.Config{Status: maintenance.Enabled}
	if err := c.PutTableConfig(ctx, k, maintenance.Compaction, on); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.TableConfig(ctx, k); got[maintenance.Compaction].Status != maintenance.Enabled {
		t.Fatalf("own write not seen: %v", got)
	}
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.TableConfig(ctx, k); got[maintenance.Compaction].Status != maintenance.Enabled {
		t.Fatalf("own write lost on refresh: %v", got)
	}
}

func successesOf(t *testing.T, s Store, k TableKey) []Run {
	t.Helper()
	all, err := s.LastSuccesses(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []Run
	for _, r := range all {
		if r.Table == k {
			out = append(out, r)
		}
	}
	return out
}

func testRefIndex(t *testing.T, s Store) {
	ctx := context.Background()
	other := TableKey{tbl.Bucket, tbl.Namespace, "other"}
	// Bytes of every value survive, NUL and invalid UTF-8 included.
	raw := []byte{0, 1, 0xff, '\n', 0xc3}
	rows := []IndexRow{
		{Path: "s3://b/t/metadata/snap-1.avro", TableUUID: "u1", Refs: raw},
		{Path: "s3://b/t/metadata/m1.avro", TableUUID: "u1", Refs: []byte("a")},
		{Path: "s3://b/t/metadata/m2.avro", TableUUID: "u0", Refs: []byte("b")},
	}
	if err := s.PutIndexedRefs(ctx, tbl, rows); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIndexedRefs(ctx, other, rows[:1]); err != nil {
		t.Fatal(err)
	}
	// Rewriting a row replaces it.
	rows[1].Refs = []byte("a2")
	if err := s.PutIndexedRefs(ctx, tbl, rows[1:2]); err != nil {
		t.Fatal(err)
	}
	// More paths than one query takes.
	paths := []string{"s3://b/t/metadata/none.avro"}
	for i := range 2 * indexBatch {
		paths = append(paths, fmt.Sprintf("s3://b/t/metadata/x-%d.avro", i))
	}
	paths = append(paths, rows[0].Path, rows[1].Path, rows[2].Path)
	got, err := s.IndexedRefs(ctx, tbl, paths)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !bytes.Equal(got[rows[0].Path].Refs, raw) || string(got[rows[1].Path].Refs) != "a2" ||
		got[rows[2].Path].TableUUID != "u0" || got[rows[0].Path].TableUUID != "u1" {
		t.Fatalf("indexed refs: %+v", got)
	}
	if got, err := s.IndexedRefs(ctx, tbl, nil); err != nil || len(got) != 0 {
		t.Fatalf("no paths: %v %v", got, err)
	}
	// Forgetting keeps only the kept paths of the given UUID, and only
	// this table's.
	n, err := s.ForgetIndexedRefs(ctx, tbl, "u1", []string{rows[0].Path, rows[2].Path})
	if err != nil || n != 2 {
		t.Fatalf("forgot %d, %v; want 2 (m1 unreached, m2 of another UUID)", n, err)
	}
	got, err = s.IndexedRefs(ctx, tbl, paths)
	if err != nil || len(got) != 1 || got[rows[0].Path].TableUUID != "u1" {
		t.Fatalf("after forgetting: %+v %v", got, err)
	}
	if got, err := s.IndexedRefs(ctx, other, paths); err != nil || len(got) != 1 {
		t.Fatalf("another table's rows: %+v %v", got, err)
	}
}

// testLedger appends from two handles, as two replicas do, and sums over
// a window.
func testLedger(t *testing.T, a, b Store) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if got, err := a.RewrittenSince(ctx, now.Add(-time.Hour)); err != nil || len(got) != 0 {
		t.Fatalf("empty ledger: %v %v", got, err)
	}
	for _, r := range []struct {
		s      Store
		bucket string
		ago    time.Duration
		bytes  int64
	}{
		{a, "arn:x", 2 * time.Hour, 1000},  // outside the hour
		{a, "arn:x", 59 * time.Minute, 10}, // inside
		{b, "arn:x", time.Minute, 5},
		{b, "arn:y", 30 * time.Minute, 7},
		{a, "arn:y", time.Minute, 0},  // nothing rewritten: no row
		{b, "arn:z", time.Minute, -3}, // never a negative row
		{a, "arn:x", 0, 1 << 40},      // large values keep 64 bits
	} {
		if err := r.s.RecordRewrite(ctx, r.bucket, now.Add(-r.ago), r.bytes); err != nil {
			t.Fatal(err)
		}
	}
	got, err := b.RewrittenSince(ctx, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"arn:x": 15 + 1<<40, "arn:y": 7}
	if len(got) != len(want) || got["arn:x"] != want["arn:x"] || got["arn:y"] != want["arn:y"] {
		t.Fatalf("last hour: %v, want %v", got, want)
	}
	if got, _ := a.RewrittenSince(ctx, now.Add(-3*time.Hour)); got["arn:x"] != 1015+1<<40 {
		t.Fatalf("last three hours of arn:x: %d", got["arn:x"])
	}
	// A row past LedgerKeep is forgotten by the next append.
	if err := a.RecordRewrite(ctx, "arn:y", now.Add(LedgerKeep-30*time.Second), 1); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.RewrittenSince(ctx, time.Time{}); got["arn:x"] != 1<<40 || got["arn:y"] != 1 {
		t.Fatalf("after forgetting rows older than %v: %v", LedgerKeep, got)
	}
}
