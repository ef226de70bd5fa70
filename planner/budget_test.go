package planner

import (
	"slices"
	"testing"
)

func TestRewriteAllowance(t *testing.T) {
	const gib = int64(1) << 30
	for _, tc := range []struct {
		name               string
		budget             RewriteBudget
		bucketUsed, daemon int64
		want               int64
		capped             bool
	}{
		{name: "unbounded", budget: RewriteBudget{SharePercent: 50}, bucketUsed: 5 * gib},
		{name: "bucket only, share bounds", budget: RewriteBudget{BucketBytesPerHour: 100 * gib, SharePercent: 25}, want: 25 * gib, capped: true},
		{name: "bucket only, little left", budget: RewriteBudget{BucketBytesPerHour: 100 * gib, SharePercent: 25}, bucketUsed: 90 * gib, want: 10 * gib, capped: true},
		{name: "over spent is zero, not negative", budget: RewriteBudget{BucketBytesPerHour: 100, SharePercent: 100}, bucketUsed: 150, want: 0, capped: true},
		{name: "daemon tighter than bucket", budget: RewriteBudget{BucketBytesPerHour: 100 * gib, DaemonBytesPerHour: 40 * gib, SharePercent: 100},
			bucketUsed: 10 * gib, daemon: 30 * gib, want: 10 * gib, capped: true},
		{name: "share of the smaller limit", budget: RewriteBudget{BucketBytesPerHour: 10 * gib, DaemonBytesPerHour: 100 * gib, SharePercent: 50},
			want: 5 * gib, capped: true},
		{name: "daemon only", budget: RewriteBudget{DaemonBytesPerHour: 8, SharePercent: 50}, daemon: 6, want: 2, capped: true},
		{name: "share out of range is the default", budget: RewriteBudget{BucketBytesPerHour: 1000, SharePercent: 0}, want: 250, capped: true},
		{name: "negative use counts as none", budget: RewriteBudget{BucketBytesPerHour: 1000, SharePercent: 100}, bucketUsed: -5, want: 1000, capped: true},
		{name: "huge limit does not overflow", budget: RewriteBudget{DaemonBytesPerHour: 1<<63 - 1, SharePercent: 100}, want: (1<<63 - 1) / 100 * 100, capped: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, capped := RewriteAllowance(tc.budget, tc.bucketUsed, tc.daemon)
			if capped != tc.capped || (capped && got != tc.want) {
				t.Fatalf("allowance %d capped %v, want %d %v", got, capped, tc.want, tc.capped)
			}
			if got < 0 {
				t.Fatalf("negative allowance %d", got)
			}
		})
	}
}

func TestWithinBudget(t *testing.T) {
	groups := []Group{{Partition: "a", InputBytes: 40}, {Partition: "b", InputBytes: 30}, {Partition: "c", InputBytes: 5}}
	names := func(gs []Group) (out []string) {
		for _, g := range gs {
			out = append(out, g.Partition)
		}
		return out
	}
	for _, tc := range []struct {
		budget         int64
		kept, deferred []string
	}{
		{budget: 0, deferred: []string{"a", "b", "c"}},
		// A group larger than what is left still runs when it is the
		// first: otherwise it would never run (an overdraft).
		{budget: 39, kept: []string{"a"}, deferred: []string{"b", "c"}},
		{budget: 1, kept: []string{"a"}, deferred: []string{"b", "c"}},
		{budget: 40, kept: []string{"a"}, deferred: []string{"b", "c"}},
		// c would fit beside a, but the plan's order is kept: b is next.
		{budget: 69, kept: []string{"a"}, deferred: []string{"b", "c"}},
		{budget: 75, kept: []string{"a", "b", "c"}},
		{budget: 1 << 40, kept: []string{"a", "b", "c"}},
	} {
		kept, deferred := WithinBudget(groups, tc.budget)
		if !slices.Equal(names(kept), tc.kept) || !slices.Equal(names(deferred), tc.deferred) {
			t.Errorf("budget %d: kept %v deferred %v, want %v and %v", tc.budget, names(kept), names(deferred), tc.kept, tc.deferred)
		}
		if GroupBytes(kept)+GroupBytes(deferred) != GroupBytes(groups) {
			t.Errorf("budget %d: bytes not conserved", tc.budget)
		}
		if GroupBytes(kept) > tc.budget && len(kept) > 1 {
			t.Errorf("budget %d: kept %d bytes", tc.budget, GroupBytes(kept))
		}
	}
	// Appending to the kept groups must not overwrite the deferred ones.
	kept, deferred := WithinBudget(groups, 40)
	_ = append(kept, Group{Partition: "x"})
	if deferred[0].Partition != "b" {
		t.Fatalf("kept shares its tail with deferred: %v", names(deferred))
	}
}
