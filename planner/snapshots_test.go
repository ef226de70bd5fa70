package planner

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/maintenance"
)

var now = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// history is a generated table history: snapshots with parents and ages,
// refs and properties, turned into real metadata by build.
type history struct {
	snaps []hsnap
	refs  map[string]href
	props map[string]string
}

type hsnap struct {
	id, parent int64 // parent 0: root
	ageHours   float64
	op         table.Operation // "": append
	summary    map[string]string
}

type href struct {
	id                 int64
	tag                bool
	minKeep            *int
	maxAgeMs, maxRefMs *int64
}

func ptr[T any](v T) *T { return &v }

// linear makes n snapshots 1..n on one lineage, the i-th ageHours[i] old.
func linear(ages ...float64) history {
	h := history{refs: map[string]href{}, props: map[string]string{}}
	for i, a := range ages {
		h.snaps = append(h.snaps, hsnap{id: int64(i + 1), parent: int64(i), ageHours: a})
	}
	h.refs["main"] = href{id: int64(len(ages))}
	return h
}

func (h history) build(t *testing.T) table.Metadata {
	t.Helper()
	snaps := slices.Clone(h.snaps)
	slices.SortFunc(snaps, func(a, b hsnap) int { return int(b.ageHours*1000) - int(a.ageHours*1000) })
	var js []map[string]any
	for i, s := range snaps {
		m := map[string]any{
			"snapshot-id": s.id, "sequence-number": i + 1,
			"timestamp-ms":  now.Add(-time.Duration(s.ageHours * float64(time.Hour))).UnixMilli(),
			"manifest-list": fmt.Sprintf("s3://b/t/metadata/snap-%d.avro", s.id),
			"schema-id":     0,
		}
		summary := map[string]string{"operation": string(cmp.Or(s.op, table.OpAppend))}
		for k, v := range s.summary {
			summary[k] = v
		}
		m["summary"] = summary
		if s.parent != 0 {
			m["parent-snapshot-id"] = s.parent
		}
		js = append(js, m)
	}
	refs := map[string]any{}
	for name, r := range h.refs {
		m := map[string]any{"snapshot-id": r.id, "type": "branch"}
		if r.tag {
			m["type"] = "tag"
		}
		if r.minKeep != nil {
			m["min-snapshots-to-keep"] = *r.minKeep
		}
		if r.maxAgeMs != nil {
			m["max-snapshot-age-ms"] = *r.maxAgeMs
		}
		if r.maxRefMs != nil {
			m["max-ref-age-ms"] = *r.maxRefMs
		}
		refs[name] = m
	}
	doc := map[string]any{
		"format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1", "location": "s3://b/t",
		"last-sequence-number": len(snaps), "last-updated-ms": now.UnixMilli(), "last-column-id": 1,
		"schemas":           []any{map[string]any{"type": "struct", "schema-id": 0, "fields": []any{map[string]any{"id": 1, "name": "x", "required": true, "type": "long"}}}},
		"current-schema-id": 0, "partition-specs": []any{map[string]any{"spec-id": 0, "fields": []any{}}}, "default-spec-id": 0,
		"last-partition-id": 999, "sort-orders": []any{map[string]any{"order-id": 0, "fields": []any{}}}, "default-sort-order-id": 0,
		"properties": h.props, "snapshots": js, "refs": refs, "snapshot-log": []any{}, "metadata-log": []any{},
	}
	if main, ok := h.refs["main"]; ok {
		doc["current-snapshot-id"] = main.id
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := table.ParseMetadataBytes(raw)
	if err != nil {
		t.Fatalf("generated metadata does not parse: %v\n%s", err, raw)
	}
	return meta
}

func snapSettings(minKeep int, maxAgeHours int) SnapshotSettings {
	return SnapshotSettings{MinSnapshotsToKeep: minKeep, MaxSnapshotAge: time.Duration(maxAgeHours) * time.Hour, Mode: RetentionConservative}
}

func decideSnapshots(t *testing.T, h history, s SnapshotSettings) SnapshotDecision {
	t.Helper()
	d, err := Snapshots(h.build(t), s, now)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func expiredIDs(d SnapshotDecision) []int64 {
	ids := d.ExpireIDs()
	slices.Sort(ids)
	return ids
}

func checkExpired(t *testing.T, d SnapshotDecision, want ...int64) {
	t.Helper()
	if got := expiredIDs(d); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("expired %v, want %v (reasons %+v)", got, want, d.Expire)
	}
}

func TestSnapshotsLinear(t *testing.T) {
	// Ages 300h..0h; 120h max age, keep 1: everything older than 120h goes.
	h := linear(300, 250, 200, 130, 100, 50, 0)
	checkExpired(t, decideSnapshots(t, h, snapSettings(1, 120)), 1, 2, 3, 4)
	// Keep 6: only the oldest is both old and beyond the count.
	checkExpired(t, decideSnapshots(t, h, snapSettings(6, 120)), 1)
	// Keep 7 = all snapshots: nothing goes.
	checkExpired(t, decideSnapshots(t, h, snapSettings(7, 120)))
	// All young: nothing goes, whatever the count.
	checkExpired(t, decideSnapshots(t, linear(5, 4, 3, 2, 1), snapSettings(1, 120)))
}

func TestSnapshotsExactlyMinSnapshots(t *testing.T) {
	h := linear(500, 400, 300)
	checkExpired(t, decideSnapshots(t, h, snapSettings(3, 1)))
	checkExpired(t, decideSnapshots(t, h, snapSettings(2, 1)), 1)
}

func TestSnapshotsCurrentNeverExpires(t *testing.T) {
	h := linear(1000, 900)
	d := decideSnapshots(t, h, snapSettings(1, 1))
	checkExpired(t, d, 1)
	if d.Kept[2] != KeptRefHead {
		t.Fatalf("current kept by %q", d.Kept[2])
	}
}

func TestSnapshotsRollback(t *testing.T) {
	// 1 <- 2 <- 3, then a rollback to 2 and a new commit 4 on it: 3 is off
	// the current lineage and expires by age alone.
	h := history{refs: map[string]href{"main": {id: 4}}, props: map[string]string{},
		snaps: []hsnap{{id: 1, parent: 0, ageHours: 400}, {id: 2, parent: 1, ageHours: 300}, {id: 3, parent: 2, ageHours: 200}, {id: 4, parent: 2, ageHours: 10}}}
	checkExpired(t, decideSnapshots(t, h, snapSettings(1, 250)), 1, 2)
	checkExpired(t, decideSnapshots(t, h, snapSettings(1, 150)), 1, 2, 3)
	// With a young orphan, it is kept by the unreferenced-age rule.
	h.snaps[2].ageHours = 20
	d := decideSnapshots(t, h, snapSettings(1, 150))
	checkExpired(t, d, 1, 2)
	if d.Kept[3] != KeptUnrefAge {
		t.Fatalf("orphan kept by %q", d.Kept[3])
	}
}

func TestSnapshotsBranchOwnRetention(t *testing.T) {
	// main: 1..4; branch "audit" forks at 2 with 5, 6 and keeps 3 snapshots
	// forever (its own max age is huge).
	h := history{props: map[string]string{},
		snaps: []hsnap{{id: 1, parent: 0, ageHours: 500}, {id: 2, parent: 1, ageHours: 400}, {id: 3, parent: 2, ageHours: 300}, {id: 4, parent: 3, ageHours: 1}, {id: 5, parent: 2, ageHours: 350}, {id: 6, parent: 5, ageHours: 320}},
		refs: map[string]href{"main": {id: 4},
			"audit": {id: 6, minKeep: ptr(3), maxAgeMs: ptr(int64(1))}}}
	// main alone would expire 1, 2, 3; audit keeps 6, 5, 2 by count.
	d := decideSnapshots(t, h, snapSettings(1, 100))
	checkExpired(t, d, 1, 3)
	if d.Kept[2] != KeptMinCount || d.Kept[6] != KeptRefHead {
		t.Fatalf("kept %v", d.Kept)
	}
	// A branch without its own retention uses the settings.
	h.refs["audit"] = href{id: 6}
	checkExpired(t, decideSnapshots(t, h, snapSettings(1, 100)), 1, 2, 3, 5)
}

func TestSnapshotsTags(t *testing.T) {
	h := linear(900, 800, 700, 1)
	h.refs["release-1"] = href{id: 2, tag: true}
	d := decideSnapshots(t, h, snapSettings(1, 24))
	checkExpired(t, d, 1, 3)
	if d.Kept[2] != KeptRefHead {
		t.Fatalf("tagged snapshot kept by %q", d.Kept[2])
	}
}

func TestSnapshotsRefsPastMaxAge(t *testing.T) {
	h := linear(900, 800, 700, 1)
	h.refs["old-tag"] = href{id: 2, tag: true, maxRefMs: ptr(int64(24 * time.Hour / time.Millisecond))}
	h.refs["young-tag"] = href{id: 3, tag: true, maxRefMs: ptr(int64(2000 * time.Hour / time.Millisecond))}
	d := decideSnapshots(t, h, snapSettings(1, 24))
	checkExpired(t, d, 1, 2)
	if len(d.RemoveRefs) != 1 || d.RemoveRefs[0].Name != "old-tag" {
		t.Fatalf("removed refs %+v", d.RemoveRefs)
	}
	// The table-wide default applies to refs without their own.
	h.refs["young-tag"] = href{id: 3, tag: true}
	h.props[PropMaxRefAgeMs] = fmt.Sprint(int64(100 * time.Hour / time.Millisecond))
	d = decideSnapshots(t, h, snapSettings(1, 24))
	checkExpired(t, d, 1, 2, 3)
	if len(d.RemoveRefs) != 2 {
		t.Fatalf("removed refs %+v", d.RemoveRefs)
	}
	// main never ages out.
	h = linear(10000)
	h.props[PropMaxRefAgeMs] = "1"
	if d := decideSnapshots(t, h, snapSettings(1, 1)); len(d.RemoveRefs) != 0 {
		t.Fatalf("main removed: %+v", d.RemoveRefs)
	}
}

func TestSnapshotsTableProperties(t *testing.T) {
	h := linear(300, 250, 200, 130, 100, 50, 0)
	// Stricter (keeps more) table properties win in conservative mode.
	h.props[PropMinSnapshotsToKeep] = "5"
	d := decideSnapshots(t, h, snapSettings(1, 120))
	checkExpired(t, d, 1, 2)
	if d.Applied.MinSnapshotsToKeep != 5 || d.Applied.MinSnapshotsToKeepSource != "table property" {
		t.Fatalf("applied %+v", d.Applied)
	}
	h.props[PropMaxSnapshotAgeMs] = fmt.Sprint(int64(260 * time.Hour / time.Millisecond))
	checkExpired(t, decideSnapshots(t, h, snapSettings(1, 120)), 1)
	// Looser (keeps less) table properties lose to the settings.
	h.props = map[string]string{PropMinSnapshotsToKeep: "1", PropMaxSnapshotAgeMs: "1"}
	d = decideSnapshots(t, h, snapSettings(3, 120))
	checkExpired(t, d, 1, 2, 3, 4)
	if d.Applied.MinSnapshotsToKeepSource != "setting" || d.Applied.MaxSnapshotAgeSource != "setting" {
		t.Fatalf("applied %+v", d.Applied)
	}
}

func TestSnapshotsStrictMode(t *testing.T) {
	strict := snapSettings(1, 120)
	strict.Mode = RetentionStrict
	h := linear(300, 1)
	h.props[PropMaxSnapshotAgeMs] = fmt.Sprint(int64(500 * time.Hour / time.Millisecond))
	if _, err := Snapshots(h.build(t), strict, now); !errors.Is(err, ErrPropsConflict) || err.Error() != MsgPropsConflict {
		t.Fatalf("strict with conservative props: %v", err)
	}
	// Looser properties are no conflict.
	h.props[PropMaxSnapshotAgeMs] = "1"
	if d, err := Snapshots(h.build(t), strict, now); err != nil || len(d.Expire) != 1 {
		t.Fatalf("strict with loose props: %v %v", d, err)
	}
	h = linear(300, 1)
	h.refs["tag"] = href{id: 1, tag: true}
	if _, err := Snapshots(h.build(t), strict, now); !errors.Is(err, ErrRefsNotAllowed) {
		t.Fatalf("strict with refs: %v", err)
	}
}

func TestSnapshotsGCDisabledAndBadProperties(t *testing.T) {
	h := linear(300, 1)
	h.props["gc.enabled"] = "false"
	if _, err := Snapshots(h.build(t), snapSettings(1, 1), now); !errors.Is(err, maintenance.ErrGCDisabled) || err.Error() != maintenance.GCDisabledMessage {
		t.Fatalf("gc.enabled=false: %v", err)
	}
	h.props = map[string]string{PropMinSnapshotsToKeep: "lots"}
	if _, err := Snapshots(h.build(t), snapSettings(1, 1), now); !errors.Is(err, ErrBadProperty) || !strings.Contains(err.Error(), "lots") {
		t.Fatalf("bad property: %v", err)
	}
}

func TestSnapshotsLaterNowExpiresMore(t *testing.T) {
	h := linear(300, 200, 100, 50, 0)
	meta := h.build(t)
	prev := -1
	for _, later := range []time.Duration{0, 24 * time.Hour, 100 * time.Hour, 1000 * time.Hour} {
		d, err := Snapshots(meta, snapSettings(1, 120), now.Add(later))
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Expire) < prev {
			t.Fatalf("now+%v expired %d < %d", later, len(d.Expire), prev)
		}
		prev = len(d.Expire)
	}
	if prev != 4 {
		t.Fatalf("far future expired %d, want all but the current (4)", prev)
	}
}

