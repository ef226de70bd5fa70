package state

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/maintenance"
)

// testHealthHistory: one sample per metadata file, whichever store (a
// replica) records it; read back oldest first and per table; samples
// older than HealthKeep forgotten by the next one recorded, a dropped
// table's too.
func testHealthHistory(t *testing.T, a, b Store) {
	ctx := context.Background()
	tbl := TableKey{tbl.Bucket, "sampled", "events"} // the suite's stores may share a database
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	other := TableKey{tbl.Bucket, tbl.Namespace, "other"}
	dropped := TableKey{tbl.Bucket, tbl.Namespace, "dropped"}
	record := func(s Store, k TableKey, at time.Time, loc string, files int) bool {
		t.Helper()
		ok, err := s.RecordHealth(ctx, HealthSample{Table: k, At: at, MetadataLocation: loc, Health: json.RawMessage(fmt.Sprintf(`{"dataFiles":%d}`, files))})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if got, err := a.HealthSamples(ctx, tbl, time.Time{}); err != nil || len(got) != 0 {
		t.Fatalf("no samples yet: %v %v", got, err)
	}
	if !record(a, tbl, t0, "m1", 10) || !record(b, tbl, t0.Add(time.Hour), "m2", 12) || !record(a, other, t0.Add(2*time.Hour), "m1", 99) || !record(b, dropped, t0, "m1", 1) {
		t.Fatal("a new metadata file was not recorded")
	}
	// The same metadata file again, from either replica: not recorded.
	if record(b, tbl, t0.Add(2*time.Hour), "m2", 12) || record(a, tbl, t0.Add(3*time.Hour), "m1", 10) {
		t.Fatal("a metadata file was sampled twice")
	}
	got, err := b.HealthSamples(ctx, tbl, time.Time{})
	if err != nil || len(got) != 2 || got[0].MetadataLocation != "m1" || !got[0].At.Equal(t0) || string(got[1].Health) != `{"dataFiles":12}` || got[1].Table != tbl {
		t.Fatalf("samples: %+v %v", got, err)
	}
	if got, _ := a.HealthSamples(ctx, tbl, t0.Add(time.Minute)); len(got) != 1 || got[0].MetadataLocation != "m2" {
		t.Fatalf("samples since t0+1m: %+v", got)
	}
	// Thirty days on, the first is past HealthKeep and goes with the
	// next sample, as does the dropped table's; the other table's, two
	// hours younger, stays.
	if !record(a, tbl, t0.Add(HealthKeep+30*time.Minute), "m3", 5) {
		t.Fatal("m3 not recorded")
	}
	if got, _ := a.HealthSamples(ctx, tbl, time.Time{}); len(got) != 2 || got[0].MetadataLocation != "m2" || got[1].MetadataLocation != "m3" {
		t.Fatalf("after pruning: %+v", got)
	}
	if got, _ := a.HealthSamples(ctx, other, time.Time{}); len(got) != 1 {
		t.Fatalf("another table's young sample was pruned: %+v", got)
	}
	if got, _ := a.HealthSamples(ctx, dropped, time.Time{}); len(got) != 0 {
		t.Fatalf("a dropped table's old sample was kept: %+v", got)
	}
}

// testHealthHistoryCap: a table that changes all the time keeps its
// newest HealthKeepPerTable samples.
func testHealthHistoryCap(t *testing.T, s Store) {
	ctx := context.Background()
	tbl := TableKey{tbl.Bucket, "busy", "events"} // the suite's stores may share a database
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	extra := 5
	for i := range HealthKeepPerTable + extra {
		if _, err := s.RecordHealth(ctx, HealthSample{Table: tbl, At: t0.Add(time.Duration(i) * time.Second), MetadataLocation: fmt.Sprint("m", i), Health: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.HealthSamples(ctx, tbl, time.Time{})
	if err != nil || len(got) != HealthKeepPerTable || got[0].MetadataLocation != fmt.Sprint("m", extra) || got[len(got)-1].MetadataLocation != fmt.Sprint("m", HealthKeepPerTable+extra-1) {
		t.Fatalf("%d samples kept (%v), first %+v", len(got), err, got[0])
	}
}

// testDailySums: numbers in runs' figures summed per UTC day, per table,
// from a day on; a figure without the number, of another shape, or a run
// still running adds nothing, and a bad path is refused.
func testDailySums(t *testing.T, s Store) {
	ctx := context.Background()
	tbl := TableKey{tbl.Bucket, "costly", "events"} // the suite's stores may share a database
	day1 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	run := func(k TableKey, typ maintenance.JobType, started time.Time, status RunStatus, metrics string) {
		t.Helper()
		r := Run{Table: k, Type: typ, Trigger: "test", Started: started}
		id, err := s.StartRun(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if status == Running {
			return
		}
		r.ID, r.Status, r.Finished, r.Metrics = id, status, started.Add(time.Minute), json.RawMessage(metrics)
		if err := s.FinishRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	run(tbl, maintenance.Compaction, day1.Add(-time.Hour), Successful, `{"cost":{"usd":100}}`) // before since
	run(tbl, maintenance.Compaction, day1.Add(time.Hour), Successful, `{"cost":{"usd":0.25,"s3TablesUSD":1.5}}`)
	run(tbl, maintenance.SnapshotManagement, day1.Add(23*time.Hour), Failed, `{"cost":{"usd":0.5}}`)
	run(tbl, maintenance.UnreferencedFileRemoval, day1.Add(2*time.Hour), Successful, `{"cost":{"usd":"a lot"},"marked":3}`)
	run(tbl, maintenance.Compaction, day1.Add(5*time.Hour), Successful, ``)                    // no figures
	run(tbl, maintenance.Compaction, day1.Add(6*time.Hour), Running, ``)                       // still running
	run(tbl, maintenance.Compaction, day1.Add(49*time.Hour), Successful, `{"cost":{"usd":2}}`) // day 3
	run(TableKey{tbl.Bucket, tbl.Namespace, "other"}, maintenance.Compaction, day1.Add(time.Hour), Successful, `{"cost":{"usd":7}}`)
	got, err := s.DailySums(ctx, tbl, day1, "cost.usd", "cost.s3TablesUSD")
	if err != nil {
		t.Fatal(err)
	}
	want := []DaySums{{Day: day1, Runs: 3, Sums: []float64{0.75, 1.5}}, {Day: day1.Add(48 * time.Hour), Runs: 1, Sums: []float64{2, 0}}}
	if len(got) != len(want) {
		t.Fatalf("days: %+v, want %+v", got, want)
	}
	for i := range want {
		if !got[i].Day.Equal(want[i].Day) || got[i].Runs != want[i].Runs || fmt.Sprint(got[i].Sums) != fmt.Sprint(want[i].Sums) {
			t.Errorf("day %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if _, err := s.DailySums(ctx, tbl, day1, "cost.usd') --"); err == nil {
		t.Error("a path that is not keys was taken")
	}
}

// testHealthUpgrade: a store made before the health history (schema 8)
// takes migration 9 on its next open and keeps what it had.
func testHealthUpgrade(t *testing.T, newStore func(t *testing.T) Store) {
	ctx := context.Background()
	k := TableKey{tbl.Bucket, "upgraded", "events"}
	s := newStore(t)
	if err := s.PutTableConfig(ctx, k, maintenance.Compaction, maintenance.Config{Status: maintenance.Disabled}); err != nil {
		t.Fatal(err)
	}
	// Back to schema 8, as an older icekeeper left it.
	db := s.(*sqlStore).db
	for _, q := range []string{`DROP TABLE health_samples`, `DROP TABLE key_indexes`, `DROP TABLE key_index_files`,
		`DROP TABLE key_index_segments`, `DROP TABLE key_index_entries`, `DROP TABLE erasure_blocks`, `DROP TABLE tables`,
		`DELETE FROM schema_migrations WHERE version >= 9`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RecordHealth(ctx, HealthSample{Table: k, MetadataLocation: "m1", Health: json.RawMessage(`{}`)}); err == nil {
		t.Fatal("schema 8 has a health history")
	}
	s = newStore(t)
	if ok, err := s.RecordHealth(ctx, HealthSample{Table: k, At: time.Now(), MetadataLocation: "m1", Health: json.RawMessage(`{}`)}); !ok || err != nil {
		t.Fatalf("after the upgrade: %v %v", ok, err)
	}
	if got, err := s.TableConfig(ctx, k); err != nil || got[maintenance.Compaction].Status != maintenance.Disabled {
		t.Fatalf("configuration after the upgrade: %v %v", got, err)
	}
}
