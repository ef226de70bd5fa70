package orphan

import (
	"hash/maphash"
	"slices"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/internal/state"
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

func TestPlanner(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	rules := Rules{UnreferencedAge: 3 * day, NonCurrentAge: 10 * day}
	obj := func(p string, age time.Duration) Object {
		return Object{Loc: loc{scheme: "s3", authority: "b", path: p}, Size: 10, LastModified: now.Add(-age)}
	}
	marks := []state.Mark{
		{Path: "s3://b/t/data/due", MarkedAt: now.Add(-11 * day)},
		{Path: "s3://b/t/data/pending", MarkedAt: now.Add(-2 * day)},
		{Path: "s3://b/t/data/back", MarkedAt: now.Add(-20 * day)},
		{Path: "s3://b/t/data/gone", MarkedAt: now.Add(-20 * day)},
		{Path: "s3://b/t/data/kept", MarkedAt: now.Add(-20 * day), ProtectedAt: now.Add(-15 * day)},
		{Path: "s3://b/t/data/wanted", MarkedAt: now.Add(-20 * day), ProtectedAt: now.Add(-15 * day)},
		{Path: "s3://b/t/data/lost", MarkedAt: now.Add(-20 * day), ProtectedAt: now.Add(-15 * day)},
	}
	p := newPlanner(rules, now, refsOf("b/t/data/live", "b/t/data/back", "b/t/data/wanted"), nil, marks)
	for _, o := range []Object{
		obj("/t/data/live", 100*day),   // referenced
		obj("/t/data/young", 1*day),    // unreferenced, too young
		obj("/t/data/old", 4*day),      // unreferenced, old: mark
		obj("/t/data/due", 30*day),     // marked 11 days ago: delete
		obj("/t/data/pending", 30*day), // marked 2 days ago: wait
		obj("/t/data/back", 30*day),    // marked but referenced again: unmark
		obj("/t/data/kept", 30*day),    // protected, long past due: keep
		obj("/t/data/wanted", 30*day),  // protected, referenced again: unmark
	} {
		p.observe(o)
	}
	plan := p.finish()
	if plan.Listed != 8 || plan.Referenced != 3 || plan.Unreferenced != 5 || plan.TooYoung != 1 || plan.StillPending != 1 || plan.Protected != 1 {
		t.Fatalf("counts %+v", plan)
	}
	if len(plan.Mark) != 1 || plan.Mark[0].Path != "s3://b/t/data/old" || !plan.Mark[0].MarkedAt.Equal(now) {
		t.Fatalf("mark %+v", plan.Mark)
	}
	if len(plan.Delete) != 1 || plan.Delete[0].Path != "s3://b/t/data/due" {
		t.Fatalf("delete %+v", plan.Delete)
	}
	slices.Sort(plan.Vanished)
	if !slices.Equal(plan.Unmark, []string{"s3://b/t/data/back", "s3://b/t/data/wanted"}) || !slices.Equal(plan.Vanished, []string{"s3://b/t/data/gone", "s3://b/t/data/lost"}) {
		t.Fatalf("unmark %v vanished %v", plan.Unmark, plan.Vanished)
	}
	// Exactly at the boundaries an object is old enough.
	p = newPlanner(rules, now, refsOf(), nil, []state.Mark{{Path: "s3://b/t/x", MarkedAt: now.Add(-10 * day)}})
	p.observe(obj("/t/x", 0))
	p.observe(obj("/t/y", 3*day))
	if plan := p.finish(); len(plan.Delete) != 1 || len(plan.Mark) != 1 {
		t.Fatalf("boundaries: %+v", plan)
	}
}

// Objects whose names storage may resolve elsewhere, and objects of other
// tables inside this one, are never marked; a mark an earlier version left
// on one is dropped. A required reference the listing lacks is reported.
func TestPlannerUnsafeAndOtherTables(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	rules := Rules{UnreferencedAge: 3 * day, NonCurrentAge: 10 * day}
	obj := func(p string) Object {
		return Object{Loc: loc{scheme: "s3", authority: "b", path: p}, Size: 10, LastModified: now.Add(-30 * day)}
	}
	exclude := []loc{{scheme: "s3", authority: "b", path: "/t/nested/"}}
	marks := []state.Mark{{Path: "s3://b/t/data/../x", MarkedAt: now.Add(-20 * day)}, {Path: "s3://b/t/nested/data/y", MarkedAt: now.Add(-20 * day)}}
	refs := refsOf("b/t/data/live", "b/t/data/gone")
	p := newPlanner(rules, now, refs, exclude, marks)
	for _, o := range []Object{
		obj("/t/data/live"),
		obj("/t/data/../x"),
		obj("/t//data/y"),
		obj("/t/./z"),
		obj("/t/data/dir/"),
		obj("/t/nested/data/y"),
		obj("/t/nestedness/old"), // a sibling sharing a string: this table's
	} {
		p.observe(o)
	}
	plan := p.finish()
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