// A generated sweep: over random histories, the invariants hold whatever
// the settings: heads of retained refs are kept, the current snapshot is
// kept, the newest minKeep of main are kept, nothing younger than the max
// age on main's lineage goes.
func TestSnapshotsInvariantsOverGeneratedHistories(t *testing.T) {
	for seed := int64(1); seed <= 200; seed++ {
		h := generate(seed)
		meta := h.build(t)
		for _, s := range []SnapshotSettings{snapSettings(1, 1), snapSettings(3, 48), snapSettings(10, 500)} {
			d, err := Snapshots(meta, s, now)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			gone := map[int64]bool{}
			for _, e := range d.Expire {
				gone[e.SnapshotID] = true
			}
			removed := map[string]bool{}
			for _, r := range d.RemoveRefs {
				removed[r.Name] = true
			}
			for name, r := range h.refs {
				if !removed[name] && gone[r.id] {
					t.Fatalf("seed %d: head %d of retained ref %s expired", seed, r.id, name)
				}
			}
			lookup := func(id int64) *table.Snapshot { return meta.SnapshotByID(id) }
			for i, snap := range table.AncestorsOf(h.refs["main"].id, lookup) {
				young := now.UnixMilli()-snap.TimestampMs <= s.MaxSnapshotAge.Milliseconds()
				if gone[snap.SnapshotID] && (i < s.MinSnapshotsToKeep || young) {
					t.Fatalf("seed %d settings %+v: main's #%d (%d) expired", seed, s, i, snap.SnapshotID)
				}
			}
			if len(d.Kept)+len(d.Expire) != len(h.snaps) {
				t.Fatalf("seed %d: %d kept + %d expired != %d snapshots", seed, len(d.Kept), len(d.Expire), len(h.snaps))
			}
		}
	}
}

