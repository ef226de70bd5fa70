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
		rs.hashes = append(rs.hashes, maphash.String(rs.seed, k))
	}
	slices.Sort(rs.hashes)
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
	p := newPlanner(rules, now, refsOf("b/t/data/live", "b/t/data/back", "b/t/data/wanted"), marks)
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
	p = newPlanner(rules, now, refsOf(), []state.Mark{{Path: "s3://b/t/x", MarkedAt: now.Add(-10 * day)}})
	p.observe(obj("/t/x", 0))
	p.observe(obj("/t/y", 3*day))
	if plan := p.finish(); len(plan.Delete) != 1 || len(plan.Mark) != 1 {
		t.Fatalf("boundaries: %+v", plan)
	}
}
