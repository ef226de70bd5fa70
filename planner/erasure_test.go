package planner

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

var week = ErasureSettings{Deadline: 7 * 24 * time.Hour}

func hoursAgo(h float64) time.Time {
	return now.Add(-time.Duration(h * float64(time.Hour))).Truncate(time.Millisecond)
}

// erasureHistory: 1 and 2 appends, 3 an overwrite ten days ago, 4 an
// append, 5 (current) a compaction a day ago.
func erasureHistory() history {
	h := linear(30*24, 20*24, 10*24, 5*24, 24)
	h.snaps[2].op = table.OpOverwrite
	h.snaps[4].op = table.OpReplace
	return h
}

func never(int64) bool { return false }

// A snapshot on main reaches what the first later commit that is not an
// append removed, and what its own deletes mask; the current snapshot is
// the rewrite's. Due within the lead: expired; later: pending.
func TestSnapshotRemovalsMain(t *testing.T) {
	meta := erasureHistory().build(t)
	got := SnapshotRemovals(meta, nil, never)
	want := map[int64]time.Time{1: hoursAgo(240), 2: hoursAgo(240), 3: hoursAgo(24), 4: hoursAgo(24)}
	if !maps.EqualFunc(got, want, time.Time.Equal) {
		t.Fatalf("removals %v, want %v", got, want)
	}
	p := PlanErasureSnapshots(week, meta, got, now)
	if ids := p.ExpireIDs(); !slices.Equal(ids, []int64{1, 2}) || len(p.Pending) != 2 || len(p.Blocked) != 0 {
		t.Fatalf("plan %+v", p)
	}
	if due := p.Pending[0].Due; !due.Equal(hoursAgo(24).Add(week.Deadline)) {
		t.Errorf("pending due %v", due)
	}
	// Snapshot 4's own delete, twelve days old, makes it due.
	got = SnapshotRemovals(meta, map[int64]time.Time{4: hoursAgo(12 * 24)}, never)
	if ids := PlanErasureSnapshots(week, meta, got, now).ExpireIDs(); !slices.Equal(ids, []int64{1, 2, 4}) {
		t.Fatalf("expired %v, want 1 2 4", ids)
	}
	// Six days after a removal the lead has begun; five days after, not.
	for _, c := range []struct {
		removedHours float64
		acts         bool
	}{{6 * 24, true}, {5 * 24, false}, {7*24 + 1, true}} {
		if got := week.Acts(hoursAgo(c.removedHours), now); got != c.acts {
			t.Errorf("removed %vh ago: acts %v", c.removedHours, got)
		}
	}
	if lead := (ErasureSettings{Deadline: 24 * time.Hour}).Lead(); lead != 12*time.Hour {
		t.Errorf("a one-day deadline's lead %v, want half of it", lead)
	}
}

// Refs: a tag on a due snapshot and a branch forked from one block and are
// never expired; a snapshot on no ref is dead history, removed when made;
// a ref whose fork main expired blocks only when its manifests say it
// holds something the current snapshot does not.
func TestSnapshotRemovalsRefs(t *testing.T) {
	h := erasureHistory()
	h.refs["audit"] = href{id: 2, tag: true}
	h.snaps = append(h.snaps, hsnap{id: 6, parent: 2, ageHours: 15 * 24}) // branch dev, forked at 2
	h.refs["dev"] = href{id: 6}
	h.snaps = append(h.snaps, hsnap{id: 7, parent: 3, ageHours: 9 * 24}) // rolled back: on no ref
	h.snaps = append(h.snaps, hsnap{id: 8, parent: 99, ageHours: 40 * 24})
	h.refs["old"] = href{id: 8, tag: true}
	meta := h.build(t)

	for _, held := range []bool{false, true} {
		asked := 0
		removals := SnapshotRemovals(meta, nil, func(id int64) bool {
			asked++
			if id != 8 {
				t.Errorf("asked whether %d holds; only 8's fork is gone", id)
			}
			return held
		})
		if asked != 1 {
			t.Errorf("asked %d times", asked)
		}
		p := PlanErasureSnapshots(week, meta, removals, now)
		if ids := p.ExpireIDs(); !slices.Equal(ids, []int64{1, 7}) {
			t.Errorf("held %v: expired %v, want 1 and 7", held, ids)
		}
		var blocked []string
		for _, b := range p.Blocked {
			blocked = append(blocked, b.Ref+"@"+b.Type)
		}
		slices.Sort(blocked)
		want := []string{"audit@tag", "dev@branch"}
		if held {
			want = []string{"audit@tag", "dev@branch", "old@tag"}
		}
		if !slices.Equal(blocked, want) {
			t.Errorf("held %v: blocked %v, want %v", held, blocked, want)
		}
	}
}

// Every snapshot an append: no row was removed, read from the metadata.
func TestErasureIdle(t *testing.T) {
	if _, idle := ErasureIdle(linear(30, 20, 10).build(t)); !idle {
		t.Error("appends only: not idle")
	}
	if _, idle := ErasureIdle(erasureHistory().build(t)); idle {
		t.Error("an overwrite in the history: idle")
	}
}

// Only files whose oldest delete is within the lead are rewritten,
// grouped by partition up to the target, oldest removal first; the rest
// are pending with their deadline.
func TestPlanErasureRewrite(t *testing.T) {
	spec := *iceberg.UnpartitionedSpec
	// dataFile's files hold 100 bytes a record.
	file := func(path string, size int64, removedHours float64, part string) ErasureFile {
		df := dataFile(t, spec, iceberg.EntryContentData, path, iceberg.ParquetFile, size/100)
		return ErasureFile{Task: table.FileScanTask{File: df}, Removed: hoursAgo(removedHours), Partition: part, Label: part}
	}
	files := []ErasureFile{
		file("a1", 6000, 8*24, "a"), file("a2", 6000, 9*24, "a"), file("a3", 3000, 7*24, "a"),
		file("b1", 1000, 6.5*24, "b"),
		file("c1", 1000, 2*24, "c"),
	}
	groups, pending := PlanErasureRewrite(week, files, 10000, now)
	var got [][]string
	for _, g := range groups {
		var paths []string
		for _, task := range g.Tasks {
			paths = append(paths, task.File.FilePath())
		}
		got = append(got, paths)
	}
	want := [][]string{{"a2"}, {"a1", "a3"}, {"b1"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("groups %v, want %v", got, want)
	}
	if len(pending) != 1 || pending[0].What != "c1" || !pending[0].Due.Equal(hoursAgo(48).Add(week.Deadline)) {
		t.Fatalf("pending %+v", pending)
	}
	if next := week.NextErasure(pending); !next.Equal(hoursAgo(48).Add(week.Deadline - week.Lead())) {
		t.Errorf("next erasure %v", next)
	}
}