// generate makes a random history: a main lineage with rollbacks, a
// branch or two with their own retention, and tags.
func generate(seed int64) history {
	r := seed
	next := func(n int64) int64 {
		r = (r*6364136223846793005 + 1442695040888963407) & (1<<62 - 1)
		return (r >> 20) % n
	}
	h := history{refs: map[string]href{}, props: map[string]string{}}
	n := 5 + next(30)
	age := float64(1000)
	var heads []int64
	var mainHead int64
	for id := int64(1); id <= n; id++ {
		parent := mainHead
		if mainHead != 0 && next(6) == 0 {
			parent = heads[next(int64(len(heads)))] // a rollback or a fork
		}
		age -= float64(1 + next(40))
		if age < 0 {
			age = 0
		}
		h.snaps = append(h.snaps, hsnap{id: id, parent: parent, ageHours: age})
		heads = append(heads, id)
		mainHead = id
	}
	h.refs["main"] = href{id: mainHead}
	if next(2) == 0 {
		h.refs["branch-a"] = href{id: heads[next(int64(len(heads)))], minKeep: ptr(int(1 + next(4)))}
	}
	if next(2) == 0 {
		h.refs["tag-a"] = href{id: heads[next(int64(len(heads)))], tag: true}
	}
	return h
}

// The rules as a table: which snapshots expire, the reason of the first,
// and the rule that kept a given snapshot.
func TestSnapshots(t *testing.T) {
	tagged := linear(900, 800, 700, 1)
	tagged.refs["release-1"] = href{id: 2, tag: true}
	oldTag := linear(900, 800, 700, 1)
	oldTag.refs["old"] = href{id: 2, tag: true, maxRefMs: ptr(int64(24 * time.Hour / time.Millisecond))}
	forked := history{refs: map[string]href{"main": {id: 4}}, props: map[string]string{},
		snaps: []hsnap{{id: 1, parent: 0, ageHours: 400}, {id: 2, parent: 1, ageHours: 300}, {id: 3, parent: 2, ageHours: 20}, {id: 4, parent: 2, ageHours: 10}}}
	for _, tc := range []struct {
		name     string
		h        history
		s        SnapshotSettings
		expire   []int64
		reason   string // of the first expired snapshot
		keptID   int64
		keptRule KeepRule
	}{
		{"old and beyond the count on main", linear(300, 250, 100, 0), snapSettings(1, 120), []int64{1, 2},
			"on branch main, 12.5d old and beyond its retention", 4, KeptRefHead},
		{"kept by count", linear(300, 250, 100, 0), snapSettings(3, 120), []int64{1},
			"on branch main, 12.5d old and beyond its retention", 2, KeptMinCount},
		{"kept by age", linear(300, 250, 100, 0), snapSettings(1, 120), []int64{1, 2},
			"on branch main, 12.5d old and beyond its retention", 3, KeptBranchAge},
		{"a young snapshot on no ref", forked, snapSettings(1, 150), []int64{1, 2},
			"on branch main, 16.7d old and beyond its retention", 3, KeptUnrefAge},
		{"an old snapshot on no ref", forked, snapSettings(1, 15), []int64{1, 2, 3},
			"on branch main, 16.7d old and beyond its retention", 4, KeptRefHead},
		{"a tag keeps its snapshot", tagged, snapSettings(1, 24), []int64{1, 3},
			"on branch main, 37.5d old and beyond its retention", 2, KeptRefHead},
		{"a tag past its max ref age goes with its snapshot", oldTag, snapSettings(1, 24), []int64{1, 2, 3},
			"on branch main, 37.5d old and beyond its retention", 4, KeptRefHead},
		{"young history", linear(30, 20, 10), snapSettings(1, 120), nil, "", 1, KeptBranchAge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decideSnapshots(t, tc.h, tc.s)
			checkExpired(t, d, tc.expire...)
			if tc.reason != "" && d.Expire[0].Reason != tc.reason {
				t.Errorf("reason %q, want %q", d.Expire[0].Reason, tc.reason)
			}
			if d.Kept[tc.keptID] != tc.keptRule {
				t.Errorf("snapshot %d kept by %q, want %q", tc.keptID, d.Kept[tc.keptID], tc.keptRule)
			}
		})
	}
}

func TestSnapshotSettingsOf(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want RetentionMode
	}{
		{"", RetentionConservative},
		{"conservative", RetentionConservative},
		{"strict", RetentionStrict},
	} {
		s := maintenance.Settings{Configs: map[maintenance.JobType]maintenance.Config{
			maintenance.SnapshotManagement: maintenance.Defaults(maintenance.SnapshotManagement)},
			Knobs: maintenance.Knobs{RetentionMode: tc.mode, DeleteExpiredFiles: true}}
		got := SnapshotSettingsOf(s)
		if got.Mode != tc.want || got.MinSnapshotsToKeep != 1 || got.MaxSnapshotAge != 120*time.Hour || !got.DeleteExpiredFiles || got.PruneUnusedSchemasAndSpecs {
			t.Errorf("mode %q: %+v", tc.mode, got)
		}
	}
}
