package planner

import (
	"slices"
	"testing"
	"time"
)

func TestNeedOrder(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	unchanged := Need{Rule: RuleUnchanged, Skip: true, LastSuccess: t0}
	for _, tc := range []struct {
		name    string
		needs   []Need
		order   []int
		skipped int
	}{
		{name: "none", order: nil},
		{name: "all unchanged", needs: []Need{unchanged, unchanged}, skipped: 2},
		{name: "only the changed one", needs: []Need{unchanged, {Rule: RuleSnapshotChanged, LastSuccess: t0}, unchanged},
			order: []int{1}, skipped: 2},
		{name: "changed before backstop and clock",
			needs: []Need{
				{Rule: RuleBackstop, LastSuccess: t0.Add(-48 * time.Hour)},
				{Rule: RuleClock, LastSuccess: t0.Add(-time.Hour)},
				{Rule: RuleMetadataChanged, LastSuccess: t0},
				{Rule: RuleSettingsChanged, LastSuccess: t0.Add(-time.Hour)},
				{Rule: NeedHeartbeat, LastSuccess: t0.Add(-13 * time.Hour)},
			},
			order: []int{3, 2, 0, 4, 1}},
		{name: "never evaluated and never succeeded first",
			needs: []Need{
				{Rule: RuleSnapshotChanged, LastSuccess: t0.Add(-time.Hour)},
				{Rule: RuleFirst},
				{Rule: RuleSnapshotChanged, LastSuccess: t0.Add(-2 * time.Hour)},
			},
			order: []int{1, 2, 0}},
		{name: "a deadline first, the nearest first",
			needs: []Need{
				{Rule: RuleFirst},
				{Rule: RuleClock, LastSuccess: t0, Due: t0.Add(48 * time.Hour)},
				{Rule: RuleClock, LastSuccess: t0, Due: t0.Add(24 * time.Hour)},
				{Rule: RuleSnapshotChanged, LastSuccess: t0.Add(-time.Hour)},
			},
			order: []int{2, 1, 0, 3}},
		{name: "budget carry-over before changed",
			needs: []Need{
				{Rule: RuleFirst},
				{Rule: RuleSnapshotChanged, LastSuccess: t0, Deferred: 10},
				{Rule: RuleSnapshotChanged, LastSuccess: t0.Add(-time.Hour)},
				{Rule: RuleClock, LastSuccess: t0.Add(-time.Hour), Deferred: 1},
			},
			order: []int{3, 1, 0, 2}},
		{name: "carry-over of a type without the rule",
			needs: []Need{{}, {LastSuccess: t0, Deferred: 5}},
			order: []int{1, 0}},
		{name: "no rule: by staleness, ties in poll order",
			needs: []Need{{LastSuccess: t0}, {}, {LastSuccess: t0.Add(-time.Hour)}, {LastSuccess: t0}, {}},
			order: []int{1, 4, 2, 0, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			order, skipped := NeedOrder(tc.needs)
			if !slices.Equal(order, tc.order) || skipped != tc.skipped {
				t.Fatalf("order %v skipped %d, want %v and %d", order, skipped, tc.order, tc.skipped)
			}
		})
	}
}

func TestNeedReason(t *testing.T) {
	if r := (Need{Rule: RuleSnapshotChanged, Deferred: 3}).Reason(); r != NeedBudget {
		t.Fatalf("carried-over need's reason %q", r)
	}
	if r := (Need{Rule: RuleClock}).Reason(); r != RuleClock {
		t.Fatalf("reason %q, want the rule", r)
	}
}
