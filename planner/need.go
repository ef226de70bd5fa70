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
}

// needClass ranks why a table needs a run: one never evaluated or
// changed since is likely to have work; one due by the clock, the
// backstop or a heartbeat likely has none. A fire is of one job type, so
// a type the rule does not cover has all its tables in the last class,
// and only staleness orders them.
func needClass(n Need) int {
	switch n.Rule {
	case RuleFirst, RuleSnapshotChanged, RuleMetadataChanged, RuleSettingsChanged:
		return 0
	case RuleClock, RuleBackstop, NeedHeartbeat:
		return 1
	default:
		return 2
	}
}

// NeedOrder is the order in which a fire queues tables whose needs were
// polled: the indexes of those that need a run, first those never
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
