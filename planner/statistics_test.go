package planner

import (
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/maintenance"
)

// step is a snapshot of a lineage fixture: its operation and summary.
type step struct {
	op    table.Operation
	props map[string]string
}

func appendOf(total int64) step {
	return step{table.OpAppend, map[string]string{"total-records": strconv.FormatInt(total, 10), "added-data-files": "1"}}
}

func deleteOf(deleted, total int64) step {
	return step{table.OpDelete, map[string]string{"deleted-records": strconv.FormatInt(deleted, 10), "total-records": strconv.FormatInt(total, 10)}}
}

// lineage is newMeta with snapshots 1..len(steps), each the parent of the
// next, the last current; stats lists the snapshots that have an
// icekeeper statistics file of fields 1 and 2 (removed rows so far:
// removed).
func lineage(t *testing.T, steps []step, removed int64, stats ...int64) table.Metadata {
	t.Helper()
	meta := newMeta(t, "2")
	b, err := table.MetadataBuilderFromBase(meta, "")
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range steps {
		id := int64(i + 1)
		snap := &table.Snapshot{SnapshotID: id, SequenceNumber: id, TimestampMs: meta.LastUpdatedMillis() + id,
			ManifestList: "s3://b/t/metadata/snap-" + strconv.Itoa(i) + ".avro", Summary: &table.Summary{Operation: s.op, Properties: s.props}}
		if i > 0 {
			parent := id - 1
			snap.ParentSnapshotID = &parent
		}
		if err := b.AddSnapshot(snap); err != nil {
			t.Fatal(err)
		}
		if err := b.SetSnapshotRef(table.MainBranch, id, table.BranchRef); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range stats {
		props := map[string]string{NDVProperty: "10", RemovedSinceProperty: strconv.FormatInt(removed, 10),
			HiddenAtProperty: "0", RecomputedProperty: "1"}
		f := table.StatisticsFile{SnapshotID: id, StatisticsPath: "s3://b/t/metadata/" + strconv.FormatInt(id, 10) + ".stats"}
		for _, field := range []int32{1, 2} {
			f.BlobMetadata = append(f.BlobMetadata, table.BlobMetadata{Type: table.BlobTypeApacheDatasketchesThetaV1,
				SnapshotID: id, Fields: []int32{field}, Properties: props})
		}
		if err := b.SetStatistics(f); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var twoColumns = StatisticsSettings{MaxColumns: 100, MaxDrift: 0.10}

// The plan reads what changed since the statistics' snapshot: appends'
// files, never a rewrite's; it counts removed rows and computes afresh
// past the drift, and whenever the state cannot be trusted.
func TestPlanStatistics(t *testing.T) {
	for _, c := range []struct {
		name    string
		steps   []step
		removed int64
		stats   []int64
		full    bool
		read    []int64
		upToDat bool
		drift   float64
		remove  []int64
	}{
		{name: "no statistics yet", steps: []step{appendOf(100)}, full: true},
		{name: "up to date", steps: []step{appendOf(100)}, stats: []int64{1}, upToDat: true},
		{name: "appends since", steps: []step{appendOf(100), appendOf(101), appendOf(102)}, stats: []int64{1}, read: []int64{2, 3}, remove: []int64{1}},
		{name: "a compaction reads nothing", steps: []step{appendOf(100), {table.OpReplace, map[string]string{"total-records": "100"}}}, stats: []int64{1}, remove: []int64{1}},
		{name: "a small delete drifts", steps: []step{appendOf(100), deleteOf(5, 95)}, stats: []int64{1}, drift: 5.0 / 95, remove: []int64{1}},
		{name: "drift carried on", steps: []step{appendOf(100), deleteOf(3, 97)}, removed: 6, stats: []int64{1}, drift: 9.0 / 97, remove: []int64{1}},
		{name: "past the drift", steps: []step{appendOf(100), deleteOf(5, 95)}, removed: 6, stats: []int64{1}, full: true, remove: []int64{1}},
		{name: "an unknown operation", steps: []step{appendOf(100), {"truncate", nil}}, stats: []int64{1}, full: true, remove: []int64{1}},
		{name: "the newest statistics are the state", steps: []step{appendOf(100), appendOf(101), appendOf(102)}, stats: []int64{1, 2}, read: []int64{3}, remove: []int64{1, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			meta := lineage(t, c.steps, c.removed, c.stats...)
			p, err := PlanStatistics(meta, twoColumns)
			if err != nil {
				t.Fatal(err)
			}
			var read []int64
			for _, s := range p.Steps {
				if s.Read {
					read = append(read, s.SnapshotID)
				}
			}
			if p.Full != c.full || !slices.Equal(read, c.read) || p.UpToDate != c.upToDat || !slices.Equal(p.Remove, c.remove) {
				t.Errorf("full %v, read %v, up to date %v, remove %v (%s); want %v, %v, %v, %v", p.Full, read, p.UpToDate, p.Remove, p.Reason, c.full, c.read, c.upToDat, c.remove)
			}
			if !c.full && p.Drift != c.drift {
				t.Errorf("drift %v, want %v", p.Drift, c.drift)
			}
			if p.SnapshotID != int64(len(c.steps)) || len(p.Columns) != 2 {
				t.Errorf("describes snapshot %d with %d columns", p.SnapshotID, len(p.Columns))
			}
		})
	}
}

// A statistics file off the current lineage (another branch's, or one
// whose snapshot was rolled back) is not the state, and stays.
func TestPlanStatisticsOffLineage(t *testing.T) {
	meta := lineage(t, []step{appendOf(100), appendOf(101)}, 0, 2)
	b, err := table.MetadataBuilderFromBase(meta, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetSnapshotRef(table.MainBranch, 1, table.BranchRef); err != nil { // roll back
		t.Fatal(err)
	}
	if meta, err = b.Build(); err != nil {
		t.Fatal(err)
	}
	p, err := PlanStatistics(meta, twoColumns)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Full || p.Base != nil || len(p.Remove) != 0 {
		t.Errorf("full %v, base %+v, remove %v", p.Full, p.Base, p.Remove)
	}
}

// Columns: the named ones, or the top-level primitive ones up to the cap;
// a nested or unknown name is refused as invalid.
func TestStatisticsColumns(t *testing.T) {
	cols, err := StatisticsColumns(testSchema, StatisticsSettings{MaxColumns: 100})
	if err != nil || len(cols) != 2 || cols[0].Name != "id" || cols[1].Name != "name" {
		t.Errorf("default columns %v, %v", cols, err)
	}
	if cols, _ := StatisticsColumns(testSchema, StatisticsSettings{MaxColumns: 1}); len(cols) != 1 {
		t.Errorf("capped at 1: %v", cols)
	}
	if cols, err := StatisticsColumns(testSchema, StatisticsSettings{Columns: []string{"name"}}); err != nil || len(cols) != 1 || cols[0].FieldID != 2 {
		t.Errorf("named: %v, %v", cols, err)
	}
	for _, bad := range []string{"loc.city", "nope", "loc"} {
		if _, err := StatisticsColumns(testSchema, StatisticsSettings{Columns: []string{bad}}); !errors.Is(err, maintenance.ErrInvalid) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// The oldest commit the statistics do not describe is the freshness
// target's work.
func TestStatisticsOldest(t *testing.T) {
	meta := lineage(t, []step{appendOf(100), appendOf(101), appendOf(102)}, 0, 1)
	o, ok := StatisticsOldest(meta)
	if !ok || o.SnapshotID != 2 {
		t.Errorf("oldest %+v, %v", o, ok)
	}
	if _, ok := StatisticsOldest(lineage(t, []step{appendOf(100)}, 0, 1)); ok {
		t.Error("statistics of the current snapshot leave work")
	}
}

// A snapshot expired between the statistics' and the current one breaks
// the walk: what it changed is unknown, so the run computes afresh.
func TestPlanStatisticsGap(t *testing.T) {
	meta := lineage(t, []step{appendOf(100), appendOf(101), appendOf(102)}, 0, 1)
	b, err := table.MetadataBuilderFromBase(meta, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.RemoveSnapshots([]int64{2}, false); err != nil {
		t.Fatal(err)
	}
	if meta, err = b.Build(); err != nil {
		t.Fatal(err)
	}
	p, err := PlanStatistics(meta, twoColumns)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Full || len(p.Steps) != 0 {
		t.Errorf("across a gap: full %v, steps %v (%s)", p.Full, p.Steps, p.Reason)
	}
}

// Statistics and erasure are not enabled together: the sketches would keep
// hashes of removed rows past erasure's deadline. Either alone translates.
func TestStatisticsRefusedBesideErasure(t *testing.T) {
	days := 7
	settings := func(stats, erasure maintenance.Status) maintenance.Settings {
		return maintenance.Settings{Configs: map[maintenance.JobType]maintenance.Config{
			maintenance.Statistics: maintenance.Resolve(maintenance.Statistics, maintenance.Config{Status: stats}),
			maintenance.Erasure:    maintenance.Resolve(maintenance.Erasure, maintenance.Config{Status: erasure, Settings: &maintenance.ErasureSettings{DeadlineDays: &days}}),
		}}
	}
	if _, err := StatisticsSettingsOf(settings(maintenance.Enabled, maintenance.Enabled)); !errors.Is(err, maintenance.ErrInvalid) {
		t.Fatalf("statistics with erasure: %v, want maintenance.ErrInvalid", err)
	}
	for _, tc := range [][2]maintenance.Status{{maintenance.Enabled, maintenance.Disabled}, {maintenance.Disabled, maintenance.Enabled}} {
		if _, err := StatisticsSettingsOf(settings(tc[0], tc[1])); err != nil {
			t.Errorf("statistics %s, erasure %s: %v", tc[0], tc[1], err)
		}
	}
}
