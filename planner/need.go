package planner

import (
	"cmp"
	"slices"
	"time"
)

// NeedHeartbeat is the rule of a table the unchanged rule would skip, but
// whose last successful run is half the backstop old: a run, which skips,
// records a success, so that a table left alone because nothing changed
// still shows, well within the backstop, that it is looked after.
const NeedHeartbeat = "run: last success half the backstop old"

// Need is what a scheduler's cheap look at one table before a fire found,
// for NeedOrder: the unchanged rule's verdict where the job type has one.
type Need struct {
	// Rule is the unchanged rule's verdict (one of the Rule names); ""
	// for a job type the rule does not cover, which always needs a run.
	Rule string
	// Skip is the rule's verdict that a run would only skip.
	Skip bool
	// LastSuccess is when the job last succeeded on the table (zero:
	// never).
	LastSuccess time.Time
	// Deferred is the bytes the table's last run left undone for its
	// rewrite budget (0: none): that work is taken first at the next
	// fire, before any table's new work.
	Deferred int64
	// Estimate is the bytes the table's next run is expected to rewrite,
	// when the last run's figures say (the deferred bytes, or its plan's
	// input); 0 when unknown. It is shown, never used to order.
	Estimate int64
	// Due is when the oldest work must be done (zero: none): the
	// deadline of what the last run left, for a job type with deadlines
	// (erasure), or the oldest work not taken plus the table's freshness
	// target.
	Due time.Time
	// Target is the table's freshness target (0: none).
	Target time.Duration
}

// NeedBudget is the reason shown for a table queued first because its
// last run deferred work for its rewrite budget.
const NeedBudget = "budget carry-over"

// Reason is why the table is queued: NeedBudget for carried-over work,
// else the unchanged rule's verdict ("" where the rule does not apply).
func (n Need) Reason() string {
	if n.Deferred > 0 {
		return NeedBudget
	}
	return n.Rule
}

// needClass ranks why a table needs a run: work a budget deferred
// comes first, since it was due already at an earlier fire; then one never evaluated or
// changed since is likely to have work; one due by the clock, the
// backstop or a heartbeat likely has none. A fire is of one job type, so
// a type the rule does not cover has all its tables in the last class,
// and only staleness orders them.
func needClass(n Need) int {
	if n.Deferred > 0 {
		return 0
	}
	switch n.Rule {
	case RuleFirst, RuleSnapshotChanged, RuleMetadataChanged, RuleSettingsChanged:
		return 1
	case RuleClock, RuleBackstop, NeedHeartbeat:
		return 2
	default:
		return 3
	}
}

// NeedOrder is the order in which a fire queues tables whose needs were
// polled: the indexes of those that need a run, first those with a
// deadline, the nearest first, then those whose last
// run deferred work for its budget, then those never
// evaluated or changed since their last evaluation, then those due by the
// clock or the backstop, each by staleness (never succeeded first, then
// the oldest success); ties keep the poll order. skipped counts those left
// out because a run would only skip.
func NeedOrder(needs []Need) (order []int, skipped int) {
	for i, n := range needs {
		if n.Skip {
			skipped++
			continue
		}
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		na, nb := needs[a], needs[b]
		// A deadline comes before any other reason, the nearest first.
		switch da, db := na.Due.IsZero(), nb.Due.IsZero(); {
		case !da && !db:
			if c := na.Due.Compare(nb.Due); c != 0 {
				return c
			}
		case !da:
			return -1
		case !db:
			return 1
		}
		if c := cmp.Compare(needClass(na), needClass(nb)); c != 0 {
			return c
		}
		switch za, zb := na.LastSuccess.IsZero(), nb.LastSuccess.IsZero(); {
		case za && zb:
			return 0
		case za:
			return -1
		case zb:
			return 1
		}
		return na.LastSuccess.Compare(nb.LastSuccess)
	})
	return order, skipped
}
