package planner

import (
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
)

func TestFreshnessTarget(t *testing.T) {
	for _, tc := range []struct {
		prop    string
		set     bool
		want    time.Duration
		wantErr bool
	}{
		{set: false, want: time.Hour},
		{prop: "2m", set: true, want: 2 * time.Minute},
		{prop: " 90s ", set: true, want: 90 * time.Second},
		{prop: "3", set: true, want: 3 * time.Minute},
		{prop: "0.5", set: true, want: 30 * time.Second},
		{prop: "soon", set: true, want: time.Hour, wantErr: true},
		{prop: "-2m", set: true, want: time.Hour, wantErr: true},
		{prop: "0", set: true, want: time.Hour, wantErr: true},
	} {
		props := map[string]string{}
		if tc.set {
			props[FreshnessProperty] = tc.prop
		}
		got, err := FreshnessTarget(props, time.Hour)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("FreshnessTarget(%q) = %v, %v; want %v, error %v", tc.prop, got, err, tc.want, tc.wantErr)
		}
	}
}

// streaming is a table an appender wrote to every ten minutes for an
// hour (snapshots 1..6, 60 to 10 minutes old) with one icekeeper
// compaction after snapshot 3 (snapshot 7, 35 minutes old).
func streaming() history {
	h := history{refs: map[string]href{}, props: map[string]string{}}
	add := map[string]string{"added-data-files": "1"}
	ages := []float64{60, 50, 40, 30, 20, 10}
	for i, a := range ages {
		h.snaps = append(h.snaps, hsnap{id: int64(i + 1), parent: int64(i), ageHours: a / 60, summary: add})
	}
	h.snaps = append(h.snaps, hsnap{id: 7, parent: 3, ageHours: 35.0 / 60, op: table.OpReplace,
		summary: map[string]string{"added-data-files": "1", "deleted-data-files": "3", IcekeeperJobProperty: "icebergCompaction"}})
	h.refs["main"] = href{id: 6}
	return h
}

func TestPendingChanges(t *testing.T) {
	meta := streaming().build(t)
	seqOf := map[int64]int64{}
	for _, s := range meta.Snapshots() {
		seqOf[s.SnapshotID] = s.SequenceNumber
	}
	// Never taken: the first append waits.
	o, ok := PendingChanges(meta, nil)
	if !ok || o.SnapshotID != 1 || !o.Since.Equal(now.Add(-60*time.Minute).Truncate(time.Millisecond)) {
		t.Fatalf("no base: %+v %v, want snapshot 1 an hour old", o, ok)
	}
	if o.What != "1 data file added by snapshot 1 (append)" {
		t.Errorf("What = %q", o.What)
	}
	// A run that found snapshot 3 current took 1..3; icekeeper's own
	// replace (7, committed after 3) is not work: 4 waits.
	o, ok = PendingChanges(meta, &Base{SnapshotID: 3, SequenceNumber: seqOf[3]})
	if !ok || o.SnapshotID != 4 {
		t.Fatalf("base 3: %+v %v, want snapshot 4", o, ok)
	}
	// A run that took everything leaves nothing.
	if o, ok := PendingChanges(meta, &Base{SnapshotID: 6, SequenceNumber: seqOf[6]}); ok {
		t.Fatalf("base 6: %+v, want nothing", o)
	}
	// Snapshots that add nothing (an expiry's, a schema change's) are
	// not work.
	h := linear(30, 20)
	if o, ok := PendingChanges(h.build(t), nil); ok {
		t.Fatalf("no added files: %+v, want nothing", o)
	}
}

func TestPendingExpiry(t *testing.T) {
	// Five snapshots 10, 8, 6, 4, 2 hours old; keep 1 and at most 5 hours:
	// 1 (10 h) expired 5 hours ago, 2 (8 h) 3 hours ago, 3 (6 h) one.
	meta := linear(10, 8, 6, 4, 2).build(t)
	o, ok, err := PendingExpiry(meta, snapSettings(1, 5), now)
	if err != nil || !ok {
		t.Fatalf("PendingExpiry: %+v %v %v", o, ok, err)
	}
	if o.SnapshotID != 1 || !o.Since.Equal(now.Add(-5*time.Hour).Truncate(time.Millisecond)) {
		t.Errorf("oldest = %+v, want snapshot 1 expirable for 5 h", o)
	}
	// Kept by count: with 4 to keep, snapshot 1 became expirable only
	// when snapshot 5 (2 hours old) pushed it out.
	o, ok, err = PendingExpiry(meta, snapSettings(4, 5), now)
	if err != nil || !ok || o.SnapshotID != 1 || !o.Since.Equal(now.Add(-2*time.Hour).Truncate(time.Millisecond)) {
		t.Errorf("keep 4: %+v %v %v, want snapshot 1 expirable for 2 h", o, ok, err)
	}
	// Nothing to expire: nothing waits.
	if o, ok, err := PendingExpiry(meta, snapSettings(10, 5), now); ok || err != nil {
		t.Errorf("keep 10: %+v %v %v, want nothing", o, ok, err)
	}
}

func TestOtherMaintainer(t *testing.T) {
	h := streaming()
	// icekeeper's replace is its own; an append is a writer's.
	if m, ok := OtherMaintainer(h.build(t), now.Add(-time.Hour)); ok {
		t.Fatalf("only icekeeper's replace: %+v", m)
	}
	// Spark's rewrite_data_files, 15 minutes ago.
	h.snaps = append(h.snaps, hsnap{id: 8, parent: 6, ageHours: 0.25, op: table.OpReplace,
		summary: map[string]string{"engine-name": "spark", "added-data-files": "1", "deleted-data-files": "4"}})
	// Flink's conversion, 5 minutes ago, on its staging branch.
	h.snaps = append(h.snaps, hsnap{id: 9, parent: 8, ageHours: 5.0 / 60, op: table.OpOverwrite,
		summary: map[string]string{"engine-name": "flink", "removed-equality-delete-files": "2", "added-dvs": "3"}})
	h.refs["main"] = href{id: 8}
	h.refs["staging"] = href{id: 9}
	meta := h.build(t)
	m, ok := OtherMaintainer(meta, now.Add(-time.Hour))
	if !ok || m.SnapshotID != 9 || m.Engine != "flink" || m.What != "equality-delete conversion" {
		t.Fatalf("latest other = %+v %v, want Flink's conversion (9)", m, ok)
	}
	m, ok = OtherMaintainer(meta, now.Add(-10*time.Minute))
	if !ok || m.SnapshotID != 9 {
		t.Fatalf("within 10 min: %+v %v", m, ok)
	}
	if m, ok := OtherMaintainer(meta, now.Add(-time.Minute)); ok {
		t.Fatalf("cool-down of a minute: %+v, want none", m)
	}
	h.snaps = h.snaps[:len(h.snaps)-1]
	delete(h.refs, "staging")
	m, ok = OtherMaintainer(h.build(t), now.Add(-time.Hour))
	if !ok || m.SnapshotID != 8 || m.Engine != "spark" || m.What != "replace" {
		t.Fatalf("Spark's replace: %+v %v", m, ok)
	}
}
