package planner

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// withSnapshot is meta with a current snapshot on main whose summary
// holds props.
func withSnapshot(t *testing.T, meta table.Metadata, props map[string]string) table.Metadata {
	t.Helper()
	b, err := table.MetadataBuilderFromBase(meta, "")
	if err != nil {
		t.Fatal(err)
	}
	snap := &table.Snapshot{SnapshotID: 7, SequenceNumber: 1, TimestampMs: meta.LastUpdatedMillis() + 1,
		ManifestList: "s3://b/t/metadata/snap-7.avro", Summary: &table.Summary{Operation: table.OpAppend, Properties: props}}
	if err := b.AddSnapshot(snap); err != nil {
		t.Fatal(err)
	}
	if err := b.SetSnapshotRef(table.MainBranch, 7, table.BranchRef); err != nil {
		t.Fatal(err)
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func totals(files, deletes, size int64) map[string]string {
	return map[string]string{"total-data-files": strconv.FormatInt(files, 10),
		"total-delete-files": strconv.FormatInt(deletes, 10), "total-files-size": strconv.FormatInt(size, 10)}
}

// The summary rule settles a table only where the planner, reading the
// manifests, could find nothing either; anything it cannot tell from the
// totals is evaluated in full.
func TestCompactionIdle(t *testing.T) {
	var target int64 = 128 << 20
	large := int64(float64(target) * LargeRatio)
	evolved := func() table.Metadata {
		b, err := table.MetadataBuilderFromBase(newMeta(t, "2"), "")
		if err != nil {
			t.Fatal(err)
		}
		spec := iceberg.NewPartitionSpecID(1, iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "name", Transform: iceberg.IdentityTransform{}})
		if err := b.AddPartitionSpec(&spec, false); err != nil {
			t.Fatal(err)
		}
		if err := b.SetDefaultSpecID(1); err != nil {
			t.Fatal(err)
		}
		m, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}()
	missing := totals(2, 0, 100)
	delete(missing, "total-delete-files")
	for _, tc := range []struct {
		name         string
		meta         table.Metadata
		minManifests int
		idle         bool
	}{
		{"few small files", withSnapshot(t, newMeta(t, "2"), totals(4, 0, 4<<20)), 0, true},
		{"no data files", withSnapshot(t, newMeta(t, "2"), totals(0, 0, 0)), 0, true},
		{"as many files as the minimum", withSnapshot(t, newMeta(t, "2"), totals(5, 0, 5<<20)), 0, false},
		{"fewer manifests may be small enough to merge", withSnapshot(t, newMeta(t, "2"), totals(4, 0, 4<<20)), 3, false},
		{"a delete file", withSnapshot(t, newMeta(t, "2"), totals(1, 1, 1<<20)), 0, false},
		{"a file too large", withSnapshot(t, newMeta(t, "2"), totals(1, 0, large+1)), 0, false},
		{"just within the large bound", withSnapshot(t, newMeta(t, "2"), totals(1, 0, large)), 0, true},
		{"an older partition spec", withSnapshot(t, evolved, totals(1, 0, 1<<20)), 0, false},
		{"a total missing", withSnapshot(t, newMeta(t, "2"), missing), 0, false},
		{"a total that is no number", withSnapshot(t, newMeta(t, "2"), map[string]string{"total-data-files": "x", "total-delete-files": "0", "total-files-size": "1"}), 0, false},
		{"no snapshot", newMeta(t, "2"), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, idle := CompactionIdle(tc.meta, DefaultMinInput, tc.minManifests, target)
			if idle != tc.idle {
				t.Fatalf("idle %v (%q), want %v", idle, reason, tc.idle)
			}
			if idle && !strings.Contains(reason, "no delete files") {
				t.Fatalf("reason %q", reason)
			}
		})
	}
	if _, idle := CompactionIdle(withSnapshot(t, newMeta(t, "2"), totals(1, 0, 1)), 0, 0, target); idle {
		t.Fatal("idle without a minimum of input files")
	}
}

// The totals stand in only for a table that changed since a full
// evaluation younger than the backstop: the first, a settings change, the
// clock and the backstop evaluate in full.
func TestSummaryApplies(t *testing.T) {
	for rule, want := range map[string]bool{RuleSnapshotChanged: true, RuleMetadataChanged: true,
		RuleFirst: false, RuleSettingsChanged: false, RuleClock: false, RuleBackstop: false, RuleUnchanged: false} {
		if got := SummaryApplies(rule, time.Hour, 24*time.Hour); got != want {
			t.Errorf("%s: %v, want %v", rule, got, want)
		}
	}
	if SummaryApplies(RuleSnapshotChanged, 24*time.Hour, 24*time.Hour) {
		t.Error("the totals stood in for a full evaluation the backstop calls for")
	}
}
