package orphan

import (
	"hash/maphash"
	"slices"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/planner"
)

func refsOf(keys ...string) *refSet {
	rs := &refSet{seed: maphash.MakeSeed()}
	for _, k := range keys {
		h := maphash.String(rs.seed, k)
		rs.hashes = append(rs.hashes, h)
		rs.refs = append(rs.refs, ref{hash: h, required: true})
	}
	rs.seal()
	return rs
}

// Where each listed object stands: referenced whatever its name, then
// referenced by another table whatever its name, then an unsafe name, then
// under another table's prefix, else unreferenced.
func TestStanding(t *testing.T) {
	v := view{refs: refsOf("b/t/data/live", "b/t/data/../ref", "b/t/nested/data/ref"),
		others: others{exclude: []loc{{scheme: "s3", authority: "b", path: "/t/nested/"}}, refs: refsOf("b/t/data/added", "b/t//data/odd", "b/t/data/live")}}
	for _, tc := range []struct {
		path string
		want planner.Standing
	}{
		{"/t/data/live", planner.StandingReferenced},
		{"/t/data/added", planner.StandingOtherReference},
		{"/t//data/odd", planner.StandingOtherReference},
		{"/t/data/../ref", planner.StandingReferenced},
		{"/t/nested/data/ref", planner.StandingReferenced},
		{"/t/data/old", planner.StandingUnreferenced},
		{"/t/data/../x", planner.StandingUnsafeName},
		{"/t//data/y", planner.StandingUnsafeName},
		{"/t/./z", planner.StandingUnsafeName},
		{"/t/data/dir/", planner.StandingUnsafeName},
		{"/t/nested/data/y", planner.StandingOtherTable},
		{"/t/nested/../y", planner.StandingUnsafeName},
		{"/t/nestedness/old", planner.StandingUnreferenced}, // a sibling sharing a string: this table's
	} {
		if got := v.standing(loc{scheme: "s3", authority: "b", path: tc.path}); got != tc.want {
			t.Errorf("%s stands %d, want %d", tc.path, got, tc.want)
		}
	}
}

// Objects whose names storage may resolve elsewhere, and objects of other
// tables inside this one, are never marked; a mark an earlier version left
// on one is dropped. A required reference the listing lacks is reported.
func TestStandingPlan(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	rules := planner.RemovalRules{UnreferencedAge: 3 * day, NonCurrentAge: 10 * day}
	refs := refsOf("b/t/data/live", "b/t/data/gone")
	v := view{refs: refs, others: others{exclude: []loc{{scheme: "s3", authority: "b", path: "/t/nested/"}}, refs: refsOf()}}
	marks := []planner.Mark{{Path: "s3://b/t/data/../x", MarkedAt: now.Add(-20 * day)}, {Path: "s3://b/t/nested/data/y", MarkedAt: now.Add(-20 * day)}}
	p := planner.NewRemoval(rules, now, marks)
	for _, path := range []string{"/t/data/live", "/t/data/../x", "/t//data/y", "/t/./z", "/t/data/dir/", "/t/nested/data/y", "/t/nestedness/old"} {
		l := loc{scheme: "s3", authority: "b", path: path}
		p.Observe(planner.RemovalObject{Path: l.String(), Size: 10, LastModified: now.Add(-30 * day)}, v.standing(l))
	}
	plan := p.Finish()
	if plan.UnsafeNames != 4 || plan.OtherTables != 1 || plan.Referenced != 1 || len(plan.Delete) != 0 {
		t.Fatalf("counts %+v", plan)
	}
	if len(plan.Mark) != 1 || plan.Mark[0].Path != "s3://b/t/nestedness/old" {
		t.Fatalf("mark %+v", plan.Mark)
	}
	slices.Sort(plan.Unmark)
	if !slices.Equal(plan.Unmark, []string{"s3://b/t/data/../x", "s3://b/t/nested/data/y"}) {
		t.Fatalf("unmark %v", plan.Unmark)
	}
	n, missing := refs.unlisted()
	if n != 1 || len(missing) != 1 || missing[0] != maphash.String(refs.seed, "b/t/data/gone") {
		t.Fatalf("unlisted %d, required missing %v", n, missing)
	}
}

// The store's marks and the planner's convert both ways without loss.
func TestMarksConvert(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	in := []planner.Mark{{Path: "s3://b/t/x", Size: 3, LastModified: now.Add(-time.Hour), MarkedAt: now, ProtectedAt: now.Add(time.Minute)}}
	key := state.TableKey{Bucket: "b", Namespace: "n", Name: "t"}
	st := storeMarks(in, key, 42)
	if st[0].Table != key || st[0].RunID != 42 {
		t.Fatalf("store mark %+v", st[0])
	}
	if back := planMarks(st); !slices.Equal(back, in) {
		t.Fatalf("%+v != %+v", back, in)
	}
}
