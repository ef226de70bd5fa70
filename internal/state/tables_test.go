package state

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/maintenance"
)

// fill writes one row of every kind of state kept by name under k, and
// returns a count of them that has reads every kind.
func fillState(t *testing.T, s Store, k TableKey, at time.Time) {
	t.Helper()
	ctx := context.Background()
	id, err := s.StartRun(ctx, Run{Table: k, Type: maintenance.Compaction, Trigger: "test", Started: at})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(ctx, Run{ID: id, Table: k, Type: maintenance.Compaction, Finished: at, Status: Successful}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTableConfig(ctx, k, maintenance.Compaction, maintenance.Config{Status: maintenance.Disabled}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutMarks(ctx, []Mark{{Table: k, Path: "s3://b/t/data/x.parquet", Size: 1, MarkedAt: at, RunID: id}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordHealth(ctx, HealthSample{Table: k, At: at, MetadataLocation: "m-" + k.Name, Health: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutErasureBlocks(ctx, []ErasureBlock{{Table: k, Path: "s3://b/t/data/y.parquet", Holder: k, Due: at, FirstSeen: at}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIndexedRefs(ctx, k, []IndexRow{{Path: "s3://b/t/metadata/snap.avro", TableUUID: "u", Refs: []byte{1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddKeyFile(ctx, k, KeyIndexName{TableUUID: "u", Fields: "1"}, KeyFile{Path: "s3://b/t/data/x.parquet", Size: 1, Records: 1}); err != nil {
		t.Fatal(err)
	}
}

// stateOf counts what the store holds under k, kind by kind.
func stateOf(t *testing.T, s Store, k TableKey) string {
	t.Helper()
	ctx := context.Background()
	runs, err1 := s.Runs(ctx, k, maintenance.Compaction, 10)
	cfg, err2 := s.TableConfig(ctx, k)
	marks, err3 := s.Marks(ctx, k)
	health, err4 := s.HealthSamples(ctx, k, time.Time{})
	blocks, err5 := s.ErasureBlocks(ctx, k)
	refs, err6 := s.IndexedRefs(ctx, k, []string{"s3://b/t/metadata/snap.avro"})
	keys, err7 := s.KeyFiles(ctx, k, KeyIndexName{TableUUID: "u", Fields: "1"})
	for _, err := range []error{err1, err2, err3, err4, err5, err6, err7} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return fmt.Sprintf("runs %d config %d marks %d health %d blocks %d refs %d keys %d",
		len(runs), len(cfg), len(marks), len(health), len(blocks), len(refs), len(keys))
}

const (
	allState = "runs 1 config 1 marks 1 health 1 blocks 1 refs 1 keys 1"
	noState  = "runs 0 config 0 marks 0 health 0 blocks 0 refs 0 keys 0"
)

// testTables: a drop moves every kind of state out of the name, and
// leaves it out of the reads over every table; a move brings it to the
// new name; state no registered table owns is set aside, not mixed in.
func testTables(t *testing.T, s Store) {
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	a := TableKey{tbl.Bucket, "registry", "a"}
	b := TableKey{tbl.Bucket, "registry", "b"}
	fillState(t, s, a, at)
	rec := TableRecord{Key: a, UUID: "uuid-1", Locations: []string{"s3://b/t"}, MetadataLocation: "s3://b/t/metadata/1.json", FirstSeen: at, LastSeen: at}
	if err := s.PutTable(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.LiveTable(ctx, a); err != nil || !ok || got.UUID != "uuid-1" || !got.Live() {
		t.Fatalf("live table: %+v %v %v", got, ok, err)
	}

	if err := s.DropTable(ctx, rec, at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.DropTable(ctx, rec, at.Add(time.Hour)); err == nil {
		t.Error("a table dropped twice")
	}
	if got := stateOf(t, s, a); got != noState {
		t.Errorf("the name after the drop: %s", got)
	}
	gone := a.Dropped("uuid-1")
	if got := stateOf(t, s, gone); got != allState {
		t.Errorf("the dropped table: %s", got)
	}
	if _, ok, _ := s.LiveTable(ctx, a); ok {
		t.Error("a dropped table is live")
	}
	dropped, err := s.DroppedTables(ctx, tbl.Bucket, at)
	if err != nil || len(dropped) != 1 || dropped[0].StateKey() != gone {
		t.Fatalf("dropped tables: %+v %v", dropped, err)
	}
	// The reads over every table leave dropped tables out.
	succ, err := s.LastSuccesses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range succ {
		if r.Table.IsDropped() {
			t.Errorf("last successes hold the dropped %s", r.Table)
		}
	}
	stats, err := s.MarkStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	overrides, _, err := s.AllOverrides(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := stats[gone]; ok {
		t.Error("mark stats count a dropped table")
	}
	if _, ok := overrides[gone]; ok {
		t.Error("overrides hold a dropped table's")
	}

	// Back under another name, where rows of no registered table wait.
	fillState(t, s, b, at)
	if err := s.MoveTable(ctx, dropped[0], b, at.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, s, b); got != allState {
		t.Errorf("the table under its new name: %s", got)
	}
	if got := stateOf(t, s, gone); got != noState {
		t.Errorf("its dropped key after the move: %s", got)
	}
	if got, ok, err := s.LiveTable(ctx, b); err != nil || !ok || got.UUID != "uuid-1" {
		t.Fatalf("live under the new name: %+v %v %v", got, ok, err)
	}
	aside := b.Dropped("unregistered-" + fmt.Sprint(at.Add(2*time.Hour).UnixMilli()))
	if got := stateOf(t, s, aside); got != allState {
		t.Errorf("the rows the new name held before: %s", got)
	}
	moves, err := s.TableMoves(ctx, at)
	if err != nil || len(moves) != 1 || moves[0].From != gone || moves[0].To != b {
		t.Errorf("moves: %+v %v", moves, err)
	}
	if same, err := s.TablesWithUUID(ctx, tbl.Bucket, "uuid-1"); err != nil || len(same) != 1 || same[0].Key != b {
		t.Errorf("records of the UUID: %+v %v", same, err)
	}

	// What removal read of it, an object name with a newline among it.
	refs := TableRefs{Metadata: "s3://b/t/metadata/2.json", Foreign: []string{"s3://other/x\n.parquet", "s3://other/y.parquet"}, Complete: true,
		Checked: at.Add(3 * time.Hour)}
	if err := s.PutTableRefs(ctx, b, "uuid-1", []string{"s3://b/t", "s3://b/data"}, refs); err != nil {
		t.Fatal(err)
	}
	got, _, err := s.LiveTable(ctx, b)
	if err != nil || got.Refs.Metadata != refs.Metadata || !got.Refs.Complete || !got.Refs.Checked.Equal(refs.Checked) ||
		len(got.Refs.Foreign) != 2 || got.Refs.Foreign[0] != refs.Foreign[0] || len(got.Locations) != 2 {
		t.Errorf("references read back: %+v %v", got, err)
	}
}

// testCachedTables: a cache forgets what a drop moved away, in its own
// process at once and in another's at the next refresh.
func testCachedTables(t *testing.T, s Store, newStore func(t *testing.T) Store) {
	ctx := context.Background()
	at := time.Now().Add(-time.Minute)
	k := TableKey{tbl.Bucket, "cachedregistry", "a"}
	fillState(t, s, k, at)
	rec := TableRecord{Key: k, UUID: "uuid-c", FirstSeen: at, LastSeen: at}
	if err := s.PutTable(ctx, rec); err != nil {
		t.Fatal(err)
	}
	other, err := NewCache(ctx, newStore(t))
	if err != nil {
		t.Fatal(err)
	}
	if last, _ := other.LastRuns(ctx, k); len(last) != 1 {
		t.Fatalf("the other cache knows %d runs", len(last))
	}
	if err := s.DropTable(ctx, rec, time.Now()); err != nil {
		t.Fatal(err)
	}
	if last, _ := s.LastRuns(ctx, k); len(last) != 0 {
		t.Errorf("this cache still knows %d runs of the dropped table", len(last))
	}
	if cfg, _ := s.TableConfig(ctx, k); len(cfg) != 0 {
		t.Errorf("this cache still holds the dropped table's settings")
	}
	if err := other.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if last, _ := other.LastRuns(ctx, k); len(last) != 0 {
		t.Errorf("the other cache still knows %d runs of the dropped table after a refresh", len(last))
	}
	if cfg, _ := other.TableConfig(ctx, k); len(cfg) != 0 {
		t.Errorf("the other cache still holds the dropped table's settings after a refresh")
	}
}

// testTablesUpgrade: a store written by the release before the registry
// (schema 11) keeps every table's state; the registry starts empty, and
// the first observation of each name takes what is under it for its
// table (package tables).
func testTablesUpgrade(t *testing.T, newStore func(t *testing.T) Store) {
	ctx := context.Background()
	k := TableKey{tbl.Bucket, "upgradedregistry", "a"}
	s := newStore(t)
	db := s.(*sqlStore).db
	for _, q := range []string{`DROP TABLE tables`, `DELETE FROM schema_migrations WHERE version >= 12`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	fillState(t, s, k, time.Now())
	s = newStore(t)
	if got := stateOf(t, s, k); got != allState {
		t.Errorf("after the upgrade: %s", got)
	}
	if recs, err := s.LiveTables(ctx, tbl.Bucket); err != nil {
		t.Fatal(err)
	} else {
		for _, r := range recs {
			if r.Key == k {
				t.Errorf("the upgrade registered %s", k)
			}
		}
	}
}
