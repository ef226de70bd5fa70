package planner

// Rewrite budgets: how many input bytes compaction may rewrite per hour,
// per bucket and for the whole daemon, and the share of that one run may
// take, so that one huge table cannot starve the rest. The state store
// keeps the ledger of what was rewritten; the arithmetic is here.

// DefaultTableSharePercent is the share of the smaller hourly bytes limit
// one run may take when the configuration names none.
const DefaultTableSharePercent = 25

// BudgetSpent is the reason of a run that rewrote nothing because its
// budget had no bytes left.
const BudgetSpent = "rewrite budget spent"

// RewriteBudget is the bytes budget that applies to one table: its
// bucket's hourly limit and the daemon's (0: unbounded), and the share
// of the smaller of the two one run may take.
type RewriteBudget struct {
	BucketBytesPerHour, DaemonBytesPerHour int64
	SharePercent                           int
}

// Bounded reports whether any hourly bytes limit applies.
func (b RewriteBudget) Bounded() bool { return b.BucketBytesPerHour > 0 || b.DaemonBytesPerHour > 0 }

// RewriteAllowance is how many input bytes a run may rewrite now, given
// what its bucket and the daemon rewrote in the last hour: the least of
// each bounded limit less what was used, and the share of the smaller
// limit (SharePercent outside 1–100 counts as the default). It is never
// negative; capped is false when no limit applies, and then allowance is
// meaningless.
func RewriteAllowance(b RewriteBudget, bucketUsed, daemonUsed int64) (allowance int64, capped bool) {
	if !b.Bounded() {
		return 0, false
	}
	allowance, smallest := int64(-1), int64(-1)
	for _, l := range []struct{ limit, used int64 }{{b.BucketBytesPerHour, bucketUsed}, {b.DaemonBytesPerHour, daemonUsed}} {
		if l.limit <= 0 {
			continue
		}
		if left := max(l.limit-max(l.used, 0), 0); allowance < 0 || left < allowance {
			allowance = left
		}
		if smallest < 0 || l.limit < smallest {
			smallest = l.limit
		}
	}
	share := b.SharePercent
	if share < 1 || share > 100 {
		share = DefaultTableSharePercent
	}
	// smallest/100*share would lose up to 99 bytes; smallest*share may
	// overflow only past 92 PB an hour, where the division first is exact
	// enough.
	perRun := smallest / 100 * int64(share)
	if smallest < (1<<63-1)/100 {
		perRun = smallest * int64(share) / 100
	}
	return min(allowance, perRun), true
}

// WithinBudget splits a plan's groups, in plan order, into those whose
// summed input bytes fit in budget and the rest, deferred to a later run.
// It stops at the first group that does not fit rather than skipping to
// smaller ones behind it: the plan's order is its priority, and the
// deferred groups are the next run's first. A budget of 0 keeps none.
//
// A run with any budget left always keeps its first group, even one
// larger than the budget: a group is the unit of a rewrite, and one
// larger than a run's share would otherwise never run, its table never
// compacted. The overdraft is written to the ledger like any rewrite, so
// the runs after it wait until the sliding hour has absorbed it; the
// hourly rate still holds on average.
func WithinBudget(groups []Group, budget int64) (kept, deferred []Group) {
	var sum int64
	for i, g := range groups {
		if sum+g.InputBytes > budget && (i > 0 || budget <= 0) {
			return groups[:i:i], groups[i:]
		}
		sum += g.InputBytes
	}
	return groups, nil
}

// GroupBytes is the summed input bytes of groups.
func GroupBytes(groups []Group) (n int64) {
	return CompactionPlan{Groups: groups}.InputBytes()
}
