package orphan

import (
	"time"

	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// Rules are the removal settings, resolved: the ages the planner decides
// by, and what only the executor applies.
type Rules struct {
	planner.RemovalRules
	Equivalence Equivalence // schemes that name the same storage
	MaxDeletes  int         // deletions per run at most
	// AllowNested runs removal on a table whose location holds other
	// tables, leaving their prefixes alone; without it such a table fails.
	AllowNested bool
}

// RulesOf picks unreferenced file removal's rules out of a table's settings.
func RulesOf(s maintenance.Settings) Rules {
	c := s.For(maintenance.UnreferencedFileRemoval).Removal()
	r := Rules{
		RemovalRules: planner.RemovalRules{
			UnreferencedAge: time.Duration(*c.UnreferencedDays) * 24 * time.Hour,
			NonCurrentAge:   time.Duration(*c.NonCurrentDays) * 24 * time.Hour,
		},
		Equivalence: Equivalence(s.Knobs.SchemeEquivalence),
		MaxDeletes:  s.Knobs.MaxDeletesPerRun,
		AllowNested: s.Knobs.AllowNestedTables,
	}
	if r.MaxDeletes <= 0 {
		r.MaxDeletes = DefaultMaxDeletesPerRun
	}
	return r
}
